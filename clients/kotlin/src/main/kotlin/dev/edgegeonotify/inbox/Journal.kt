package dev.edgegeonotify.inbox

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import org.json.JSONException
import kotlinx.coroutines.CancellationException

/**
 * The store on disk as a log: one line with a snapshot (the language-neutral persisted state,
 * version 1), then one line per change ([InboxStore.drainJournal]). A change appends its own
 * lines, so its cost is the change's; once the lines since the snapshot outgrow it (at least
 * [COMPACT_MIN] bytes) the next write is a fresh snapshot instead (compaction). Written in the
 * background, in order; [await] waits for it.
 */
internal class Journal(private val persistence: InboxPersistence, private val key: String, private val onError: (Exception) -> Unit) {
    companion object {
        const val COMPACT_MIN = 64 * 1024L
    }

    private val lock = Any()
    private var full: InboxStore.Snapshot? = null
    private val lines = StringBuilder()
    private var version = 0L
    private var needFull = false
    private var logBytes = 0L

    @Volatile
    private var snapshotBytes = 0L
    private val written = MutableStateFlow(0L)
    private val writeLock = Mutex()
    private val signal = Channel<Unit>(Channel.CONFLATED)
    private var worker: Job? = null

    /** Takes what [store] changed (called under the client's store lock, after each change). */
    fun record(store: InboxStore) {
        val change = store.drainJournal()
        synchronized(lock) {
            version++
            val text = change?.joinToString("") { it + "\n" }
            if (text == null || needFull || logBytes + text.length > maxOf(COMPACT_MIN, snapshotBytes)) {
                full = store.snapshot()
                lines.setLength(0)
                logBytes = 0
                needFull = false
            } else {
                lines.append(text)
                logBytes += text.length
            }
        }
    }

    fun kick(scope: CoroutineScope) {
        synchronized(lock) { worker = worker ?: scope.launch { for (u in signal) writeLatest() } }
        signal.trySend(Unit)
    }

    private suspend fun writeLatest() = writeLock.withLock {
        val v: Long
        val snap: InboxStore.Snapshot?
        val text: String
        synchronized(lock) {
            v = version
            snap = full
            text = lines.toString()
            full = null
            lines.setLength(0)
        }
        if (v <= written.value) return@withLock
        try {
            if (snap != null) {
                val head = snap.toJson().toString()
                persistence.write(key, head + "\n" + text)
                snapshotBytes = head.length.toLong()
            } else if (text.isNotEmpty()) {
                persistence.append(key, text)
            }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            // IOException, or whatever an adapter throws: the next write is a whole snapshot, so
            // nothing of this one is lost once a write succeeds.
            synchronized(lock) { needFull = true }
            onError(e)
        }
        written.value = v
    }

    suspend fun await() {
        val target = synchronized(lock) { version }
        writeLatest()
        written.first { it >= target }
    }

    /** The persisted store, or null (none, or an unreadable snapshot: a cache miss, not a crash). */
    suspend fun restore(): InboxStore? {
        val text = try {
            persistence.read(key)
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            onError(e)
            null // unreadable: a cache miss, not a crash
        } ?: return null
        val parts = text.split('\n')
        val store = try {
            InboxStore.fromPersisted(parseObject(parts[0]))
        } catch (e: JSONException) {
            return null
        } catch (e: IllegalArgumentException) {
            return null
        }
        var torn = false
        for (line in parts.drop(1)) {
            if (line.isEmpty()) continue
            try {
                store.applyRecord(parseObject(line))
            } catch (e: JSONException) {
                torn = true // a crash mid-append: the lines before it hold
                break
            }
        }
        store.drainJournal()
        synchronized(lock) {
            snapshotBytes = parts[0].length.toLong()
            logBytes = (text.length - parts[0].length).toLong()
            needFull = torn
        }
        return store
    }
}
