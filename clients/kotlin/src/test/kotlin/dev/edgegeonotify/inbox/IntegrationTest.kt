package dev.edgegeonotify.inbox

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File
import java.nio.file.Files
import java.util.Base64
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicInteger
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * The SDK against the compiled worker in workerd with the local stack (real redis-server behind
 * the REST bridge, the Data API emulator), started by tests/js/kotlin_stack.mjs. No sleeps:
 * every wait is on an observable condition (the client's state, the stack's counters, the
 * server's answer), bounded by a timeout that only fires when something is broken.
 */
class IntegrationTest {
    private val env = System.getenv()
    private val base = env["INBOX_BASE_URL"] ?: error("INBOX_BASE_URL is not set (run clients/kotlin/build.sh)")
    private val http = OkHttpTransport()
    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
    private val clients = ArrayList<InboxClient>()

    @After
    fun tearDown() {
        clients.forEach { it.stop() }
        scope.cancel()
        runBlocking { stack("data", "DELETE", "/__faults") }
    }

    companion object {
        private val seq = AtomicInteger()
        private val run = System.nanoTime().toString(36)
    }

    // ------------------------------------------------------------------ helpers

    /** A user token signed like the app backend would (HS256, the worker's test setup). */
    private fun mint(sub: String, ttlSeconds: Long = 600): String {
        val b64 = Base64.getUrlEncoder().withoutPadding()
        val now = System.currentTimeMillis() / 1000
        val header = b64.encodeToString("""{"alg":"HS256","typ":"JWT"}""".toByteArray())
        val claims = b64.encodeToString(
            jsonText(mapOf("sub" to sub, "iss" to env["INBOX_AUTH_ISSUER"], "aud" to env["INBOX_AUTH_AUDIENCE"], "iat" to now, "exp" to now + ttlSeconds, "jti" to "t${seq.incrementAndGet()}")).toByteArray(),
        )
        val mac = Mac.getInstance("HmacSHA256").apply { init(SecretKeySpec(env["INBOX_AUTH_SECRET"]!!.toByteArray(), "HmacSHA256")) }
        return "$header.$claims." + b64.encodeToString(mac.doFinal("$header.$claims".toByteArray()))
    }

    private fun user(name: String) = "$name-$run"

    /** The app backend creates (or merges into) an item, with the service key. */
    private suspend fun create(owner: String, itemKey: String, sender: String = "s${seq.incrementAndGet()}") {
        val n = seq.incrementAndGet()
        val body = jsonText(
            mapOf(
                "owner" to owner, "itemKey" to itemKey, "serviceType" to "feed", "categoryType" to "social",
                "notificationType" to "like", "templateType" to "default", "eventId" to "ev-$run-$n",
                "sender" to mapOf("id" to sender, "name" to "S$n"), "createdTimeMsec" to System.currentTimeMillis(),
            ),
        )
        val r = http.execute(
            HttpRequest("POST", "$base/v1/notifications/events", mapOf("Authorization" to "Bearer ${env["INBOX_SERVICE_TOKEN"]}", "Content-Type" to "application/json"), body),
        )
        assertTrue("create $itemKey: ${r.status} ${r.body}", r.status == 201 || r.status == 200)
    }

    private suspend fun retract(owner: String, itemKey: String, senderId: String) {
        val r = http.execute(
            HttpRequest(
                "POST", "$base/v1/notifications/retractions",
                mapOf("Authorization" to "Bearer ${env["INBOX_SERVICE_TOKEN"]}", "Content-Type" to "application/json"),
                jsonText(mapOf("owner" to owner, "itemKey" to itemKey, "senderId" to senderId)),
            ),
        )
        assertEquals("retract $itemKey: ${r.body}", 200, r.status)
    }

    private suspend fun stack(which: String, method: String, path: String, body: Any? = null): Map<String, Any?> {
        val url = (if (which == "data") env["INBOX_DATA_API_URL"] else env["INBOX_REDIS_REST_URL"])!!
        val r = http.execute(HttpRequest(method, url + path, mapOf("Content-Type" to "application/json"), body?.let { jsonText(it) }))
        assertEquals("stack $method $path: ${r.body}", 200, r.status)
        return plain(parseObject(r.body)).asObj()
    }

    /** Data API requests by action since the last reset, once nothing is in flight. */
    private suspend fun dataCalls(): Map<String, Any?> {
        repeat(2000) {
            val s = stack("data", "GET", "/__stats")
            if (s["in_flight"] == 0L) return s.obj("requests")
            delay(10) // polling an observable counter, not waiting for time to pass
        }
        error("the Data API never went idle")
    }

    /** A transport that counts WebSocket opens and can hold new ones until released. */
    private class Gated(private val inner: InboxTransport) : InboxTransport {
        val protocols = CopyOnWriteArrayList<List<String>>()
        val requests = CopyOnWriteArrayList<String>()

        @Volatile
        var gate: CountDownLatch? = null
        override suspend fun execute(request: HttpRequest): HttpResponse {
            requests.add("${request.method} ${request.url}")
            return inner.execute(request)
        }
        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket {
            this.protocols.add(protocols)
            val g = gate ?: return inner.openSocket(url, protocols, listener)
            // Held: the socket opens only once the test releases the gate.
            var real: InboxSocket? = null
            var cancelled = false
            val t = Thread {
                g.await()
                synchronized(this) { if (!cancelled) real = inner.openSocket(url, protocols, listener) }
            }
            t.isDaemon = true
            t.start()
            return object : InboxSocket {
                override fun send(text: String) = real?.send(text) ?: false
                override fun close(code: Int, reason: String) = cancel()
                override fun cancel() {
                    synchronized(this@Gated) { cancelled = true }
                    real?.cancel()
                }
            }
        }
    }

    /** A transport whose network can be switched off: every request fails as offline. */
    private class Switchable(private val inner: InboxTransport) : InboxTransport {
        @Volatile
        var online = true
        val sent = CopyOnWriteArrayList<HttpRequest>()
        override suspend fun execute(request: HttpRequest): HttpResponse {
            sent.add(request)
            if (!online) throw java.io.IOException("offline (test)")
            return inner.execute(request)
        }

        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener) = inner.openSocket(url, protocols, listener)
    }

    /**
     * A TCP proxy in front of the worker whose WebSocket connections can be frozen: bytes stop
     * flowing both ways and nothing is closed, as on a link that died during sleep.
     */
    private class FreezingProxy(target: java.net.URI) : AutoCloseable {
        private val server = java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())
        val url = "http://127.0.0.1:${server.localPort}"
        private val frozen = java.util.concurrent.ConcurrentHashMap.newKeySet<java.util.concurrent.atomic.AtomicBoolean>()
        private val sockets = CopyOnWriteArrayList<java.net.Socket>()
        private val webSockets = CopyOnWriteArrayList<java.util.concurrent.atomic.AtomicBoolean>()

        init {
            Thread {
                while (!server.isClosed) {
                    val inbound = try { server.accept() } catch (e: java.io.IOException) { break }
                    val outbound = java.net.Socket(target.host, target.port)
                    sockets.add(inbound)
                    sockets.add(outbound)
                    val stop = java.util.concurrent.atomic.AtomicBoolean(false)
                    pump(inbound, outbound, stop, sniff = true)
                    pump(outbound, inbound, stop, sniff = false)
                }
            }.apply { isDaemon = true }.start()
        }

        private fun pump(from: java.net.Socket, to: java.net.Socket, stop: java.util.concurrent.atomic.AtomicBoolean, sniff: Boolean) {
            Thread {
                val buf = ByteArray(16 * 1024)
                var first = sniff
                try {
                    while (true) {
                        val n = from.getInputStream().read(buf)
                        if (n < 0) break
                        if (first) {
                            first = false
                            if (String(buf, 0, n).contains("Upgrade: websocket", ignoreCase = true)) webSockets.add(stop)
                        }
                        while (stop.get()) Thread.sleep(5) // frozen: hold the bytes, close nothing
                        to.getOutputStream().write(buf, 0, n)
                    }
                } catch (e: Exception) {
                    // either side went away
                }
                if (!stop.get()) runCatching { to.shutdownOutput() }
            }.apply { isDaemon = true }.start()
        }

        /** Freezes every WebSocket connection open now (HTTP connections keep flowing). */
        fun freezeWebSockets(): Int {
            webSockets.forEach { it.set(true) }
            return webSockets.size
        }

        override fun close() {
            server.close()
            sockets.forEach { runCatching { it.close() } }
        }
    }

    private fun client(
        sub: String,
        transport: InboxTransport = http,
        persistence: InboxPersistence = MemoryPersistence(),
        tokens: MutableList<String>? = null,
        config: InboxConfig = InboxConfig(pageSize = 100),
        getToken: (suspend (Boolean) -> String)? = null,
    ): InboxClient {
        val c = InboxClient(base, sub, getToken ?: { _ -> mint(sub).also { tokens?.add(it) } }, scope, transport, persistence, config)
        clients.add(c)
        return c
    }

    private suspend fun InboxClient.until(what: String, pred: (InboxState) -> Boolean): InboxState = try {
        withTimeout(30_000) { awaitState(pred) }
    } catch (e: Exception) {
        throw AssertionError("timed out waiting for $what; state: ${state.value.view.items.map { it.itemKey }} ${state.value.counts} ${state.value.status}", e)
    }

    private fun InboxState.keys() = items.map { it.itemKey }

    // ------------------------------------------------------------------ cases

    @Test
    fun twoClientsOfOneUserConverge() = runBlocking {
        val u = user("conv")
        create(u, "a")
        create(u, "b")
        create(u, "c")
        create(u, "e", sender = "eve")
        val phone = client(u)
        val laptop = client(u)
        phone.start()
        laptop.start()
        val all = listOf("e", "c", "b", "a")
        phone.until("phone loaded") { it.keys() == all && it.status == Status.LIVE }
        laptop.until("laptop loaded") { it.keys() == all && it.status == Status.LIVE }
        // Phone: read a, delete b. Backend: a new item d, a second sender merged into c, and
        // e's only sender retracted (the item goes).
        assertEquals(WriteResult.Applied, phone.mark("a", Flag.READ))
        assertEquals(WriteResult.Applied, phone.remove("b"))
        create(u, "d")
        create(u, "c")
        retract(u, "e", "eve")
        // The laptop learns all of it from badges + the change feed, without a reload.
        val want = listOf("c", "d", "a")
        laptop.until("laptop converged") { s ->
            s.keys() == want && s.items.first { it.itemKey == "a" }.read && s.items.first { it.itemKey == "c" }.originsCount == 2L && s.unread == 2L
        }
        // Laptop: everything seen; the phone's badge clears too.
        assertEquals(WriteResult.Applied, laptop.bulk(BulkAction.SEEN))
        val p = phone.until("phone converged") { s ->
            s.keys() == want && s.items.first { it.itemKey == "c" }.originsCount == 2L && s.unread == 2L && s.unseen == 0L && s.items.all { it.seen }
        }
        val l = laptop.until("laptop settled") { it.unseen == 0L && it.view.pending == 0 }
        assertEquals(p.items, l.items)
        assertEquals(p.counts, l.counts)
        // And both equal a fresh load.
        val fresh = client(u)
        fresh.load()
        assertEquals(fresh.state.value.items, l.items)
        assertEquals(fresh.state.value.counts, l.counts)
    }

    @Test
    fun aCreateReachesTheBadgeOverTheWebSocket() = runBlocking {
        val u = user("badge")
        val gated = Gated(http)
        val c = client(u, transport = gated)
        c.start()
        c.until("live") { it.status == Status.LIVE && it.ready }
        assertEquals(listOf("inbox.v1"), gated.protocols.single().take(1))
        assertTrue(gated.protocols.single()[1].startsWith("auth."))
        val seen = gated.requests.size
        create(u, "x1")
        val s = c.until("the badge and the item") { it.unread == 1L && it.keys() == listOf("x1") }
        assertEquals(1L, s.unseen)
        // The push carries the badge, so the state can match before the counts request is
        // recorded: wait for that request (or fail on the timeout), then check the sequence.
        val counts = "GET $base/v1/notifications/unread-count"
        withTimeout(30_000) { while (gated.requests.drop(seen).lastOrNull() != counts) delay(10) }
        // Learned from the push, then the change feed: no reload.
        val after = gated.requests.drop(seen)
        // The change feed, then the counts (the feed carries none): no reload.
        assertTrue(after.toString(), after.size >= 2 && after.dropLast(1).all { it.startsWith("GET $base/v1/notifications/changes?") })
        assertEquals(counts, after.last())
    }

    @Test
    fun aDroppedSocketReconnectsWithAFreshTokenAndCatchesUp() = runBlocking {
        val u = user("drop")
        create(u, "before")
        val gated = Gated(http)
        val tokens = CopyOnWriteArrayList<String>()
        val c = client(u, transport = gated, tokens = tokens)
        c.start()
        c.until("live") { it.status == Status.LIVE && it.keys() == listOf("before") }
        val opens = gated.protocols.size
        // The network goes away; the reconnect is held until the item below exists.
        gated.gate = CountDownLatch(1)
        c.dropConnection()
        c.until("noticed the drop") { it.status == Status.POLLING }
        create(u, "during")
        val held = gated.gate!!
        withTimeout(30_000) { while (gated.protocols.size <= opens) delay(10) } // the held reconnect
        gated.gate = null
        held.countDown()
        c.until("caught up") { it.status == Status.LIVE && it.keys() == listOf("during", "before") && it.unread == 2L }
        // One token for HTTP and every connect: a reconnect is no reason to ask for another.
        val connectTokens = gated.protocols.map { it[1].removePrefix("auth.") }
        assertEquals(listOf(tokens.single()), connectTokens.distinct())
    }

    @Test
    fun aSocketThatGoesSilentIsNoticedByItsPingsAndReplaced() = runBlocking {
        val u = user("silent")
        FreezingProxy(java.net.URI(base)).use { proxy ->
            val pinging = OkHttpTransport(okhttp3.OkHttpClient.Builder().pingInterval(200, java.util.concurrent.TimeUnit.MILLISECONDS).build())
            val c = InboxClient(proxy.url, u, { _ -> mint(u) }, scope, pinging, MemoryPersistence(), InboxConfig(pageSize = 100))
            clients.add(c)
            c.start()
            c.until("live") { it.status == Status.LIVE && it.ready }
            assertEquals(1, proxy.freezeWebSockets())
            // No close arrives; the missing pong is what tells.
            c.until("the dead link noticed") { it.status != Status.LIVE }
            c.until("live again") { it.status == Status.LIVE }
            create(u, "after")
            c.until("the new socket carries badges") { it.unread == 1L && it.keys() == listOf("after") }
        }
        Unit
    }

    @Test
    fun aTokenThatExpiresWhileInUseIsRefreshed() = runBlocking {
        val u = user("exp")
        create(u, "e1")
        val issued = CopyOnWriteArrayList<String>()
        val refreshes = AtomicInteger()
        // The app's own cache hands out its first token (it lives 2 s) until asked to refresh, as
        // one with a skewed clock would; a refreshed token lives 10 min.
        val c = client(u, getToken = { refresh ->
            if (refresh) refreshes.incrementAndGet()
            if (refresh || issued.isEmpty()) issued.add(mint(u, if (issued.isEmpty()) 2 else 600))
            issued.last()
        })
        c.load()
        val first = issued.single()
        // Wait until the server itself refuses the first token (observable; no fixed sleep).
        withTimeout(30_000) {
            while (http.execute(HttpRequest("GET", "$base/v1/notifications/unread-count", mapOf("Authorization" to "Bearer $first"), null)).status != 401) delay(50)
        }
        create(u, "e2")
        c.pull() // 401 token_expired → getToken(refresh = true) → the same request again
        assertEquals(listOf("e2", "e1"), c.state.value.keys())
        assertEquals(2, issued.size)
        assertEquals(1, refreshes.get())
        // The live badge connects with the token HTTP uses: no second refresh.
        c.start()
        c.until("live") { it.status == Status.LIVE }
        assertEquals(2, issued.size)
        assertEquals(1, refreshes.get())
    }

    @Test
    fun aBackendFailureKeepsAMarkQueuedUntilTheBackendIsBack() = runBlocking {
        val u = user("fault")
        create(u, "f1")
        create(u, "f2")
        val c = client(u, config = InboxConfig(pageSize = 100, retries = 1))
        c.load()
        // Every mark write fails in the Data API: the worker answers 503 (with Retry-After).
        stack("data", "POST", "/__faults", mapOf("rules" to listOf(mapOf("match" to "updateOne", "mode" to "fail_before", "status" to 503))))
        val r = c.mark("f1", Flag.READ)
        val fired = (stack("data", "GET", "/__faults").list("rules").single().asObj())["fired"]
        assertEquals("one try and one resend after Retry-After", 2L, fired)
        stack("data", "DELETE", "/__faults")
        // Transient: kept (shown, pending), never rolled back; the error names the request.
        val err = (r as WriteResult.Queued).error as InboxException
        assertEquals("backend_unavailable", err.code)
        assertTrue("the error names the request", err.requestId != null)
        val after = c.state.value
        assertEquals(err, after.lastError)
        assertTrue(after.items.first { it.itemKey == "f1" }.read)
        assertEquals(1, after.view.pending)
        // With the backend back, the next trigger sends it (same key) and lastError clears.
        c.flush()
        assertEquals(0, c.state.value.view.pending)
        assertEquals(null, c.state.value.lastError)
        val fresh = client(u)
        fresh.load()
        assertTrue("the server has it", fresh.state.value.items.first { it.itemKey == "f1" }.read)
    }

    @Test
    fun aMarkMadeOfflineIsQueuedAndSentWithItsIdempotencyKeyWhenBack() = runBlocking {
        val u = user("offline")
        create(u, "o1")
        create(u, "o2")
        val net = Switchable(http)
        val c = client(u, transport = net)
        c.start(live = false)
        c.until("loaded") { it.keys() == listOf("o2", "o1") }
        net.online = false
        assertTrue(c.mark("o1", Flag.READ) is WriteResult.Queued)
        // Shown at once, and pending.
        val s = c.state.value
        assertTrue(s.items.first { it.itemKey == "o1" }.read)
        assertEquals(1, s.view.pending)
        assertEquals(1L, s.unread)
        val key = net.sent.last().headers["Idempotency-Key"]!!
        net.online = true
        c.onForeground()
        c.until("the queued mark confirmed") { it.view.pending == 0 }
        val resent = net.sent.filter { it.url.endsWith("/v1/notifications/mark") }
        assertTrue(resent.size >= 2)
        assertEquals(listOf(key), resent.map { it.headers["Idempotency-Key"] }.distinct())
        val fresh = client(u)
        fresh.load()
        assertTrue("the server has it", fresh.state.value.items.first { it.itemKey == "o1" }.read)
    }

    @Test
    fun aRestartFromPersistedStatePullsOnlyTheChangesSinceItsSync() = runBlocking {
        val u = user("cold")
        for (i in 0 until 30) create(u, "k$i")
        val dir = Files.createTempDirectory("inbox-cold").toFile()
        try {
            val first = client(u, persistence = FilePersistence(dir))
            first.start(live = false)
            first.until("loaded") { it.items.size == 30 }
            first.awaitPersisted()
            first.stop()
            // While the app is closed: two new items, one deleted on another device.
            create(u, "new1")
            create(u, "new2")
            val other = client(u)
            other.load()
            assertEquals(WriteResult.Applied, other.remove("k3"))
            stack("data", "POST", "/__stats/reset")

            val second = client(u, persistence = FilePersistence(dir))
            second.start(live = false)
            val s = second.state.value
            assertEquals(31, s.items.size)
            assertEquals(listOf("new2", "new1"), s.keys().take(2))
            assertFalse("k3" in s.keys())
            // The change feed (one Data API `find`), then the counts it does not carry (one
            // `aggregate`); no list.
            assertEquals(mapOf("find" to 1L, "aggregate" to 1L), dataCalls())
            assertEquals(2L, second.requestsSent)
            val reload = client(u)
            reload.load()
            assertEquals(reload.state.value.items, s.items)
            assertNotEquals(0L, reload.bytesReceived)
            assertTrue("the pull read fewer bytes than a reload", second.bytesReceived < reload.bytesReceived)
        } finally {
            File(dir.path).deleteRecursively()
        }
    }
}
