package dev.edgegeonotify.inbox

import org.json.JSONArray
import org.json.JSONException
import org.json.JSONObject
import java.util.TreeMap

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

    // What changed since the last [drainJournal], so persistence writes the change, not the store.
    private val dirtyItems = LinkedHashSet<String>()
    private var metaDirty = false
    private val opRecords = ArrayList<JSONObject>()
    private var replaced = true // everything was replaced (a first page): the journal is a snapshot

    val pendingOps: List<PendingOp> get() = pending.toList()
    val size: Int get() = byKey.size

    private fun key(n: Notification) = SortKey(n.revision, n.notificationId)

    private fun remove(itemKey: String) {
        val old = byKey.remove(itemKey) ?: return
        order.remove(key(old))
        dirtyItems.add(itemKey)
    }

    private fun upsert(n: Notification) {
        remove(n.itemKey)
        if (n.archived) return // only the inbox is kept
        byKey[n.itemKey] = n
        order[key(n)] = n
        dirtyItems.add(n.itemKey)
    }

    private fun changed() {
        cached = null
        metaDirty = true // cheap to rewrite: counts, positions
    }

    /** `load()` (or `loadMore()` with [append]): a list page. */
    fun applyPage(page: Page, append: Boolean) {
        if (!append) {
            byKey.clear()
            order.clear()
            replaced = true
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
        opRecords.add(JSONObject().put("p", op.toJson()))
        changed()
    }

    fun isPending(id: String): Boolean = pending.any { it.id == id }

    /** The oldest operation not yet confirmed (the next the lane sends). */
    fun firstPending(): PendingOp? = pending.firstOrNull()

    /** The server applied [id]: into the base (counts only if not replaced since). */
    fun confirm(id: String): PendingOp? {
        val i = pending.indexOfFirst { it.id == id }
        if (i < 0) return null
        val op = pending.removeAt(i)
        opRecords.add(JSONObject().put("q", id))
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
        opRecords.add(JSONObject().put("q", id))
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
     * What changed since the last call, as persistence records (one JSON object a line, see
     * [applyRecord]), or null when everything was replaced and only a [snapshot] will do. The
     * cost is that of the change: the items touched, the pending operations added or dropped.
     */
    fun drainJournal(): List<String>? {
        val out = if (replaced) {
            null
        } else {
            val lines = ArrayList<String>(dirtyItems.size + opRecords.size + 1)
            for (k in dirtyItems) {
                val n = byKey[k]
                lines.add((if (n != null) JSONObject().put("i", n.toJson()) else JSONObject().put("x", k)).toString())
            }
            for (r in opRecords) lines.add(r.toString())
            if (metaDirty) lines.add(JSONObject().put("m", meta()).toString())
            lines
        }
        replaced = false
        dirtyItems.clear()
        opRecords.clear()
        metaDirty = false
        return out
    }

    private fun meta(): JSONObject = JSONObject()
        .put("counts", baseCounts.toJson())
        .put("countsSync", countsSync.orJsonNull())
        .put("sync", sync.orJsonNull())
        .put("nextCursor", nextCursor.orJsonNull())

    /** Replays one record of [drainJournal] (a cold start: the snapshot, then its records). */
    fun applyRecord(r: JSONObject) {
        when {
            r.has("i") -> upsert(Notification.fromJson(r.obj("i")))
            r.has("x") -> remove(r.str("x"))
            r.has("p") -> addPending(PendingOp.fromJson(r.obj("p")))
            r.has("q") -> r.str("q").let { id -> pending.removeAll { it.id == id } }
            r.has("m") -> r.obj("m").let { m ->
                baseCounts = Counts.fromJson(m.obj("counts"))
                countsSync = m.strOrNull("countsSync")
                sync = m.strOrNull("sync")
                nextCursor = m.strOrNull("nextCursor")
            }
            else -> throw JSONException("unknown journal record")
        }
        changed()
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
        fun toJson(): JSONObject = JSONObject()
            .put("version", 1)
            .put("items", JSONArray().also { a -> items.forEach { a.put(it.toJson()) } })
            .put("counts", counts.toJson())
            .put("countsSync", countsSync.orJsonNull())
            .put("sync", sync.orJsonNull())
            .put("nextCursor", nextCursor.orJsonNull())
            .put("pending", JSONArray().also { a -> pending.forEach { a.put(it.toJson()) } })
    }

    /** The language-neutral persisted state (version 1, clients/conformance/README.md). */
    fun toPersisted(): JSONObject = snapshot().toJson()

    companion object {
        /** A store from [toPersisted]'s output (a cold start). */
        fun fromPersisted(m: JSONObject): InboxStore {
            val v = m.opt("version")
            if (v != 1 && v != 1L) throw JSONException("unsupported persisted version $v")
            val s = InboxStore()
            for (n in m.arr("items").objects()) s.upsert(Notification.fromJson(n))
            s.baseCounts = Counts.fromJson(m.obj("counts"))
            s.countsSync = m.strOrNull("countsSync")
            s.sync = m.strOrNull("sync")
            s.nextCursor = m.strOrNull("nextCursor")
            s.generation = 1
            for (p in m.arr("pending").objects()) s.addPending(PendingOp.fromJson(p))
            s.drainJournal() // restored: nothing new to write
            return s
        }
    }
}
