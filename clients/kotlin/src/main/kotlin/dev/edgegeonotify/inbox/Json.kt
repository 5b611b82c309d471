package dev.edgegeonotify.inbox

import org.json.JSONArray
import org.json.JSONException
import org.json.JSONObject
import org.json.JSONStringer

/*
 * JSON through org.json: part of Android itself (so the library adds nothing to an app) and, for
 * the JVM build here, Debian's libandroid-json-java (the same implementation). Only the API
 * Android has had since API 1 is used: no keySet(), toMap() or optLong(k, null).
 *
 * These helpers make a missing or mistyped field a [JSONException] (Android's getString()
 * would turn a number into a string; a field of the wrong type is a broken answer here).
 */

internal fun JSONObject.str(k: String): String =
    opt(k) as? String ?: throw JSONException("field '$k' must be a string")

internal fun JSONObject.strOrNull(k: String): String? = opt(k) as? String

internal fun JSONObject.long(k: String): Long = when (val v = opt(k)) {
    is Int -> v.toLong()
    is Long -> v
    is Double -> if (v % 1.0 == 0.0) v.toLong() else throw JSONException("field '$k' must be an integer")
    else -> throw JSONException("field '$k' must be a number")
}

internal fun JSONObject.bool(k: String): Boolean =
    opt(k) as? Boolean ?: throw JSONException("field '$k' must be a boolean")

internal fun JSONObject.boolOr(k: String, default: Boolean): Boolean = opt(k) as? Boolean ?: default

internal fun JSONObject.obj(k: String): JSONObject =
    opt(k) as? JSONObject ?: throw JSONException("field '$k' must be an object")

internal fun JSONObject.objOrNull(k: String): JSONObject? = opt(k) as? JSONObject

internal fun JSONObject.arr(k: String): JSONArray =
    opt(k) as? JSONArray ?: throw JSONException("field '$k' must be an array")

internal fun JSONArray.objects(): List<JSONObject> =
    List(length()) { i -> opt(i) as? JSONObject ?: throw JSONException("element $i must be an object") }

/** The keys of [o] (Android's JSONObject has `keys()`, not `keySet()`). */
internal fun JSONObject.keyList(): List<String> = keys().asSequence().toList()

/** Parses an object; [JSONException] when [text] is not one. */
internal fun parseObject(text: String): JSONObject = JSONObject(text)

/** `null` as org.json wants it in a container. */
internal fun Any?.orJsonNull(): Any = this ?: JSONObject.NULL

/** Writes an object with its keys in the order given (JSONObject's own order is unspecified). */
internal fun writeObject(vararg fields: Pair<String, Any?>): String {
    val w = JSONStringer().`object`()
    for ((k, v) in fields) w.key(k).value(v.orJsonNull())
    return w.endObject().toString()
}
