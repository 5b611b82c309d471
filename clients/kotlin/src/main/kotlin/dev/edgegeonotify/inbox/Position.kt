package dev.edgegeonotify.inbox

import org.json.JSONArray
import org.json.JSONException
import java.util.Base64

/**
 * Change-feed positions (`sync` of pages, changes and badges). Opaque to apps; the store
 * compares them: base64url (no padding) of the JSON array `[ms, id]`, ordered by `ms`, then `id`
 * (byte order). `null` is older than every position; a position that does not decode is never
 * "older" (clients/conformance/README.md, "Positions").
 */
object Position {
    private class Decoded(val ms: Long, val id: String)

    /** base64url, padding optional (java.util.Base64: Android API 26). */
    internal fun base64UrlDecode(s: String): ByteArray = Base64.getUrlDecoder().decode(s.trimEnd('='))

    /** `[revision, notificationId]` of a list cursor (the same encoding), or null. */
    internal fun decodeCursor(s: String): Pair<Long, String>? = decode(s)?.let { it.ms to it.id }

    internal fun bytesBefore(a: String, b: String) = compareBytes(a, b) < 0

    private fun decode(s: String): Decoded? = try {
        val arr = JSONArray(String(base64UrlDecode(s), Charsets.UTF_8))
        val ms = arr.opt(0)
        val id = arr.opt(1)
        if (arr.length() == 2 && (ms is Int || ms is Long) && id is String) Decoded((ms as Number).toLong(), id) else null
    } catch (e: IllegalArgumentException) {
        null
    } catch (e: JSONException) {
        null
    }

    private fun compareBytes(a: String, b: String): Int {
        val x = a.toByteArray(Charsets.UTF_8)
        val y = b.toByteArray(Charsets.UTF_8)
        for (i in 0 until minOf(x.size, y.size)) {
            val c = (x[i].toInt() and 0xff) - (y[i].toInt() and 0xff)
            if (c != 0) return c
        }
        return x.size - y.size
    }

    /** True when [a] is strictly older than [b]; false whenever [a] does not decode. */
    fun isOlder(a: String?, b: String?): Boolean {
        if (b == null) return false
        val db = decode(b) ?: return false
        if (a == null) return true
        val da = decode(a) ?: return false
        return da.ms < db.ms || (da.ms == db.ms && compareBytes(da.id, db.id) < 0)
    }

    /** The newer of [a] and [b]; [b] (the one just received) when either does not decode. */
    fun max(a: String?, b: String?): String? {
        if (a == null) return b
        if (b == null) return a
        if (decode(a) == null || decode(b) == null) return b
        return if (isOlder(a, b)) b else a
    }
}
