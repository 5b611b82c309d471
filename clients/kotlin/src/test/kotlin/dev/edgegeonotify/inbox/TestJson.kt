package dev.edgegeonotify.inbox

import org.json.JSONArray
import org.json.JSONObject

/** org.json trees as plain Kotlin values (maps, lists, Long, Double, String, Boolean, null),
 *  for assertEquals in tests. */
internal fun plain(v: Any?): Any? = when (v) {
    null, JSONObject.NULL -> null
    is JSONObject -> LinkedHashMap<String, Any?>().also { m -> v.keyList().forEach { m[it] = plain(v.opt(it)) } }
    is JSONArray -> List(v.length()) { plain(v.opt(it)) }
    is Int -> v.toLong()
    else -> v
}

/** Plain Kotlin values as org.json trees (maps and lists nest). */
internal fun org(v: Any?): Any = when (v) {
    null -> JSONObject.NULL
    is Map<*, *> -> JSONObject().also { o -> v.forEach { (k, x) -> o.put(k.toString(), org(x)) } }
    is Iterable<*> -> JSONArray().also { a -> v.forEach { a.put(org(it)) } }
    else -> v
}

/** JSON text of plain Kotlin values. */
internal fun jsonText(v: Any?): String = org(v).let { if (it is String) JSONObject.quote(it) else it.toString() }

@Suppress("UNCHECKED_CAST")
internal fun Any?.asObj(): Map<String, Any?> = this as? Map<String, Any?> ?: throw AssertionError("expected an object, got $this")

internal fun Map<String, Any?>.obj(k: String): Map<String, Any?> = this[k].asObj()

internal fun Map<String, Any?>.list(k: String): List<Any?> = this[k] as? List<Any?> ?: throw AssertionError("field '$k' must be an array")
