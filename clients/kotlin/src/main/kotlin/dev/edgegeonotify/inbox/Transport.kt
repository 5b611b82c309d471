package dev.edgegeonotify.inbox

import kotlinx.coroutines.suspendCancellableCoroutine
import okhttp3.Call
import okhttp3.Callback
import okhttp3.MediaType
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody
import okhttp3.Response
import okhttp3.WebSocket
import okhttp3.WebSocketListener
import java.io.IOException
import java.util.concurrent.TimeUnit
import kotlin.coroutines.resume
import kotlin.coroutines.resumeWithException

/** One HTTP request the client makes. Header names as sent. */
class HttpRequest(val method: String, val url: String, val headers: Map<String, String>, val body: String?)

/** One HTTP answer. [headers] are keyed by lower-case name. */
class HttpResponse(val status: Int, val headers: Map<String, String>, val body: String) {
    fun header(name: String): String? = headers[name.lowercase()]
}

/** Events of one WebSocket, called from the transport's threads. */
interface SocketListener {
    fun onOpen(protocol: String?)
    fun onMessage(text: String)

    /** The socket ended: closed by either side, or failed ([error] set; [status] is the HTTP
     *  status of a refused handshake when there was one). Called once. */
    fun onClosed(code: Int, reason: String, error: Throwable?, status: Int?)
}

/** An open (or opening) WebSocket. */
interface InboxSocket {
    fun send(text: String): Boolean
    fun close(code: Int = 1000, reason: String = "bye")

    /** Drops the connection at once, without a close handshake (what a dead network does). */
    fun cancel()
}

/**
 * What the client needs from the network: plain HTTP calls and a WebSocket with subprotocols.
 * [OkHttpTransport] is the default; an app that already has a configured OkHttpClient (pinning,
 * proxies, interceptors) passes it there, and one with another stack implements this.
 */
interface InboxTransport {
    /** Sends [request]; throws [IOException] when no answer arrived (offline, reset, timeout). */
    suspend fun execute(request: HttpRequest): HttpResponse

    fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket
}

/**
 * [InboxTransport] over OkHttp 3.x (binary-compatible with 4.x). The default client pings the
 * WebSocket every 20 s: a link that died without a close (sleep, a NAT that forgot the flow) is
 * noticed when a pong is missing, and the client reconnects. An app passing its own client
 * should set `pingInterval` too.
 */
class OkHttpTransport(
    private val client: OkHttpClient = OkHttpClient.Builder().pingInterval(20, TimeUnit.SECONDS).build(),
) : InboxTransport {
    private val json = MediaType.parse("application/json")

    override suspend fun execute(request: HttpRequest): HttpResponse {
        val b = Request.Builder().url(request.url)
        for ((k, v) in request.headers) b.header(k, v)
        val body = request.body?.let { RequestBody.create(json, it) }
        b.method(request.method, body ?: if (request.method == "POST" || request.method == "PUT") RequestBody.create(json, "") else null)
        val call = client.newCall(b.build())
        return suspendCancellableCoroutine { cont ->
            cont.invokeOnCancellation { call.cancel() }
            call.enqueue(object : Callback {
                override fun onFailure(call: Call, e: IOException) {
                    if (cont.isActive) cont.resumeWithException(e)
                }

                override fun onResponse(call: Call, response: Response) {
                    val r = try {
                        response.use {
                            val headers = HashMap<String, String>()
                            for (name in it.headers().names()) headers[name.lowercase()] = it.header(name) ?: ""
                            HttpResponse(it.code(), headers, it.body()?.string() ?: "")
                        }
                    } catch (e: IOException) {
                        if (cont.isActive) cont.resumeWithException(e)
                        return
                    }
                    if (cont.isActive) cont.resume(r)
                }
            })
        }
    }

    override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket {
        val req = Request.Builder().url(url).header("Sec-WebSocket-Protocol", protocols.joinToString(", ")).build()
        val ws = client.newWebSocket(req, object : WebSocketListener() {
            @Volatile
            private var ended = false

            private fun end(code: Int, reason: String, error: Throwable?, status: Int?) {
                if (ended) return
                ended = true
                listener.onClosed(code, reason, error, status)
            }

            override fun onOpen(webSocket: WebSocket, response: Response) {
                listener.onOpen(response.header("Sec-WebSocket-Protocol"))
            }

            override fun onMessage(webSocket: WebSocket, text: String) = listener.onMessage(text)

            override fun onClosing(webSocket: WebSocket, code: Int, reason: String) {
                webSocket.close(1000, null)
                end(code, reason, null, null)
            }

            override fun onClosed(webSocket: WebSocket, code: Int, reason: String) = end(code, reason, null, null)

            override fun onFailure(webSocket: WebSocket, t: Throwable, response: Response?) {
                end(1006, t.message ?: "failure", t, response?.code())
                response?.close()
            }
        })
        return object : InboxSocket {
            override fun send(text: String) = ws.send(text)
            override fun close(code: Int, reason: String) {
                ws.close(code, reason)
            }

            override fun cancel() = ws.cancel()
        }
    }
}
