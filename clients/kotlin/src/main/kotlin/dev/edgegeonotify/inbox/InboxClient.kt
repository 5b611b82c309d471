package dev.edgegeonotify.inbox

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.Deferred
import kotlinx.coroutines.Job
import kotlinx.coroutines.async
import kotlinx.coroutines.currentCoroutineContext
import kotlinx.coroutines.ensureActive
import kotlinx.coroutines.flow.MutableSharedFlow
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.SharedFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asSharedFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.update
import kotlinx.coroutines.launch
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import java.net.URLEncoder
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import kotlin.random.Random

/**
 * "Full jitter" backoff: a uniform wait in `[0, min(maxMs, baseMs * 2^attempt)]`, so clients
 * that lost the server together do not come back together.
 */
internal fun fullJitter(baseMs: Long, maxMs: Long, attempt: Int, random: Random): Long {
    val cap = minOf(maxMs, baseMs shl minOf(attempt, 20))
    return if (cap <= 0) 0 else (random.nextDouble() * cap).toLong()
}

/** Everything an app renders: the inbox ([view]), the status and the last error. */
data class InboxState(
    val view: InboxView = InboxView.EMPTY,
    val status: Status = Status.STOPPED,
    /** Why the status is POLLING (the socket's close or refusal, getToken()'s error); null otherwise. */
    val statusReason: Throwable? = null,
    /** True once the inbox was shown from a load, a pull or persisted state. */
    val ready: Boolean = false,
    /** The error that stopped the last request; cleared by the next request that succeeds. */
    val lastError: Throwable? = null,
) {
    val items get() = view.items
    val counts get() = view.counts
    val unread get() = view.counts.unread
    val unseen get() = view.counts.unseen
}

data class InboxConfig(
    /** Items per `load()` / `loadMore()` page (server maximum 100). */
    val pageSize: Int = 20,
    /** Entries per change-feed call while pulling; null: the server's default, its maximum (100). */
    val changesPageSize: Int? = null,
    /** Resends of one request after transient answers before the lane stops (the op stays queued). */
    val retries: Int = 3,
    /** Backoff of resends without `Retry-After`: full jitter from this base, up to [retryMaxMs]. */
    val retryBaseMs: Long = 250,
    val retryMaxMs: Long = 8_000,
    /** A `Retry-After` longer than this is not waited in line: the lane stops and resumes after it. */
    val maxWaitMs: Long = 60_000,
    /** Pull interval while POLLING; doubled after each failed poll up to [pollMaxMs]. */
    val pollMs: Long = 30_000,
    val pollMaxMs: Long = 300_000,
    /** Reconnect backoff until the server's first badge brings its own `reconnect` hint. */
    val reconnect: ReconnectHint = ReconnectHint.DEFAULT,
    /** Randomness of the jitter (a seeded one makes tests repeatable). */
    val random: Random = Random.Default,
    /** Every wait goes through this clock (tests pass one they control). */
    val clock: InboxClock = SystemClock,
)

/** The end of a `mark`, `bulk` or `remove`. */
sealed interface WriteResult {
    /** The server confirmed it. */
    data object Applied : WriteResult

    /** Not confirmed yet: kept (persisted, with its Idempotency-Key) and sent again on the next
     *  trigger; [error] is what stopped it (offline, a second 401, retries ran out). */
    data class Queued(val error: InboxError) : WriteResult

    /** The server refused it: rolled back exactly (and a pull reconciles). */
    data class Rejected(val error: InboxException) : WriteResult
}

/** An operation the server refused after it was shown (also one queued long before). */
data class Rollback(val op: PendingOp, val error: InboxException)

/**
 * One user's inbox: the store as a [StateFlow], kept current by the change feed and the live
 * badge (or polling when the socket cannot open), persisted so a cold start shows it at once.
 *
 * Every request that reads or changes the store runs in one **lane**: at most one in flight,
 * queued operations first (in creation order, each with the Idempotency-Key minted when it was
 * made), then a pull if one was asked for. Triggers (start, [onForeground], [onOnline], a socket
 * open, a newer badge, a poll tick, a new operation, [flush], [pull]) only ask for work and join
 * the running lane. So a page read before an operation was confirmed is never applied after it.
 *
 * [getToken] is called with `refresh = false` for a token (cached, shared by HTTP and the socket,
 * asked again within 30 s of its `exp`) and with `refresh = true` only after the server refused
 * the cached one (a 401, or a 4001 close of the socket).
 */
class InboxClient(
    baseUrl: String,
    private val userId: String,
    getToken: suspend (refresh: Boolean) -> String,
    private val scope: CoroutineScope,
    private val transport: InboxTransport = OkHttpTransport(),
    private val persistence: InboxPersistence = MemoryPersistence(),
    private val config: InboxConfig = InboxConfig(),
) {
    private val base = baseUrl.trimEnd('/')
    private val clock = config.clock
    private val storeLock = Mutex()
    private var store = InboxStore()
    private val _state = MutableStateFlow(InboxState())
    private val _rollbacks = MutableSharedFlow<Rollback>(extraBufferCapacity = 64)
    private val tokens = TokenCache(getToken, clock)
    private val http = Requester(base, transport, tokens, config)

    /** Where is this point (country, time zone) through this client's requests; see [GeoClient]. */
    val geo = GeoClient(http)
    private val journal = Journal(persistence, "inbox.$userId") { e ->
        _state.update { it.copy(lastError = InboxError("persistence", e.toString(), e)) }
    }

    /** The inbox as observable state (Compose: `client.state.collectAsState()`). */
    val state: StateFlow<InboxState> = _state.asStateFlow()

    /** Operations the server refused, each once (also those queued long before). */
    val rollbacks: SharedFlow<Rollback> = _rollbacks.asSharedFlow()

    /** HTTP requests this client sent (resends included). */
    val requestsSent: Long get() = http.sent.get()

    /** Bytes of HTTP response bodies this client read. */
    val bytesReceived: Long get() = http.received.get()

    private val live = Live(
        base.replaceFirst(Regex("^http"), "ws"), transport, tokens, config,
        setStatus = { s, why -> _state.update { it.copy(status = s, statusReason = why) } },
        onOpen = { ask(pull = true) }, // whatever happened while the socket was down
        onMessage = { onSocketMessage(it) },
        poll = { ask(pull = true).await() },
    )
    private var liveJob: Job? = null

    // ---------------------------------------------------------------- lifecycle

    /**
     * Shows the persisted inbox (if any) at once, then catches up in the lane (sends queued
     * operations, pulls from the persisted `sync` or loads the first page), and keeps current:
     * the live badge, or with [live] false polling only. Never throws: errors land in `lastError`.
     */
    suspend fun start(live: Boolean = true) {
        restore()
        synchronized(this) {
            liveJob = liveJob ?: scope.launch { if (live) this@InboxClient.live.run() else this@InboxClient.live.pollOnly() }
        }
        ask(pull = true).await()
    }

    /** Closes the socket and stops polling (the state, the queue and persistence stay; a request
     *  in flight finishes). */
    fun stop() {
        synchronized(this) {
            liveJob?.cancel()
            liveJob = null
        }
        live.close()
        val stopped = InboxError("stopped", "the client was stopped")
        for (id in outcomes.keys.toList()) outcomes.remove(id)?.complete(WriteResult.Queued(stopped))
        synchronized(laneLock) { lane }?.cancel() // the request in flight is abandoned; its op stays queued
        _state.update { it.copy(status = Status.STOPPED, statusReason = null) }
    }

    /** The app is visible again: send the queue and pull now; reconnect now (no backoff wait). */
    fun onForeground() {
        ask(pull = true)
        if (_state.value.status != Status.LIVE) live.wake()
    }

    /** The network is back (ConnectivityManager's onAvailable): the same as [onForeground]. */
    fun onOnline() = onForeground()

    /** Drops the socket as a dead network would (no close handshake); it reconnects by itself. */
    fun dropConnection() = live.drop()

    // ---------------------------------------------------------------- reads (joined to the lane)

    /** First page with counts; replaces the inbox. Throws the error that stopped the lane. */
    suspend fun load() = join(ask(load = true))

    /** The next page (nothing when the last page was read). */
    suspend fun loadMore() = join(ask(more = true))

    /** The change feed from the store's `sync` until `hasMore` is false (a `load()` if none), then
     *  the counts if anything changed; queued operations are sent first. */
    suspend fun pull() = join(ask(pull = true))

    /** Sends every queued operation (they are sent anyway on any trigger). */
    suspend fun flush() = join(ask())

    /** Asks the server for the badge counts (one call) and shows them. */
    suspend fun refreshCounts() = join(ask(counts = true))

    private suspend fun join(lane: Deferred<InboxError?>) {
        awaitLane(lane)?.let { throw it }
    }

    /** The lane's end; `stopped` when [stop] cancelled it (not the caller's cancellation). */
    private suspend fun awaitLane(lane: Deferred<InboxError?>): InboxError? = try {
        lane.await()
    } catch (e: CancellationException) {
        currentCoroutineContext().ensureActive()
        InboxError("stopped", "the client was stopped")
    }

    // ---------------------------------------------------------------- optimistic writes

    /** Sets [flag] of one item to [value]; shown at once. */
    suspend fun mark(itemKey: String, flag: Flag, value: Boolean = true): WriteResult =
        submit(PendingOp.Mark(newId(), itemKey, flag, value, newKey()))

    /** A bulk action over the inbox (or one category). */
    suspend fun bulk(action: BulkAction, category: String? = null): WriteResult =
        submit(PendingOp.Bulk(newId(), action, category, newKey()))

    /** Deletes one item (other devices see a tombstone). */
    suspend fun remove(itemKey: String): WriteResult = submit(PendingOp.Delete(newId(), itemKey, newKey()))

    private fun newId() = UUID.randomUUID().toString()
    private fun newKey() = "inbox-" + UUID.randomUUID().toString()

    /** The result each operation made by this client waits for while its call runs. */
    private val outcomes = ConcurrentHashMap<String, CompletableDeferred<WriteResult>>()

    private suspend fun submit(op: PendingOp): WriteResult {
        val outcome = CompletableDeferred<WriteResult>()
        outcomes[op.id] = outcome
        mutate { it.addPending(op) }
        while (true) {
            val stopped = awaitLane(ask())
            if (outcome.isCompleted) return outcome.await()
            if (stopped != null) {
                outcomes.remove(op.id)
                return WriteResult.Queued(stopped)
            }
        }
    }

    // ---------------------------------------------------------------- the lane

    private val laneLock = Any()
    private var lane: Deferred<InboxError?>? = null
    private var opsWanted = false
    private var pullWanted = false
    private var loadWanted = false
    private var moreWanted = false
    private var countsWanted = false
    private var countsRead = false // in this round of the lane

    /** Asks for work and returns the lane that will do it (the running one, or a new one). Its
     *  value is the error that stopped it, or null when everything asked was done. */
    private fun ask(pull: Boolean = false, load: Boolean = false, more: Boolean = false, counts: Boolean = false): Deferred<InboxError?> {
        val started: Deferred<InboxError?>
        synchronized(laneLock) {
            opsWanted = true // every trigger sends what is queued first
            pullWanted = pullWanted || pull
            loadWanted = loadWanted || load
            moreWanted = moreWanted || more
            countsWanted = countsWanted || counts
            lane?.let { return it }
            started = scope.async(start = CoroutineStart.LAZY) { runLane() }
            lane = started
        }
        started.start()
        return started
    }

    private suspend fun runLane(): InboxError? {
        try {
            while (true) {
                synchronized(laneLock) { opsWanted = false } // sendQueue() sends all that is queued
                var stopped = sendQueue()
                var load = false
                var more = false
                var pull = false
                var counts = false
                countsRead = false
                if (stopped == null) {
                    // Read after the ops: every trigger that came while they were sent joins this pull.
                    synchronized(laneLock) {
                        load = loadWanted
                        more = moreWanted
                        pull = pullWanted
                        counts = countsWanted
                        // ask() sets a flag before joining, so "nothing wanted" here means done.
                        if (!opsWanted && !load && !more && !pull && !counts) {
                            lane = null
                            return null
                        }
                        loadWanted = false
                        moreWanted = false
                        pullWanted = false
                        countsWanted = false
                    }
                    stopped = (if (load) doLoad() else null)
                        ?: (if (more) doLoadMore() else null)
                        ?: (if (pull) doPull() else null)
                        ?: (if (counts && !countsRead) doCounts() else null)
                }
                if (stopped != null) {
                    // What was wanted stays wanted: the next trigger resumes from the first queued op.
                    synchronized(laneLock) {
                        opsWanted = true
                        loadWanted = loadWanted || load
                        moreWanted = moreWanted || more
                        pullWanted = pullWanted || pull
                        countsWanted = countsWanted || counts
                        lane = null
                    }
                    _state.update { it.copy(lastError = stopped) }
                    return stopped
                }
            }
        } catch (e: CancellationException) {
            synchronized(laneLock) { lane = null }
            throw e
        } catch (e: Exception) {
            // A bug, or an adapter that threw something unexpected: stop the lane (ops stay
            // queued) rather than fail the app's scope, which would cancel the app's other work.
            synchronized(laneLock) {
                opsWanted = true
                lane = null
            }
            val err = InboxError("internal", e.toString(), e)
            _state.update { it.copy(lastError = err) }
            return err
        }
    }

    private fun answered() {
        if (_state.value.lastError != null) _state.update { it.copy(lastError = null) }
    }

    /** Sends queued operations in creation order, one at a time; null when the queue is empty. */
    private suspend fun sendQueue(): InboxError? {
        while (true) {
            val op = storeLock.withLock { store.firstPending() } ?: return null
            val (method, path, body) = when (op) {
                is PendingOp.Mark -> Triple("POST", "/v1/notifications/mark", MarkRequest(op.itemKey, false, op.flag, op.value).toJson().toString())
                is PendingOp.Bulk -> Triple("POST", "/v1/notifications/bulk", BulkRequest(op.action, op.category).toJson().toString())
                is PendingOp.Delete -> Triple("DELETE", "/v1/notifications/items/${encSegment(op.itemKey)}", null)
            }
            when (val sent = http.send(method, path, body, op.idempotencyKey)) {
                is Sent.Stopped -> return stopped(sent)
                is Sent.Answer -> {
                    val r = sent.response
                    val error = if (r.status in 200..299) null else InboxException.of(r)
                    answered()
                    if (error == null || (op is PendingOp.Delete && r.status == 404 && error.code == "item_not_found")) {
                        // A delete of an item that is gone: the intent holds; the pull says what is there.
                        mutate { it.confirm(op.id) }
                        if (error != null) synchronized(laneLock) { pullWanted = true }
                        outcomes.remove(op.id)?.complete(WriteResult.Applied)
                    } else {
                        mutate { it.fail(op.id) }
                        _state.update { it.copy(lastError = error) }
                        _rollbacks.tryEmit(Rollback(op, error))
                        synchronized(laneLock) { pullWanted = true }
                        outcomes.remove(op.id)?.complete(WriteResult.Rejected(error))
                    }
                }
            }
        }
    }

    private fun stopped(s: Sent.Stopped): InboxError {
        // A Retry-After too long to wait in line: ask again once it has passed.
        s.resumeAtMs?.let { at -> scope.launch { clock.sleep(at - clock.nowMs()); ask() } }
        return s.error
    }

    /** A read: the parsed answer, or the error that stops the lane. */
    private suspend fun <T> read(path: String, parse: (String) -> T, use: suspend (T) -> InboxError?): InboxError? =
        when (val sent = http.send("GET", path)) {
            is Sent.Stopped -> stopped(sent)
            is Sent.Answer -> if (sent.response.status in 200..299) {
                answered()
                val body = try {
                    parse(sent.response.body)
                } catch (e: org.json.JSONException) {
                    null
                }
                if (body == null) InboxError("invalid_answer", "unreadable answer to GET $path") else use(body)
            } else {
                InboxException.of(sent.response)
            }
        }

    private suspend fun doLoad(): InboxError? = read("/v1/notifications?limit=${config.pageSize}", { Page.fromJson(parseObject(it)) }) { page ->
        mutate { it.applyPage(page, append = false) }
        if (page.counts == null) doCounts() else null.also { countsRead = true }
    }

    private suspend fun doLoadMore(): InboxError? {
        val cursor = storeLock.withLock { store.nextCursor } ?: return null
        return read("/v1/notifications?limit=${config.pageSize}&cursor=${enc(cursor)}", { Page.fromJson(parseObject(it)) }) { page ->
            mutate { it.applyPage(page, append = true) }
            null
        }
    }

    private suspend fun doPull(): InboxError? {
        var since = storeLock.withLock { store.sync } ?: return doLoad()
        var applied = 0
        while (true) {
            var more = false
            val stopped = read("/v1/notifications/changes?since=${enc(since)}" + (config.changesPageSize?.let { "&limit=$it" } ?: ""), { Changes.fromJson(parseObject(it)) }) { ch ->
                mutate { it.applyChanges(ch) }
                applied += ch.items.size
                more = ch.hasMore
                since = ch.sync
                null
            }
            // A position the server no longer reads: start over from the first page.
            if (stopped is InboxException && stopped.status == 400 && stopped.code == "invalid_cursor") return doLoad()
            if (stopped != null) return stopped
            if (!more) break
        }
        // The feed carries no counts: after a pull that changed items, ask, so they are the server's.
        return if (applied > 0) doCounts() else null
    }

    private suspend fun doCounts(): InboxError? = read("/v1/notifications/unread-count", { Counts.fromJson(parseObject(it)) }) { c ->
        mutate { it.applyCounts(c) }
        countsRead = true
        null
    }

    private fun enc(s: String) = URLEncoder.encode(s, "UTF-8")

    private fun encSegment(s: String) = URLEncoder.encode(s, "UTF-8").replace("+", "%20")

    // ---------------------------------------------------------------- state and persistence

    private suspend fun mutate(f: (InboxStore) -> Unit) {
        storeLock.withLock {
            f(store)
            _state.update { it.copy(view = store.view(), ready = true) }
            journal.record(store)
        }
        journal.kick(scope)
    }

    /** Waits until everything the store held when called is written to [persistence]. */
    suspend fun awaitPersisted() = journal.await()

    private suspend fun restore() {
        val restored = journal.restore() ?: return
        storeLock.withLock {
            store = restored
            _state.update { it.copy(view = restored.view(), ready = true) }
        }
    }

    // ---------------------------------------------------------------- live badge

    private suspend fun onSocketMessage(text: String) {
        val badge = try {
            Badge.fromJson(parseObject(text))
        } catch (e: org.json.JSONException) {
            null
        } ?: return
        badge.reconnect?.let { live.hint = it }
        var pullNeeded = false
        mutate { s -> if (s.applyBadge(badge)) pullNeeded = Position.isOlder(s.sync, badge.sync) }
        // The badge says something changed; the feed says what.
        if (pullNeeded) ask(pull = true)
    }

    /** Ids of the queued operations, oldest first (tests name the operations they made). */
    internal fun pendingOpIds(): List<String> = store.pendingOps.map { it.id }

    /** Waits until [pred] holds for the state (tests and app code that need "loaded"). */
    suspend fun awaitState(pred: (InboxState) -> Boolean): InboxState {
        val done = CompletableDeferred<InboxState>()
        val job = scope.launch { state.collect { if (pred(it)) done.complete(it) } }
        try {
            return done.await()
        } finally {
            job.cancel()
        }
    }
}
