package dev.edgegeonotify.inbox

import java.util.TreeMap

/**
 * Change-feed positions (`sync` of pages, changes and badges). Opaque to apps; the store
 * compares them: base64url (no padding) of the JSON array `[ms, id]`, ordered by `ms`, then `id`
 * (byte order). `null` is older than every position; a position that does not decode is never
 * "older" (clients/conformance/README.md, "Positions").
 */
object Position {
    private class Decoded(val ms: Long, val id: String)

    private const val ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /** base64url without padding (java.util.Base64 needs Android API 26; this needs nothing). */
    internal fun base64UrlDecode(s: String): ByteArray {
        val t = s.trimEnd('=')
        val out = java.io.ByteArrayOutputStream(t.length * 3 / 4)
        var acc = 0
        var bits = 0
        for (c in t) {
            val v = ALPHABET.indexOf(c)
            if (v < 0) throw IllegalArgumentException("not base64url")
            acc = (acc shl 6) or v
            bits += 6
            if (bits >= 8) {
                bits -= 8
                out.write((acc shr bits) and 0xff)
            }
        }
        if (bits >= 6) throw IllegalArgumentException("truncated base64url")
        return out.toByteArray()
    }

    /** `[revision, notificationId]` of a list cursor (the same encoding), or null. */
    internal fun decodeCursor(s: String): Pair<Long, String>? = decode(s)?.let { it.ms to it.id }

    internal fun bytesBefore(a: String, b: String) = compareBytes(a, b) < 0

    private fun decode(s: String): Decoded? = try {
        val arr = Json.parse(String(base64UrlDecode(s), Charsets.UTF_8)) as? List<*>
        val ms = arr?.getOrNull(0)
        val id = arr?.getOrNull(1)
        if (arr != null && arr.size == 2 && ms is Long && id is String) Decoded(ms, id) else null
    } catch (e: IllegalArgumentException) {
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

/** An optimistic operation the server has not yet confirmed. */
sealed class PendingOp {
    abstract val id: String
    abstract val idempotencyKey: String

    /** Counts generation when the operation was created (see [InboxStore.confirm]). */
    internal var generation: Long = 0

    data class Mark(override val id: String, val itemKey: String, val flag: Flag, val value: Boolean, override val idempotencyKey: String) : PendingOp()
    data class Bulk(override val id: String, val action: BulkAction, val category: String?, override val idempotencyKey: String) : PendingOp()
    data class Delete(override val id: String, val itemKey: String, override val idempotencyKey: String) : PendingOp()

    fun toJson(): Map<String, Any?> = when (this) {
        is Mark -> linkedMapOf("id" to id, "kind" to "mark", "itemKey" to itemKey, "flag" to flag.wire, "value" to value, "idempotencyKey" to idempotencyKey)
        is Bulk -> linkedMapOf("id" to id, "kind" to "bulk", "action" to action.wire, "category" to category, "idempotencyKey" to idempotencyKey)
        is Delete -> linkedMapOf("id" to id, "kind" to "delete", "itemKey" to itemKey, "idempotencyKey" to idempotencyKey)
    }

    companion object {
        fun fromJson(m: Map<String, Any?>): PendingOp {
            val id = m.str("id")
            val key = m.strOrNull("idempotencyKey") ?: id
            return when (val kind = m.str("kind")) {
                "mark" -> Mark(id, m.str("itemKey"), Flag.of(m.str("flag")), m["value"] as? Boolean ?: true, key)
                "bulk" -> Bulk(id, BulkAction.of(m.str("action")), m.strOrNull("category"), key)
                "delete" -> Delete(id, m.str("itemKey"), key)
                else -> throw Json.ParseException("unknown operation kind '$kind'")
            }
        }
    }
}

/** What an app sees: the server's inbox with the pending operations applied on top. */
data class InboxView(
    /** The inbox (archived items excluded), newest first: `revision` desc, then `notificationId` desc. */
    val items: List<Notification>,
    /** `{unread, unseen}` as shown (server counts + pending optimistic effects). */
    val counts: Counts,
    /** The change-feed position the store has pulled to. */
    val sync: String?,
    /** The cursor `loadMore()` sends; null when the last page was read (or nothing loaded). */
    val nextCursor: String?,
    /** Optimistic operations not yet confirmed (including ones queued while offline). */
    val pending: Int,
) {
    companion object {
        val EMPTY = InboxView(emptyList(), Counts.ZERO, null, null, 0)
    }
}

/**
 * The inbox store: pure state, no I/O, no clock (the semantics of clients/conformance/README.md,
 * which every client SDK of this project passes). Not thread-safe: [InboxClient] serialises
 * access. The base is the server's state as last described; optimistic operations are never
 * written into it before they are confirmed, so a failure rolls back exactly by dropping the
 * operation.
 */
class InboxStore {
    private data class SortKey(val revision: Long, val notificationId: String)

    // Newest first: revision desc, then notificationId desc (byte order; the ids are ASCII hex).
    private val order = TreeMap<SortKey, Notification>(
        compareByDescending<SortKey> { it.revision }.thenDescending { a, b -> a.notificationId.compareTo(b.notificationId) },
    )
    private val byKey = HashMap<String, Notification>()
    private var baseCounts = Counts.ZERO
    private var generation = 0L
    private var countsSync: String? = null
    var sync: String? = null
        private set
    var nextCursor: String? = null
        private set
    private val pending = ArrayList<PendingOp>()
    private var cached: InboxView? = null

    val pendingOps: List<PendingOp> get() = pending.toList()
    val size: Int get() = byKey.size

    private fun key(n: Notification) = SortKey(n.revision, n.notificationId)

    private fun remove(itemKey: String) {
        val old = byKey.remove(itemKey) ?: return
        order.remove(key(old))
    }

    private fun upsert(n: Notification) {
        remove(n.itemKey)
        if (n.archived) return // only the inbox is kept
        byKey[n.itemKey] = n
        order[key(n)] = n
    }

    private fun changed() {
        cached = null
    }

    /** `load()` (or `loadMore()` with [append]): a list page. */
    fun applyPage(page: Page, append: Boolean) {
        if (!append) {
            byKey.clear()
            order.clear()
        }
        for (n in page.items) upsert(n)
        nextCursor = page.nextCursor
        if (!append) {
            sync = page.sync
            page.counts?.let {
                baseCounts = it
                countsSync = page.sync
                generation++
            }
        }
        changed()
    }

    /**
     * One change-feed answer: tombstones and archived items leave, others replace by itemKey.
     * While more list pages remain, an item the store does not hold that sorts below the last
     * loaded one is skipped: it comes with its page, so the list never shows it out of place.
     */
    fun applyChanges(changes: Changes) {
        val window = nextCursor?.let { Position.decodeCursor(it) }
        for (c in changes.items) {
            when (c) {
                is Change.Tombstone -> remove(c.itemKey)
                is Change.Upsert -> {
                    val n = c.item
                    val below = window != null && !byKey.containsKey(n.itemKey) &&
                        (n.revision < window.first || (n.revision == window.first && Position.bytesBefore(n.notificationId, window.second)))
                    if (!below) upsert(n)
                }
            }
        }
        sync = Position.max(sync, changes.sync)
        changed()
    }

    /** A badge push; false when it was dropped (older than what the store already knows). */
    fun applyBadge(badge: Badge): Boolean {
        if (Position.isOlder(badge.sync, Position.max(sync, countsSync))) return false
        baseCounts = badge.counts
        countsSync = badge.sync
        generation++
        changed()
        return true
    }

    /** An unread-count answer (carries no position). */
    fun applyCounts(counts: Counts) {
        baseCounts = counts
        generation++
        changed()
    }

    /** Adds an optimistic operation (its id must be new). */
    fun addPending(op: PendingOp) {
        require(pending.none { it.id == op.id }) { "duplicate operation id ${op.id}" }
        op.generation = generation
        pending.add(op)
        changed()
    }

    fun isPending(id: String): Boolean = pending.any { it.id == id }

    /** The server applied [id]: into the base (counts only if not replaced since). */
    fun confirm(id: String): PendingOp? {
        val i = pending.indexOfFirst { it.id == id }
        if (i < 0) return null
        val op = pending.removeAt(i)
        val layer = Layer(byKey, baseCounts)
        layer.apply(op)
        for ((k, v) in layer.changedItems) {
            if (v == null) remove(k) else upsert(v)
        }
        if (op.generation == generation) baseCounts = layer.counts
        changed()
        return op
    }

    /** The server refused [id] (or retries ran out): dropped, nothing else changes. */
    fun fail(id: String): PendingOp? {
        val i = pending.indexOfFirst { it.id == id }
        if (i < 0) return null
        val op = pending.removeAt(i)
        changed()
        return op
    }

    /** The visible state (cached until the next change). */
    fun view(): InboxView {
        cached?.let { return it }
        val v = if (pending.isEmpty()) {
            InboxView(ArrayList(order.values), baseCounts, sync, nextCursor, 0)
        } else {
            val layer = Layer(byKey, baseCounts)
            for (op in pending) layer.apply(op)
            val items = ArrayList<Notification>(order.size)
            for (n in order.values) {
                if (!layer.changedItems.containsKey(n.itemKey)) {
                    items.add(n)
                } else {
                    layer.changedItems[n.itemKey]?.let { items.add(it) } // flags never move an item
                }
            }
            InboxView(items, layer.counts, sync, nextCursor, pending.size)
        }
        cached = v
        return v
    }

    /**
     * Pending operations applied over [base]: only the items they touch are copied
     * ([changedItems]: itemKey → new item, or null when it left the inbox).
     */
    private class Layer(private val base: Map<String, Notification>, var counts: Counts) {
        val changedItems = HashMap<String, Notification?>()

        private fun get(k: String): Notification? = if (changedItems.containsKey(k)) changedItems[k] else base[k]

        private fun contribution(n: Notification?): Pair<Long, Long> =
            if (n == null || n.archived) 0L to 0L else (if (n.read) 0L else 1L) to (if (n.seen) 0L else 1L)

        private fun set(k: String, after: Notification?) {
            val before = get(k) ?: return
            val (ub, sb) = contribution(before)
            val (ua, sa) = contribution(after)
            counts = Counts(maxOf(0, counts.unread + ua - ub), maxOf(0, counts.unseen + sa - sb))
            changedItems[k] = after?.takeUnless { it.archived }
        }

        private fun visibleKeys(): List<String> {
            val keys = LinkedHashSet<String>(base.keys)
            for ((k, v) in changedItems) if (v == null) keys.remove(k)
            return keys.toList()
        }

        fun apply(op: PendingOp) {
            when (op) {
                is PendingOp.Mark -> get(op.itemKey)?.let { set(op.itemKey, it.withFlag(op.flag, op.value)) }
                is PendingOp.Delete -> if (get(op.itemKey) != null) set(op.itemKey, null)
                is PendingOp.Bulk -> {
                    for (k in visibleKeys()) {
                        val n = get(k) ?: continue
                        if (op.category != null && n.categoryType != op.category) continue
                        when (op.action) {
                            BulkAction.READ -> if (!n.read) set(k, n.copy(read = true))
                            BulkAction.SEEN -> if (!n.seen) set(k, n.copy(seen = true))
                            BulkAction.ARCHIVE_READ -> if (n.read) set(k, null)
                            BulkAction.DELETE -> set(k, null)
                        }
                    }
                    if (op.category == null) {
                        counts = when (op.action) {
                            BulkAction.READ -> counts.copy(unread = 0)
                            BulkAction.SEEN -> counts.copy(unseen = 0)
                            BulkAction.DELETE -> Counts.ZERO
                            BulkAction.ARCHIVE_READ -> counts
                        }
                    }
                }
            }
        }
    }

    /**
     * An immutable copy of what is persisted: O(n) references, no serialisation, so the caller
     * can render it to JSON ([Snapshot.toJson]) outside any lock.
     */
    fun snapshot(): Snapshot = Snapshot(ArrayList(order.values), baseCounts, countsSync, sync, nextCursor, ArrayList(pending))

    class Snapshot internal constructor(
        private val items: List<Notification>,
        private val counts: Counts,
        private val countsSync: String?,
        private val sync: String?,
        private val nextCursor: String?,
        private val pending: List<PendingOp>,
    ) {
        /** The language-neutral persisted state (version 1, clients/conformance/README.md). */
        fun toJson(): Map<String, Any?> = linkedMapOf(
            "version" to 1L,
            "items" to items, // JsonModel: Json.write renders them directly
            "counts" to counts.toJson(),
            "countsSync" to countsSync,
            "sync" to sync,
            "nextCursor" to nextCursor,
            "pending" to pending.map { it.toJson() },
        )
    }

    /** The language-neutral persisted state (version 1, clients/conformance/README.md). */
    fun toPersisted(): Map<String, Any?> = snapshot().toJson()

    companion object {
        /** A store from [toPersisted]'s output (a cold start). */
        fun fromPersisted(m: Map<String, Any?>): InboxStore {
            val v = m["version"]
            if (v != 1L) throw Json.ParseException("unsupported persisted version $v")
            val s = InboxStore()
            for (n in m.list("items")) s.upsert(Notification.fromJson(n.asObj()))
            s.baseCounts = Counts.fromJson(m.obj("counts"))
            s.countsSync = m.strOrNull("countsSync")
            s.sync = m.strOrNull("sync")
            s.nextCursor = m.strOrNull("nextCursor")
            s.generation = 1
            for (p in m.list("pending")) s.addPending(PendingOp.fromJson(p.asObj()))
            return s
        }
    }
}
