package dev.edgegeonotify.inbox

import org.json.JSONArray
import org.json.JSONException
import org.json.JSONObject

/*
 * Typed request and response bodies of every route the client calls. Field names and required
 * fields are checked against the worker's /openapi.json by ContractTest (see [Contract]), so a
 * contract change fails the Kotlin build instead of a phone.
 */

/** One sender of a merged item (`Origin`). */
data class Origin(
    val senderId: String,
    val name: String,
    val createdTimeMsec: Long,
    val avatar: String? = null,
    val landing: String? = null,
) {
    fun toJson(): JSONObject = JSONObject().apply {
        put("senderId", senderId)
        put("name", name)
        avatar?.let { put("avatar", it) }
        landing?.let { put("landing", it) }
        put("createdTimeMsec", createdTimeMsec)
    }

    companion object {
        fun fromJson(m: JSONObject) = Origin(
            senderId = m.str("senderId"),
            name = m.str("name"),
            createdTimeMsec = m.long("createdTimeMsec"),
            avatar = m.strOrNull("avatar"),
            landing = m.strOrNull("landing"),
        )
    }
}

/** One inbox item (`Notification`), as list pages and the change feed send it. */
data class Notification(
    val notificationId: String,
    val itemKey: String,
    val serviceType: String,
    val categoryType: String,
    val notificationType: String,
    val templateType: String,
    val createdTimeMsec: Long,
    val expireAtMsec: Long,
    val revision: Long,
    val originsCount: Long,
    val origins: List<Origin>,
    val read: Boolean,
    val seen: Boolean,
    val archived: Boolean,
    val landing: String?,
    val messageArguments: Map<String, String>,
    val summary: String?,
    /** `originsCount` is exact; false only on a server without Redis once the cap dropped a sender (an upper bound). */
    val originsCountExact: Boolean = true,
) {
    fun toJson(): JSONObject = JSONObject().apply {
        put("notificationId", notificationId)
        put("itemKey", itemKey)
        put("serviceType", serviceType)
        put("categoryType", categoryType)
        put("notificationType", notificationType)
        put("templateType", templateType)
        put("createdTimeMsec", createdTimeMsec)
        put("expireAtMsec", expireAtMsec)
        put("revision", revision)
        put("originsCount", originsCount)
        put("originsCountExact", originsCountExact)
        put("origins", JSONArray().also { a -> origins.forEach { a.put(it.toJson()) } })
        put("read", read)
        put("seen", seen)
        put("archived", archived)
        put("landing", landing.orJsonNull())
        put("messageArguments", JSONObject().also { o -> messageArguments.forEach { (k, v) -> o.put(k, v) } })
        put("summary", summary.orJsonNull())
    }

    /** This item with one flag set to [value]. */
    fun withFlag(flag: Flag, value: Boolean): Notification = when (flag) {
        Flag.READ -> copy(read = value)
        Flag.SEEN -> copy(seen = value)
        Flag.ARCHIVED -> copy(archived = value)
    }

    fun flag(flag: Flag): Boolean = when (flag) {
        Flag.READ -> read
        Flag.SEEN -> seen
        Flag.ARCHIVED -> archived
    }

    companion object {
        fun fromJson(m: JSONObject) = Notification(
            notificationId = m.str("notificationId"),
            itemKey = m.str("itemKey"),
            serviceType = m.str("serviceType"),
            categoryType = m.str("categoryType"),
            notificationType = m.str("notificationType"),
            templateType = m.str("templateType"),
            createdTimeMsec = m.long("createdTimeMsec"),
            expireAtMsec = m.long("expireAtMsec"),
            revision = m.long("revision"),
            originsCount = m.long("originsCount"),
            origins = m.arr("origins").objects().map { Origin.fromJson(it) },
            read = m.bool("read"),
            seen = m.bool("seen"),
            archived = m.bool("archived"),
            landing = m.strOrNull("landing"),
            messageArguments = m.obj("messageArguments").let { a -> a.keyList().associateWith { a.get(it).toString() } },
            summary = m.strOrNull("summary"),
            // Absent in a store persisted before the field existed.
            originsCountExact = m.boolOr("originsCountExact", true),
        )
    }
}

/** `{unread, unseen}`: the badge over the whole unarchived inbox (`Counts`). */
data class Counts(val unread: Long, val unseen: Long) {
    fun toJson(): JSONObject = JSONObject().put("unread", unread).put("unseen", unseen)

    companion object {
        val ZERO = Counts(0, 0)
        fun fromJson(m: JSONObject) = Counts(m.long("unread"), m.long("unseen"))
    }
}

/** `GET /v1/notifications` (`Page`). */
data class Page(
    val items: List<Notification>,
    val nextCursor: String?,
    val counts: Counts?,
    val sync: String,
) {
    fun toJson(): JSONObject = JSONObject().apply {
        put("items", JSONArray().also { a -> items.forEach { a.put(it.toJson()) } })
        put("nextCursor", nextCursor.orJsonNull())
        counts?.let { put("counts", it.toJson()) }
        put("sync", sync)
    }

    companion object {
        fun fromJson(m: JSONObject) = Page(
            items = m.arr("items").objects().map { Notification.fromJson(it) },
            nextCursor = m.strOrNull("nextCursor"),
            counts = m.objOrNull("counts")?.let { Counts.fromJson(it) },
            sync = m.str("sync"),
        )
    }
}

/** One entry of the change feed: a full item, or a tombstone (`Tombstone`). */
sealed class Change {
    abstract val itemKey: String

    data class Upsert(val item: Notification) : Change() {
        override val itemKey get() = item.itemKey
    }

    data class Tombstone(override val itemKey: String) : Change()

    fun toJson(): JSONObject = when (this) {
        is Upsert -> item.toJson()
        is Tombstone -> JSONObject().put("itemKey", itemKey).put("deleted", true)
    }

    companion object {
        fun fromJson(m: JSONObject): Change =
            if (m.opt("deleted") == true) Tombstone(m.str("itemKey")) else Upsert(Notification.fromJson(m))
    }
}

/** `GET /v1/notifications/changes`. */
data class Changes(val items: List<Change>, val sync: String, val hasMore: Boolean) {
    fun toJson(): JSONObject = JSONObject()
        .put("items", JSONArray().also { a -> items.forEach { a.put(it.toJson()) } })
        .put("sync", sync).put("hasMore", hasMore)

    companion object {
        fun fromJson(m: JSONObject) = Changes(
            items = m.arr("items").objects().map { Change.fromJson(it) },
            sync = m.str("sync"),
            hasMore = m.bool("hasMore"),
        )
    }
}

/** Reconnect advice carried by every badge push (`ReconnectHint`). */
data class ReconnectHint(val baseMs: Long, val maxMs: Long, val jitter: String) {
    companion object {
        /** The only `jitter` the server sends (the schema's enum, checked by ContractTest). */
        const val FULL = "full"
        val DEFAULT = ReconnectHint(1_000, 30_000, FULL)
        fun fromJson(m: JSONObject) = ReconnectHint(m.long("baseMs"), m.long("maxMs"), m.strOrNull("jitter") ?: FULL)
    }
}

/** A WebSocket push (`BadgeMessage`): `{type: "badge", unread, unseen, sync, reconnect}`. */
data class Badge(val unread: Long, val unseen: Long, val sync: String, val reconnect: ReconnectHint?) {
    val counts get() = Counts(unread, unseen)

    companion object {
        /** The message's `type` (the schema's enum, checked by ContractTest). */
        const val TYPE = "badge"

        /** Null for a message of another type (the protocol may grow). */
        fun fromJson(m: JSONObject): Badge? {
            if (m.opt("type") != TYPE) return null
            return Badge(
                unread = m.long("unread"),
                unseen = m.long("unseen"),
                sync = m.str("sync"),
                reconnect = m.objOrNull("reconnect")?.let { ReconnectHint.fromJson(it) },
            )
        }
    }
}

/** A per-item flag of `POST /v1/notifications/mark`. */
enum class Flag(val wire: String) {
    READ("read"), SEEN("seen"), ARCHIVED("archived");

    companion object {
        fun of(wire: String): Flag = entries.firstOrNull { it.wire == wire }
            ?: throw IllegalArgumentException("unknown flag '$wire'")
    }
}

/** A bulk action of `POST /v1/notifications/bulk`. */
enum class BulkAction(val wire: String) {
    READ("read"), SEEN("seen"), ARCHIVE_READ("archiveRead"), DELETE("delete");

    companion object {
        fun of(wire: String): BulkAction = entries.firstOrNull { it.wire == wire }
            ?: throw IllegalArgumentException("unknown bulk action '$wire'")
    }
}

/** `POST /v1/notifications/mark` body: exactly one of [itemKey] or [all]. */
data class MarkRequest(val itemKey: String?, val all: Boolean, val flag: Flag, val value: Boolean = true) {
    init {
        require((itemKey != null) != all) { "exactly one of itemKey or all" }
    }

    fun toJson(): JSONObject = JSONObject().apply {
        if (itemKey != null) put("itemKey", itemKey) else put("all", true)
        put("flag", flag.wire)
        put("value", value)
    }

    companion object {
        fun fromJson(m: JSONObject) = MarkRequest(
            itemKey = m.strOrNull("itemKey"),
            all = m.opt("all") == true,
            flag = Flag.of(m.str("flag")),
            value = m.boolOr("value", true),
        )
    }
}

/** `POST /v1/notifications/bulk` body. */
data class BulkRequest(val action: BulkAction, val category: String? = null) {
    fun toJson(): JSONObject = JSONObject().apply {
        put("action", action.wire)
        category?.let { put("category", it) }
    }

    companion object {
        fun fromJson(m: JSONObject) = BulkRequest(BulkAction.of(m.str("action")), m.strOrNull("category"))
    }
}

/** The answer of mark and bulk: `{updated}`. */
data class Updated(val updated: Long) {
    companion object {
        fun fromJson(m: JSONObject) = Updated(m.long("updated"))
    }
}

/** The answer of `DELETE /v1/notifications/items/{itemKey}`: `{deleted: true}`. */
data class Deleted(val deleted: Boolean) {
    companion object {
        fun fromJson(m: JSONObject) = Deleted(m.bool("deleted"))
    }
}

/** Every 4xx/5xx body: `{"error":{"code","message"}}`. */
data class ErrorBody(val code: String, val message: String) {
    companion object {
        fun fromJsonOrNull(text: String): ErrorBody? = try {
            val e = parseObject(text).obj("error")
            ErrorBody(e.str("code"), e.str("message"))
        } catch (e: JSONException) {
            null
        }
    }
}

/**
 * Where each model lives in the OpenAPI document and which fields it declares, for the contract
 * test. `schema` is a path of keys from the document root; `required` are the fields this client
 * cannot do without (they must be required by the server too); `fields` every field it reads or
 * writes (each must exist in the schema).
 */
object Contract {
    data class Model(val name: String, val schema: List<String>, val fields: Set<String>, val required: Set<String>)

    private fun response(path: String, method: String, status: String = "200") =
        listOf("paths", path, method, "responses", status, "content", "application/json", "schema")

    private fun request(path: String, method: String) =
        listOf("paths", path, method, "requestBody", "content", "application/json", "schema")

    val models = listOf(
        Model(
            "Origin", listOf("components", "schemas", "Origin"),
            setOf("senderId", "name", "avatar", "landing", "createdTimeMsec"),
            setOf("senderId", "name", "createdTimeMsec"),
        ),
        Model(
            "Notification", listOf("components", "schemas", "Notification"),
            setOf(
                "notificationId", "itemKey", "serviceType", "categoryType", "notificationType", "templateType",
                "createdTimeMsec", "expireAtMsec", "revision", "originsCount", "originsCountExact", "origins", "read", "seen", "archived",
                "landing", "messageArguments", "summary",
            ),
            setOf(
                "notificationId", "itemKey", "serviceType", "categoryType", "notificationType", "templateType",
                "createdTimeMsec", "expireAtMsec", "revision", "originsCount", "originsCountExact", "origins", "read", "seen", "archived",
                "landing", "messageArguments", "summary",
            ),
        ),
        Model("Counts", listOf("components", "schemas", "Counts"), setOf("unread", "unseen"), setOf("unread", "unseen")),
        Model("Page", listOf("components", "schemas", "Page"), setOf("items", "nextCursor", "counts", "sync"), setOf("items", "nextCursor", "sync")),
        Model("Tombstone", listOf("components", "schemas", "Tombstone"), setOf("itemKey", "deleted"), setOf("itemKey", "deleted")),
        Model("Changes", response("/v1/notifications/changes", "get"), setOf("items", "sync", "hasMore"), setOf("items", "sync", "hasMore")),
        Model("UnreadCount", response("/v1/notifications/unread-count", "get"), setOf("unread", "unseen"), setOf("unread", "unseen")),
        Model("MarkRequest", request("/v1/notifications/mark", "post"), setOf("itemKey", "all", "flag", "value"), setOf("flag")),
        Model("MarkAnswer", response("/v1/notifications/mark", "post"), setOf("updated"), setOf("updated")),
        Model("BulkRequest", request("/v1/notifications/bulk", "post"), setOf("action", "category"), setOf("action")),
        Model("BulkAnswer", response("/v1/notifications/bulk", "post"), setOf("updated"), setOf("updated")),
        Model("DeleteAnswer", response("/v1/notifications/items/{itemKey}", "delete"), setOf("deleted"), setOf("deleted")),
        Model("Error", listOf("components", "schemas", "Error"), setOf("error"), setOf("error")),
        // The WebSocket push. The server requires every field; the client reads a push without
        // `reconnect` (or `jitter`) too, keeping its configured backoff.
        Model(
            "Badge", listOf("components", "schemas", "BadgeMessage"),
            setOf("type", "unread", "unseen", "sync", "reconnect"), setOf("type", "unread", "unseen", "sync", "reconnect"),
        ),
        Model(
            "ReconnectHint", listOf("components", "schemas", "ReconnectHint"),
            setOf("baseMs", "maxMs", "jitter"), setOf("baseMs", "maxMs", "jitter"),
        ),
        // Geo (Geo.kt). `timeZone(s)` is optional: `fields=country` leaves it out.
        Model("Country", listOf("components", "schemas", "Country"), setOf("alpha2", "alpha3"), setOf("alpha2", "alpha3")),
        Model("PointResult", response("/v1/geo/country", "get"), setOf("lat", "lon", "country", "timeZone"), setOf("lat", "lon", "country")),
        Model("CountryResults", response("/v1/geo/country", "post"), setOf("results", "timeZones"), setOf("results")),
        Model("PointsBody", request("/v1/geo/country", "post"), setOf("points"), setOf("points")),
        Model(
            "Me", response("/v1/geo/me", "get"),
            setOf("cf_country", "ip", "coordinates", "cf_timezone", "time_zone", "agree", "sources", "ipdb"),
            setOf("cf_country", "ip", "coordinates", "cf_timezone", "time_zone", "agree", "sources", "ipdb"),
        ),
        Model("TimeZoneAnswer", listOf("components", "schemas", "TimeZoneAnswer"), setOf("name", "source"), setOf("name", "source")),
        Model("IpResult", listOf("components", "schemas", "IpResult"), setOf("ip", "country", "reason"), setOf("ip", "country", "reason")),
        Model("Ipdb", listOf("components", "schemas", "Ipdb"), setOf("version", "source", "attribution"), setOf("version", "source", "attribution")),
        Model("Attribution", listOf("components", "schemas", "Attribution"), setOf("text", "url", "license"), setOf("text", "url", "license")),
    )

    /** The `source` values of the caller's zone, checked against the schema's `const`s. */
    val timeZoneSources = TimeZoneSource.entries.map { it.wire }.toSet()

    /** The geo `fields` the client sends: each must be a property of the single-point answer. */
    val geoFields = GeoField.entries.map { it.wire }.toSet()

    /** The badge push's `type` and reconnect `jitter`, checked against the schema's `enum`s. */
    val badgeType = setOf(Badge.TYPE)
    val jitterValues = setOf(ReconnectHint.FULL)

    /** Enum values the client sends, checked against the schema's `enum`. */
    val flagValues = Flag.entries.map { it.wire }.toSet()
    val bulkValues = BulkAction.entries.map { it.wire }.toSet()
}
