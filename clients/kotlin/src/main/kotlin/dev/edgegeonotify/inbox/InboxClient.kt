package dev.edgegeonotify.inbox

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.delay
import kotlinx.coroutines.flow.MutableStateFlow
import kotlinx.coroutines.flow.StateFlow
import kotlinx.coroutines.flow.asStateFlow
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.flow.update
import kotlinx.coroutines.launch
import kotlinx.coroutines.withTimeoutOrNull
import kotlinx.coroutines.sync.Mutex
import kotlinx.coroutines.sync.withLock
import java.io.IOException
import java.net.URLEncoder
import java.util.UUID
import java.util.concurrent.atomic.AtomicLong
import kotlin.random.Random

/** An error the server answered, with its stable `code` and the `X-Request-Id` to quote. */
class InboxException(
    val status: Int,
    val code: String,
    message: String,
    val requestId: String?,
) : Exception("$status $code: $message" + (requestId?.let { " (request $it)" } ?: ""))

/**
 * "Full jitter" backoff: a uniform wait in `[0, min(maxMs, baseMs * 2^attempt)]`, so clients
 * that lost the server together do not come back together.
 */
internal fun fullJitter(baseMs: Long, maxMs: Long, attempt: Int, random: Random): Long {
    val cap = minOf(maxMs, baseMs shl minOf(attempt, 20))
    return if (cap <= 0) 0 else random.nextLong(cap + 1)
}

/** The WebSocket's state, for a "live" dot or an "offline" banner. */
enum class Connection { STOPPED, CONNECTING, LIVE, RECONNECTING }

/** Everything an app renders: the inbox ([view]) plus connection and the last error. */
data class InboxState(
    val view: InboxView = InboxView.EMPTY,
    val connection: Connection = Connection.STOPPED,
    /** True once the inbox was shown from a load, a pull or persisted state. */
    val ready: Boolean = false,
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
    /** Entries per change-feed call while pulling (server maximum 100). */
    val changesPageSize: Int = 100,
    /** Attempts of one request on 429/5xx before giving up (a mark then rolls back). */
    val maxAttempts: Int = 4,
    /** Backoff of retried requests without `Retry-After`: full jitter from this base. */
    val retryBaseMs: Long = 250,
    /** Cap of any single wait, including a server's `Retry-After`. */
    val retryMaxMs: Long = 30_000,
    /** Reconnect backoff until the server's first badge brings its own `reconnect` hint. */
    val reconnect: ReconnectHint = ReconnectHint.DEFAULT,
    /** Randomness of the jitter (a seeded one makes tests repeatable). */
    val random: Random = Random.Default,
)

/**
 * One user's inbox: the store as a [StateFlow], kept current by the change feed and the live
 * badge over a WebSocket, persisted so a cold start shows the inbox at once.
 *
 * - [getToken] is called on every WebSocket connect, on the first request, and after a 401 (then
 *   the request is retried once): it must return a token valid *now* (refresh it if needed).
 * - Marks, bulk actions and deletes are optimistic: [state] changes at once and rolls back exactly
 *   if the server refuses (a 4xx other than 401) or retries run out. A mark made offline stays
 *   queued (persisted, with its Idempotency-Key) and is sent when the connection is back.
 * - Call [onForeground] when the app returns to the foreground (Lifecycle `ON_START`): it pulls and
 *   reconnects at once instead of waiting out a backoff.
 *
 * All work runs in [scope] (e.g. a ViewModel's or the process's); cancelling it stops everything.
 */
class InboxClient(
    baseUrl: String,
    private val userId: String,
    private val getToken: suspend () -> String,
    private val scope: CoroutineScope,
    private val transport: InboxTransport = OkHttpTransport(),
    private val persistence: InboxPersistence = MemoryPersistence(),
    private val config: InboxConfig = InboxConfig(),
) {
    private val base = baseUrl.trimEnd('/')
    private val storeLock = Mutex()
    private var store = InboxStore()
    private val _state = MutableStateFlow(InboxState())

    /** The inbox as observable state (Compose: `client.state.collectAsState()`). */
    val state: StateFlow<InboxState> = _state.asStateFlow()

    @Volatile
    private var token: String? = null
    private val tokenLock = Mutex()
    private val pullLock = Mutex()
    private val pullRequests = Channel<Unit>(Channel.CONFLATED)
    private val wakeUps = Channel<Unit>(Channel.CONFLATED)
    private val inFlight = HashSet<String>()
    private var streamJob: Job? = null
    private var pullJob: Job? = null

    @Volatile
    private var socket: InboxSocket? = null

    @Volatile
    private var hint: ReconnectHint = config.reconnect

    private val sent = AtomicLong()
    private val received = AtomicLong()

    /** HTTP requests this client sent (retries included). */
    val requestsSent: Long get() = sent.get()

    /** Bytes of HTTP response bodies this client read. */
    val bytesReceived: Long get() = received.get()

    private val persistKey = "inbox.$userId"

    // ---------------------------------------------------------------- lifecycle

    /**
     * Shows the persisted inbox (if any) at once, then catches up: a pull from its `sync`, or a
     * first `load()`; sends operations queued offline; opens the live badge unless [stream] is
     * false (then the app pulls when it wants, e.g. from [onForeground]).
     */
    suspend fun start(stream: Boolean = true) {
        restore()
        if (stream) synchronized(this) { streamJob = streamJob ?: scope.launch { streamLoop() } }
        catchUp()
    }

    /** Closes the socket and stops background work (state and persistence stay). */
    fun stop() {
        synchronized(this) {
            streamJob?.cancel()
            pullJob?.cancel()
            streamJob = null
            pullJob = null
        }
        socket?.close(1000, "stopped")
        socket = null
        _state.update { it.copy(connection = Connection.STOPPED) }
    }

    /** The app is visible again: pull and send queued operations now, reconnect now (no backoff wait). */
    fun onForeground() {
        requestPull()
        if (_state.value.connection != Connection.LIVE) wakeUps.trySend(Unit)
    }

    /** Drops the socket as a dead network would (no close handshake); it reconnects by itself. */
    fun dropConnection() {
        socket?.cancel()
    }

    // ---------------------------------------------------------------- reads

    /** First page with counts; replaces the inbox. */
    suspend fun load() {
        val page = Page.fromJson(json(call("GET", "/v1/notifications?limit=${config.pageSize}")))
        mutate { it.applyPage(page, append = false) }
    }

    /** The next page (nothing when the last page was read). */
    suspend fun loadMore() {
        val cursor = storeLock.withLock { store.nextCursor } ?: return
        val page = Page.fromJson(json(call("GET", "/v1/notifications?limit=${config.pageSize}&cursor=${enc(cursor)}")))
        mutate { it.applyPage(page, append = true) }
    }

    /** The change feed from the store's `sync` until `hasMore` is false (a `load()` if none). */
    suspend fun pull() = pullLock.withLock {
        var since = storeLock.withLock { store.sync }
        if (since == null) {
            load()
            return@withLock
        }
        while (true) {
            val ch = Changes.fromJson(
                json(call("GET", "/v1/notifications/changes?limit=${config.changesPageSize}&since=${enc(since!!)}")),
            )
            mutate { it.applyChanges(ch) }
            if (!ch.hasMore) break
            since = ch.sync
        }
    }

    /** Asks the server for the badge counts (one call) and shows them. */
    suspend fun refreshCounts() {
        val c = Counts.fromJson(json(call("GET", "/v1/notifications/unread-count")))
        mutate { it.applyCounts(c) }
    }

    // ---------------------------------------------------------------- optimistic writes

    /** Sets [flag] of one item; true once the server applied it, false if queued or rolled back. */
    suspend fun mark(itemKey: String, flag: Flag, value: Boolean = true): Boolean =
        submit(PendingOp.Mark(newId(), itemKey, flag, value, newKey()))

    /** A bulk action over the inbox (or one category). */
    suspend fun bulk(action: BulkAction, category: String? = null): Boolean =
        submit(PendingOp.Bulk(newId(), action, category, newKey()))

    /** Deletes one item (other devices see a tombstone). */
    suspend fun delete(itemKey: String): Boolean = submit(PendingOp.Delete(newId(), itemKey, newKey()))

    /** Sends every queued operation (after a reconnect; [start] and the stream call it). */
    suspend fun flushQueue() {
        val ops = storeLock.withLock { store.pendingOps }
        for (op in ops) if (!outcomes.containsKey(op.id)) send(op)
    }

    private fun newId() = UUID.randomUUID().toString()
    private fun newKey() = "inbox-" + UUID.randomUUID().toString()

    /** Outcome of each operation made by this client while its `mark`/`bulk`/`delete` call waits. */
    private val outcomes = java.util.concurrent.ConcurrentHashMap<String, CompletableDeferred<Boolean>>()

    private suspend fun submit(op: PendingOp): Boolean {
        val outcome = CompletableDeferred<Boolean>()
        outcomes[op.id] = outcome
        mutate { it.addPending(op) }
        send(op) // background flushes leave an operation alone while its call is running
        settle(op, false) // (no-op when send settled it)
        return outcome.await()
    }

    private fun settle(op: PendingOp, applied: Boolean) {
        outcomes.remove(op.id)?.complete(applied)
    }

    private suspend fun send(op: PendingOp) {
        synchronized(inFlight) { if (!inFlight.add(op.id)) return }
        try {
            // Confirmed or dropped since the caller listed it: nothing to send.
            if (storeLock.withLock { !store.isPending(op.id) }) return
            val (method, path, body) = when (op) {
                is PendingOp.Mark -> Triple("POST", "/v1/notifications/mark", MarkRequest(op.itemKey, false, op.flag, op.value).toJson())
                is PendingOp.Bulk -> Triple("POST", "/v1/notifications/bulk", BulkRequest(op.action, op.category).toJson())
                is PendingOp.Delete -> Triple("DELETE", "/v1/notifications/items/${encSegment(op.itemKey)}", null)
            }
            call(method, path, body?.let { Json.write(it) }, idempotencyKey = op.idempotencyKey)
            mutate { it.confirm(op.id) }
            settle(op, true)
        } catch (e: CancellationException) {
            throw e
        } catch (e: InboxException) {
            _state.update { it.copy(lastError = e) }
            if (e.status != 401) {
                // Refused, or retries ran out: roll back exactly, then reconcile with the server.
                mutate { it.fail(op.id) }
                requestPull()
            } // A 401 after a fresh token: the token getter cannot help now; keep it queued.
            settle(op, false)
        } catch (e: Exception) {
            // No answer (IOException: offline), getToken() failed, or an unreadable answer:
            // nothing is known to have been applied, so the operation stays queued and is sent
            // again (same Idempotency-Key) on reconnect, onForeground() or the next start().
            _state.update { it.copy(lastError = e) }
            settle(op, false)
        } finally {
            synchronized(inFlight) { inFlight.remove(op.id) }
        }
    }

    // ---------------------------------------------------------------- state

    private val persistLock = Mutex()
    private val persistSignal = Channel<Unit>(Channel.CONFLATED)
    private val persisted = MutableStateFlow(0L)
    private var version = 0L
    private var latest: InboxStore.Snapshot? = null
    private var persistJob: Job? = null

    private suspend fun mutate(f: (InboxStore) -> Unit) {
        storeLock.withLock {
            f(store)
            val view = store.view()
            _state.update { it.copy(view = view, ready = true) }
            latest = store.snapshot()
            version++
        }
        // Written in the background, latest snapshot only: a burst of change pages costs one
        // write, and serialising a large store never holds up the state an app renders.
        synchronized(this) { persistJob = persistJob ?: scope.launch { persistWorker() } }
        persistSignal.trySend(Unit)
    }

    private suspend fun persistWorker() {
        for (unit in persistSignal) writeLatest()
    }

    private suspend fun writeLatest() = persistLock.withLock {
        val (v, snap) = storeLock.withLock { version to latest }
        if (snap == null || v <= persisted.value) return@withLock
        try {
            persistence.write(persistKey, Json.write(snap.toJson()))
        } catch (e: IOException) {
            _state.update { it.copy(lastError = e) }
        }
        persisted.value = v
    }

    /** Waits until everything the store held when called is written to [persistence]. */
    suspend fun awaitPersisted() {
        val target = storeLock.withLock { version }
        writeLatest()
        persisted.first { it >= target }
    }

    private suspend fun restore() {
        val text = persistence.read(persistKey) ?: return
        val restored = try {
            InboxStore.fromPersisted(Json.parse(text).asObj())
        } catch (e: Json.ParseException) {
            null // an unreadable snapshot is a cache miss, not a crash
        } catch (e: IllegalArgumentException) {
            null
        } ?: return
        storeLock.withLock {
            store = restored
            _state.update { it.copy(view = restored.view(), ready = true) }
        }
    }

    /** Pull, then send the queue. Never throws (it also runs in the background, in the app's
     *  scope, where an exception would cancel the app's work): failures land in `lastError`. */
    private suspend fun catchUp() {
        for (step in listOf(::pull, ::flushQueue)) {
            try {
                step()
            } catch (e: CancellationException) {
                throw e
            } catch (e: Exception) {
                _state.update { it.copy(lastError = e) }
            }
        }
    }

    /** A pull soon, in the background; requests made while one runs are merged into one. */
    private fun requestPull() {
        synchronized(this) { pullJob = pullJob ?: scope.launch { pullWorker() } }
        pullRequests.trySend(Unit)
    }

    private suspend fun pullWorker() {
        // Each pull also sends what is queued (nothing to do when the queue is empty).
        for (unit in pullRequests) catchUp()
    }

    // ---------------------------------------------------------------- HTTP

    private suspend fun currentToken(fresh: Boolean): String = tokenLock.withLock {
        val t = token
        if (t != null && !fresh) return t
        getToken().also { token = it }
    }

    /**
     * One API call: bearer token (fresh once after a 401), `Retry-After` on 429/503, full-jitter
     * retries on other 5xx, [InboxException] with the server's code and request id otherwise.
     * [IOException] when no answer came (the caller decides: offline).
     */
    internal suspend fun call(method: String, path: String, body: String? = null, idempotencyKey: String? = null): String {
        var refreshed = false
        var attempt = 0
        while (true) {
            attempt++
            val headers = linkedMapOf("Authorization" to "Bearer ${currentToken(false)}", "Accept" to "application/json")
            if (body != null) headers["Content-Type"] = "application/json"
            if (idempotencyKey != null) headers["Idempotency-Key"] = idempotencyKey
            sent.incrementAndGet()
            val r = transport.execute(HttpRequest(method, base + path, headers, body))
            received.addAndGet(r.body.toByteArray(Charsets.UTF_8).size.toLong())
            if (r.status in 200..299) return r.body
            val err = ErrorBody.fromJsonOrNull(r.body)
            val ex = InboxException(r.status, err?.code ?: "http_${r.status}", err?.message ?: r.body.take(200), r.header("x-request-id"))
            when {
                r.status == 401 && !refreshed -> {
                    refreshed = true
                    currentToken(true)
                    attempt-- // the retry after a refresh is not a backoff attempt
                }
                (r.status == 429 || r.status >= 500) && attempt < config.maxAttempts -> delay(retryDelay(r, attempt))
                else -> throw ex
            }
        }
    }

    private fun retryDelay(r: HttpResponse, attempt: Int): Long {
        val after = r.header("retry-after")?.trim()?.toLongOrNull()
        if (after != null) return (after * 1000).coerceIn(0, config.retryMaxMs)
        return fullJitter(config.retryBaseMs, config.retryMaxMs, attempt - 1)
    }

    private fun fullJitter(baseMs: Long, maxMs: Long, attempt: Int) = fullJitter(baseMs, maxMs, attempt, config.random)

    private fun json(text: String) = Json.parse(text).asObj()

    private fun enc(s: String) = URLEncoder.encode(s, "UTF-8")

    private fun encSegment(s: String) = URLEncoder.encode(s, "UTF-8").replace("+", "%20")

    // ---------------------------------------------------------------- live badge

    private sealed class SocketEvent {
        class Opened(val protocol: String?) : SocketEvent()
        class Message(val text: String) : SocketEvent()
        class Closed(val code: Int, val status: Int?) : SocketEvent()
    }

    /** Connect, read badges, reconnect with full jitter; a fresh token on every connect. */
    private suspend fun streamLoop() {
        var attempt = 0
        val wsBase = base.replaceFirst(Regex("^http"), "ws")
        while (true) {
            _state.update { it.copy(connection = if (attempt == 0) Connection.CONNECTING else Connection.RECONNECTING) }
            val events = Channel<SocketEvent>(Channel.UNLIMITED)
            var opened = false
            try {
                val t = currentToken(true) // a fresh token on every connect
                val s = transport.openSocket("$wsBase/v1/notifications/stream", listOf("inbox.v1", "auth.$t"), object : SocketListener {
                    override fun onOpen(protocol: String?) {
                        events.trySend(SocketEvent.Opened(protocol))
                    }

                    override fun onMessage(text: String) {
                        events.trySend(SocketEvent.Message(text))
                    }

                    override fun onClosed(code: Int, reason: String, error: Throwable?, status: Int?) {
                        events.trySend(SocketEvent.Closed(code, status))
                    }
                })
                socket = s
                loop@ for (ev in events) {
                    when (ev) {
                        is SocketEvent.Opened -> {
                            opened = true
                            attempt = 0
                            _state.update { it.copy(connection = Connection.LIVE) }
                            // Whatever happened while the socket was down: pull, send the queue.
                            scope.launch { catchUp() }
                        }
                        is SocketEvent.Message -> onSocketMessage(ev.text)
                        is SocketEvent.Closed -> break@loop
                    }
                }
            } catch (e: CancellationException) {
                socket?.cancel()
                throw e
            } catch (e: Exception) {
                _state.update { it.copy(lastError = e) }
            }
            socket = null
            if (!opened) attempt++ else attempt = 1
            _state.update { it.copy(connection = Connection.RECONNECTING) }
            val wait = fullJitter(hint.baseMs, hint.maxMs, attempt - 1)
            // Wait out the backoff, or less if the app comes to the foreground.
            withTimeoutOrNull(wait) { wakeUps.receive() }
        }
    }

    private suspend fun onSocketMessage(text: String) {
        val m = try {
            Json.parse(text).asObj()
        } catch (e: Json.ParseException) {
            return
        }
        val badge = try {
            Badge.fromJson(m)
        } catch (e: Json.ParseException) {
            null
        } ?: return
        badge.reconnect?.let { hint = it }
        var pullNeeded = false
        storeLock.withLock {
            if (store.applyBadge(badge)) {
                pullNeeded = Position.isOlder(store.sync, badge.sync)
                _state.update { it.copy(view = store.view()) }
            }
        }
        // The badge says something changed; the feed says what.
        if (pullNeeded) requestPull()
    }

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
