package dev.edgegeonotify.inbox

import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import org.json.JSONException
import org.json.JSONObject
import java.util.Base64

/**
 * The one token HTTP and the WebSocket share. The app's `getToken(refresh)` is asked with
 * `refresh = false` when there is none or the cached one is within 30 s of its `exp`, and with
 * `refresh = true` only after the server refused it (a 401, or a 4001 close): a refresh at an
 * identity provider is slow and rate-limited, so a reconnect never forces one.
 */
internal class TokenCache(private val getToken: suspend (refresh: Boolean) -> String, private val clock: InboxClock) {
    private val lock = Mutex()

    @Volatile
    private var token: String? = null

    suspend fun current(): String = lock.withLock {
        token?.takeUnless { nearExpiry(it) } ?: getToken(false).also { token = it }
    }

    /** [stale] was refused: a fresh token, asked once however many requests saw the refusal
     *  (a caller whose [stale] was already replaced gets the replacement). */
    suspend fun refresh(stale: String): String = lock.withLock {
        token?.takeIf { it != stale } ?: getToken(true).also { token = it }
    }

    private fun nearExpiry(t: String): Boolean {
        val exp = jwtExpMs(t) ?: return false
        return exp - clock.nowMs() < 30_000
    }
}

/** The `exp` of a JWT in ms, or null (not a JWT, or no `exp`: then the token is kept). */
internal fun jwtExpMs(token: String): Long? = try {
    val claims = JSONObject(String(Base64.getUrlDecoder().decode(token.split('.')[1].trimEnd('=')), Charsets.UTF_8))
    (claims.opt("exp") as? Number)?.let { (it.toDouble() * 1000).toLong() }
} catch (e: IndexOutOfBoundsException) {
    null
} catch (e: IllegalArgumentException) {
    null
} catch (e: JSONException) {
    null
}
