package dev.edgegeonotify.inbox

import kotlinx.coroutines.CancellationException
import kotlinx.coroutines.Job
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.coroutineScope
import kotlinx.coroutines.launch

/** What the client is doing to stay current, for a "live" dot or a "catching up" banner. */
enum class Status { STOPPED, CONNECTING, LIVE, POLLING }

/**
 * Why the badge stream is not open ([code]): `websocket_unavailable` (the socket could not be
 * made), `token` (getToken() threw), `stream_refused` (it ended before opening: the upgrade was
 * refused, [httpStatus] when known), `stream_closed` (an open socket closed with [closeCode]).
 */
class StreamException(code: String, val closeCode: Int?, val httpStatus: Int?, message: String, cause: Throwable?) :
    InboxError(code, "$code: " + (closeCode?.let { "close $it " } ?: "") + (httpStatus?.let { "HTTP $it " } ?: "") + message, cause)

/**
 * The live badge and its fallback. While the WebSocket is open the status is LIVE; when it cannot
 * be opened (the constructor throws, getToken() fails, the upgrade is refused) or it closes, the
 * status is POLLING: a pull every `pollMs` (doubled on errors up to `pollMaxMs`) while the socket
 * is retried with full-jitter backoff. A 4001 close (token expired) refreshes the token and
 * reconnects at once.
 */
internal class Live(
    private val wsUrl: String,
    private val transport: InboxTransport,
    private val tokens: TokenCache,
    private val config: InboxConfig,
    private val setStatus: (Status, Throwable?) -> Unit,
    private val onOpen: () -> Unit,
    private val onMessage: suspend (String) -> Unit,
    private val poll: suspend () -> InboxError?,
) {
    private val clock get() = config.clock
    private val wakeUps = Channel<Unit>(Channel.CONFLATED)

    @Volatile
    var hint: ReconnectHint = config.reconnect

    @Volatile
    private var socket: InboxSocket? = null

    /** Reconnect now instead of waiting out the backoff (foreground, network back). */
    fun wake() {
        wakeUps.trySend(Unit)
    }

    fun close() {
        socket?.close(1000, "stopped")
        socket = null
    }

    fun drop() {
        socket?.cancel()
    }

    private sealed class Event {
        object Opened : Event()
        class Message(val text: String) : Event()
        class Closed(val code: Int, val reason: String, val error: Throwable?, val status: Int?) : Event()
    }

    /** Polling only (no socket). */
    suspend fun pollOnly() {
        setStatus(Status.POLLING, null)
        pollLoop()
    }

    suspend fun run() = coroutineScope {
        var attempt = 0
        var poller: Job? = null
        var lastImmediate = false
        setStatus(Status.CONNECTING, null)
        while (true) {
            val events = Channel<Event>(Channel.UNLIMITED)
            var token: String? = null
            var opened = false
            var reason: Throwable? = null
            var closed: Event.Closed? = null
            try {
                token = try {
                    tokens.current()
                } catch (e: CancellationException) {
                    throw e
                } catch (e: Exception) {
                    throw StreamException("token", null, null, "getToken() failed: ${e.message}", e)
                }
                val listener = object : SocketListener {
                    override fun onOpen(protocol: String?) {
                        events.trySend(Event.Opened)
                    }

                    override fun onMessage(text: String) {
                        events.trySend(Event.Message(text))
                    }

                    override fun onClosed(code: Int, reason: String, error: Throwable?, status: Int?) {
                        events.trySend(Event.Closed(code, reason, error, status))
                    }
                }
                socket = try {
                    transport.openSocket("$wsUrl/v1/notifications/stream", listOf("inbox.v1", "auth.$token"), listener)
                } catch (e: CancellationException) {
                    throw e
                } catch (e: Exception) {
                    // A runtime without WebSocket, a blocked connect (CSP, a proxy): poll instead.
                    throw StreamException("websocket_unavailable", null, null, e.message ?: e.toString(), e)
                }
                for (ev in events) {
                    when (ev) {
                        is Event.Opened -> {
                            opened = true
                            attempt = 0
                            poller?.cancel()
                            poller = null
                            wakeUps.tryReceive() // a wake-up from before is spent
                            setStatus(Status.LIVE, null)
                            onOpen()
                        }
                        is Event.Message -> onMessage(ev.text)
                        is Event.Closed -> {
                            closed = ev
                            reason = StreamException(if (opened) "stream_closed" else "stream_refused", ev.code, ev.status, ev.reason, ev.error)
                            break
                        }
                    }
                }
            } catch (e: CancellationException) {
                socket?.cancel()
                throw e
            } catch (e: StreamException) {
                reason = e // the socket could not be made, or getToken() failed
            }
            socket = null
            // A 4001 close: the server says the token expired. Refresh, reconnect at once (once in a
            // row: a server that keeps closing gets the backoff). A refused upgrade refreshes
            // nothing: HTTP requests meet the 401 if the token is bad.
            var now = false
            if (token != null && opened && closed?.code == 4001) {
                try {
                    tokens.refresh(token)
                    now = !lastImmediate
                } catch (e: CancellationException) {
                    throw e
                } catch (e: Exception) {
                    reason = StreamException("token", 4001, null, "getToken() failed: ${e.message}", e)
                }
            }
            lastImmediate = now
            setStatus(Status.POLLING, reason)
            if (poller == null) poller = launch { pollLoop() }
            attempt = if (opened) 1 else attempt + 1
            if (!now) {
                val timer = launch {
                    clock.sleep(fullJitter(hint.baseMs, hint.maxMs, attempt - 1, config.random))
                    wakeUps.trySend(Unit)
                }
                wakeUps.receive()
                timer.cancel()
            }
        }
    }

    private suspend fun pollLoop() {
        var interval = config.pollMs
        while (true) {
            clock.sleep(interval)
            interval = if (poll() == null) config.pollMs else minOf(interval * 2, config.pollMaxMs)
        }
    }
}
