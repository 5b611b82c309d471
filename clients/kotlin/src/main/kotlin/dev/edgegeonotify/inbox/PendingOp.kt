package dev.edgegeonotify.inbox

import org.json.JSONException
import org.json.JSONObject

/** An optimistic operation the server has not yet confirmed. */
sealed class PendingOp {
    abstract val id: String
    abstract val idempotencyKey: String

    /** Counts generation when the operation was created (see [InboxStore.confirm]). */
    internal var generation: Long = 0

    data class Mark(override val id: String, val itemKey: String, val flag: Flag, val value: Boolean, override val idempotencyKey: String) : PendingOp()
    data class Bulk(override val id: String, val action: BulkAction, val category: String?, override val idempotencyKey: String) : PendingOp()
    data class Delete(override val id: String, val itemKey: String, override val idempotencyKey: String) : PendingOp()

    fun toJson(): JSONObject = when (this) {
        is Mark -> JSONObject().put("id", id).put("kind", "mark").put("itemKey", itemKey).put("flag", flag.wire).put("value", value)
        is Bulk -> JSONObject().put("id", id).put("kind", "bulk").put("action", action.wire).put("category", category.orJsonNull())
        is Delete -> JSONObject().put("id", id).put("kind", "delete").put("itemKey", itemKey)
    }.put("idempotencyKey", idempotencyKey)

    companion object {
        fun fromJson(m: JSONObject): PendingOp {
            val id = m.str("id")
            val key = m.strOrNull("idempotencyKey") ?: id
            return when (val kind = m.str("kind")) {
                "mark" -> Mark(id, m.str("itemKey"), Flag.of(m.str("flag")), m.boolOr("value", true), key)
                "bulk" -> Bulk(id, BulkAction.of(m.str("action")), m.strOrNull("category"), key)
                "delete" -> Delete(id, m.str("itemKey"), key)
                else -> throw JSONException("unknown operation kind '$kind'")
            }
        }
    }
}
