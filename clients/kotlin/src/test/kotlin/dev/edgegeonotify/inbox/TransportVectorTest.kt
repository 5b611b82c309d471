package dev.edgegeonotify.inbox

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.launch
import org.json.JSONArray
import org.json.JSONObject
import org.junit.Assert.assertEquals
import org.junit.Assert.fail
import org.junit.Test
import org.junit.runner.RunWith
import org.junit.runners.Parameterized
import java.io.File
import java.io.IOException
import java.net.URLDecoder
import kotlin.random.Random

/**
 * Every file of clients/conformance/transport (the same files the TypeScript SDK runs), on a
 * [Sim] clock with a scripted transport: the format and the model are in
 * clients/conformance/README.md ("The client model", "Transport vectors"). A step or key this
 * runner does not know fails the file.
 */
@RunWith(Parameterized::class)
class TransportVectorTest(private val name: String, private val file: File) {
    companion object {
        const val EPOCH_MS = 1_796_083_200_000L
        const val DAY_MS = 24 * 3600 * 1000L

        @JvmStatic
        @Parameterized.Parameters(name = "{0}")
        fun files(): List<Array<Any>> {
            val dir = File(repoRoot(), "clients/conformance/transport")
            val files = dir.listFiles { f -> f.name.endsWith(".json") }?.sortedBy { it.name }.orEmpty()
            check(files.isNotEmpty()) { "no vectors in $dir" }
            return files.map { arrayOf<Any>(it.nameWithoutExtension, it) }
        }
    }

    /** The jitter source of the vectors: always 0.5. */
    private object Half : Random() {
        override fun nextBits(bitCount: Int): Int = 1 shl (bitCount - 1)
        override fun nextDouble(): Double = 0.5
    }

    private class Req(val request: HttpRequest, val at: Long, val answer: CompletableDeferred<HttpResponse>)
    private class Sock(val url: String, val protocols: List<String>, val at: Long, val listener: SocketListener)

    private val sim = Sim(EPOCH_MS)
    private val requests = ArrayList<Req>()
    private val sockets = ArrayList<Sock>()
    private var socketThrows = false
    private var step = ""

    private val transport = object : InboxTransport {
        override suspend fun execute(request: HttpRequest): HttpResponse {
            val open = requests.filter { !it.answer.isCompleted }
            if (open.isNotEmpty()) fail("$step: a second request while one is unanswered: ${request.method} ${request.url} (open: ${open.first().request.url})")
            val r = Req(request, sim.t, CompletableDeferred())
            requests.add(r)
            try {
                return r.answer.await()
            } finally {
                // A cancelled request (the client stopped) is no longer in flight.
                if (!r.answer.isCompleted) r.answer.completeExceptionally(IOException("cancelled"))
            }
        }

        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket {
            if (socketThrows) throw SecurityException("connect-src blocks it (vector)")
            sockets.add(Sock(url, protocols, sim.t, listener))
            return object : InboxSocket {
                override fun send(text: String) = true
                override fun close(code: Int, reason: String) = Unit
                override fun cancel() = Unit
            }
        }
    }

    @Test
    fun vector() {
        val doc = parseObject(file.readText())
        val known = setOf("name", "description", "options", "persisted", "tokens", "tokenErrors", "webSocket", "steps")
        doc.keyList().firstOrNull { it !in known }?.let { fail("$name: unknown key '$it' (update the Kotlin runner)") }
        val o = doc.objOrNull("options") ?: JSONObject()
        o.keyList().firstOrNull { it !in setOf("baseUrl", "user", "live", "pollMs", "attempts", "baseMs", "maxMs", "maxWaitMs", "pageSize") }
            ?.let { fail("$name: unknown option '$it'") }
        val baseUrl = o.optString("baseUrl", "https://api.test")
        val user = o.optString("user", "u1")
        val live = o.optBoolean("live", false)
        val config = InboxConfig(
            pageSize = o.optInt("pageSize", 20), retries = o.optInt("attempts", 3), retryBaseMs = o.optLong("baseMs", 250),
            retryMaxMs = o.optLong("maxMs", 8000), maxWaitMs = o.optLong("maxWaitMs", 60_000), pollMs = o.optLong("pollMs", 3_600_000),
            reconnect = ReconnectHint(1000, 30_000, "full"), random = Half, clock = sim,
        )
        socketThrows = doc.optString("webSocket") == "throws"
        val persistence = MemoryPersistence()
        doc.objOrNull("persisted")?.let { p -> sim.scope.launch { persistence.write("inbox.$user", p.toString()) } }
        val tokenScript = doc.optJSONArray("tokens")?.let { a -> List(a.length()) { a.getString(it) } } ?: listOf("t1")
        val tokenErrors = doc.optJSONArray("tokenErrors")?.let { a -> List(a.length()) { a.getJSONArray(it).getLong(0) to a.getJSONArray(it).getLong(1) } }.orEmpty()
        val tokenCalls = ArrayList<Boolean>()
        var tokenIndex = 0
        val getToken: suspend (Boolean) -> String = { refresh ->
            tokenCalls.add(refresh)
            if (tokenErrors.any { (from, to) -> sim.t in from until to }) throw IllegalStateException("identity provider down (vector)")
            tokenScript[minOf(tokenIndex++, tokenScript.size - 1)]
        }
        fun newClient() = InboxClient(baseUrl, user, getToken, sim.scope, transport, persistence, config)
        var client = newClient()
        val results = LinkedHashMap<String, WriteResult>()
        val opNames = HashMap<String, String>() // op id → name
        doc.objOrNull("persisted")?.optJSONArray("pending")?.let { a -> a.objects().forEach { opNames[it.str("id")] = it.str("id") } }
        val rollbacks = ArrayList<String>()
        fun watch(c: InboxClient) = sim.scope.launch { c.rollbacks.collect { rollbacks.add(opNames[it.op.id] ?: it.op.id) } }
        var watcher = watch(client)
        val vars = HashMap<String, String>()
        var socket: Sock? = null
        var socketsTaken = 0
        var taken = 0
        sim.settle()

        fun untilTaken(what: String, has: () -> Boolean) {
            sim.settle()
            while (!has()) {
                val next = sim.nextTimerAt() ?: throw AssertionError("$step: no $what and nothing scheduled")
                if (next > DAY_MS) fail("$step: no $what within 24 h")
                sim.fireNext()
            }
        }

        for ((i, s) in doc.arr("steps").objects().withIndex()) {
            step = "$name step $i ${s.toString().take(120)}"
            when {
                s.has("call") -> {
                    val c = client
                    val call = s.str("call")
                    val op = s.strOrNull("op")
                    when (call) {
                        "start" -> sim.scope.launch { c.start(live) }
                        "stop" -> c.stop()
                        "resume" -> c.onForeground()
                        "online" -> c.onOnline()
                        "flush" -> sim.scope.launch { runCatching { c.flush() } }
                        "pull" -> sim.scope.launch { runCatching { c.pull() } }
                        "mark", "bulk", "remove" -> {
                            val before = c.pendingOpIds().toSet()
                            sim.scope.launch {
                                val r = when (call) {
                                    "mark" -> c.mark(s.str("itemKey"), Flag.of(s.strOrNull("flag") ?: "read"), s.boolOr("value", true))
                                    "bulk" -> c.bulk(BulkAction.of(s.str("action")), s.strOrNull("category"))
                                    else -> c.remove(s.str("itemKey"))
                                }
                                results[op ?: "?"] = r
                            }
                            sim.settle()
                            val added = c.pendingOpIds().filter { it !in before }
                            if (op != null) added.forEach { opNames[it] = op }
                        }
                        "restart" -> {
                            c.stop()
                            sim.scope.launch { c.awaitPersisted() }
                            sim.settle()
                            watcher.cancel()
                            client = newClient()
                            watcher = watch(client)
                            val n = client
                            sim.scope.launch { n.start(live) }
                        }
                        else -> fail("$step: unknown call '$call'")
                    }
                    sim.settle()
                }
                s.has("request") -> {
                    untilTaken("request") { requests.size > taken }
                    val r = requests[taken++]
                    checkRequest(s.obj("request"), r, baseUrl, vars)
                    if (s.has("at")) assertEquals("$step: sent at", s.getLong("at"), r.at)
                    val a = s.obj("answer")
                    val deliver = {
                        if (a.optBoolean("networkError")) {
                            r.answer.completeExceptionally(IOException("network (vector)"))
                        } else {
                            val h = a.optJSONObject("headers")?.let { hs -> hs.keyList().associate { it.lowercase() to hs.getString(it) } }.orEmpty()
                            r.answer.complete(HttpResponse(a.getInt("status"), h, a.opt("body")?.toString() ?: ""))
                        }
                        Unit
                    }
                    if (a.has("delayMs")) sim.schedule(a.getLong("delayMs"), deliver) else deliver()
                    sim.settle()
                }
                s.has("socket") -> when (val what = s.str("socket")) {
                    "connect" -> {
                        untilTaken("socket construction") { sockets.size > socketsTaken }
                        val k = sockets[socketsTaken++]
                        socket = k
                        assertEquals("$step: url", baseUrl.replaceFirst("https", "wss").replaceFirst("http", "ws") + "/v1/notifications/stream", k.url)
                        assertEquals("$step: protocols", listOf("inbox.v1", "auth.${s.str("token")}"), k.protocols)
                        if (s.has("at")) assertEquals("$step: made at", s.getLong("at"), k.at)
                    }
                    "open" -> socket!!.listener.onOpen("inbox.v1").also { sim.settle() }
                    "close" -> socket!!.listener.onClosed(s.getInt("code"), "", null, null).also { sim.settle() }
                    "refuse" -> socket!!.listener.onClosed(1006, "refused", IOException("upgrade refused (vector)"), null).also { sim.settle() }
                    "message" -> socket!!.listener.onMessage(s.obj("data").toString()).also { sim.settle() }
                    else -> fail("$step: unknown socket action '$what'")
                }
                s.has("advance") -> sim.advance(s.getLong("advance"))
                s.has("quiet") -> {
                    val (r0, k0) = requests.size to sockets.size
                    sim.advance(s.getLong("quiet"))
                    if (requests.size != r0) fail("$step: a request in a quiet period: ${requests.last().request.method} ${requests.last().request.url} at ${requests.last().at}")
                    if (sockets.size != k0) fail("$step: a socket in a quiet period at ${sockets.last().at}")
                }
                s.has("expect") -> {
                    sim.settle()
                    checkState(s.obj("expect"), client, results, rollbacks, tokenCalls)
                }
                else -> fail("$step: unknown step")
            }
        }
        sim.settle()
        if (requests.size > taken) fail("$name: unmatched request at the end: ${requests[taken].request.method} ${requests[taken].request.url}")
        client.stop()
        sim.settle()
    }

    private fun checkRequest(want: JSONObject, r: Req, baseUrl: String, vars: HashMap<String, String>) {
        val got = r.request
        assertEquals("$step: method", want.str("method"), got.method)
        fun split(p: String): Pair<String, Set<String>> {
            val q = p.substringAfter('?', "")
            return p.substringBefore('?') to q.split('&').filter { it.isNotEmpty() }.map { URLDecoder.decode(it, "UTF-8") }.toSet()
        }
        assertEquals("$step: path", split(want.str("path")), split(got.url.removePrefix(baseUrl)))
        want.optJSONObject("headers")?.let { hs ->
            for (h in hs.keyList()) {
                val value = got.headers.entries.firstOrNull { it.key.equals(h, ignoreCase = true) }?.value
                val w = hs.opt(h)
                when {
                    w == JSONObject.NULL -> assertEquals("$step: header $h absent", null, value)
                    w is String && w.startsWith("$") -> {
                        if (value == null) fail("$step: header $h missing")
                        val bound = vars[w]
                        if (bound == null) {
                            if (vars.values.contains(value)) fail("$step: $h = $value, already another variable's")
                            vars[w] = value!!
                        } else {
                            assertEquals("$step: header $h ($w)", bound, value)
                        }
                    }
                    else -> assertEquals("$step: header $h", w, value)
                }
            }
        }
        if (want.has("body")) assertEquals("$step: body", plain(want.opt("body")), got.body?.let { plain(parseObject(it)) })
    }

    private fun code(e: Throwable?): String? = when (e) {
        null -> null
        is InboxError -> e.code
        else -> "unknown:${e::class.simpleName}"
    }

    private fun checkState(e: JSONObject, c: InboxClient, results: Map<String, WriteResult>, rollbacks: List<String>, tokenCalls: List<Boolean>) {
        val st = c.state.value
        for (k in e.keyList()) {
            val want = e.opt(k)
            when (k) {
                "results" -> {
                    val w = plain(want).asObj()
                    val got = results.mapValues { (_, r) ->
                        when (r) {
                            WriteResult.Applied -> mapOf("outcome" to "applied")
                            is WriteResult.Queued -> mapOf("outcome" to "queued", "code" to r.error.code)
                            is WriteResult.Rejected -> mapOf("outcome" to "rejected", "code" to r.error.code)
                        }
                    }
                    // `code` is compared only where the vector gives it.
                    val trimmed = got.mapValues { (n, m) -> if ((w[n] as? Map<*, *>)?.containsKey("code") == true) m else m - "code" }
                    assertEquals("$step: results", w, trimmed)
                }
                "rollbacks" -> assertEquals("$step: rollbacks", plain(want), rollbacks)
                "pending" -> assertEquals("$step: pending", (want as Number).toInt(), st.view.pending)
                "status" -> assertEquals("$step: status", want, st.status.name.lowercase())
                "statusReason" -> assertEquals("$step: statusReason", plain(want), code(st.statusReason))
                "lastError" -> assertEquals("$step: lastError", plain(want), code(st.lastError))
                "tokenCalls" -> assertEquals("$step: tokenCalls", plain(want), tokenCalls)
                "counts" -> assertEquals("$step: counts", Counts.fromJson(want as JSONObject), st.counts)
                "itemKeys" -> assertEquals("$step: itemKeys", plain(want), st.items.map { it.itemKey })
                "items" -> for ((itemKey, fields) in plain(want).asObj()) {
                    val item = st.items.firstOrNull { it.itemKey == itemKey } ?: throw AssertionError("$step: item $itemKey not visible")
                    val json = plain(item.toJson()).asObj()
                    for ((f, v) in fields.asObj()) assertEquals("$step: $itemKey.$f", v, json[f])
                }
                else -> fail("$step: unknown expect key '$k'")
            }
        }
    }

    @Suppress("unused")
    private fun JSONArray.strings() = List(length()) { getString(it) }
}
