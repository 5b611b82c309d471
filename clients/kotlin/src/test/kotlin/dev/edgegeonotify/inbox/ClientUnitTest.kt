package dev.edgegeonotify.inbox

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Assert.assertThrows
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.IOException
import kotlin.random.Random

internal fun testItem(key: String, revision: Long, read: Boolean = false, seen: Boolean = false) = Notification(
    notificationId = "id-$key", itemKey = key, serviceType = "feed", categoryType = "social", notificationType = "like",
    templateType = "default", createdTimeMsec = revision, expireAtMsec = revision + 1_000_000, revision = revision,
    originsCount = 1, origins = listOf(Origin("s-$key", "S", revision)), read = read, seen = seen, archived = false,
    landing = null, messageArguments = emptyMap(), summary = "S liked your post",
)

/**
 * The client's request rules over a scripted transport (pure logic: which requests it makes and
 * what it does with each answer). The same rules against the real worker: IntegrationTest.
 */
class ClientUnitTest {
    private class Scripted(vararg answers: (HttpRequest) -> HttpResponse) : InboxTransport {
        val queue = ArrayDeque(answers.toList())
        val sent = java.util.concurrent.CopyOnWriteArrayList<HttpRequest>()

        /** The answer once [queue] is empty (null: any further request fails the test). */
        @Volatile
        var fallback: ((HttpRequest) -> HttpResponse)? = null

        override suspend fun execute(request: HttpRequest): HttpResponse {
            sent.add(request)
            val next = synchronized(queue) { queue.removeFirstOrNull() } ?: fallback
                ?: throw AssertionError("unexpected request ${request.method} ${request.url}")
            return next(request)
        }

        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket =
            throw AssertionError("no socket in unit tests")
    }

    private fun answer(status: Int, body: String, vararg headers: Pair<String, String>): (HttpRequest) -> HttpResponse =
        { HttpResponse(status, headers.associate { it.first.lowercase() to it.second }, body) }

    private fun err(status: Int, code: String, vararg headers: Pair<String, String>) =
        answer(status, """{"error":{"code":"$code","message":"m"}}""", "X-Request-Id" to "req-$status", *headers)

    private fun page(vararg items: Notification, unread: Long = items.count { !it.read }.toLong()) =
        Json.write(Page(items.toList(), null, Counts(unread, unread), "WzEsIiJd"))

    private val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)

    @After
    fun cancel() = scope.cancel()

    private fun client(t: InboxTransport, tokens: MutableList<String>, persistence: InboxPersistence = MemoryPersistence()): InboxClient {
        var n = 0
        return InboxClient("http://x", "u", { "tok${++n}".also { tokens.add(it) } }, scope, t, persistence, InboxConfig(random = Random(1)))
    }

    @Test
    fun a401GetsOneFreshTokenAndOneRetry() = runBlocking {
        val t = Scripted(err(401, "token_expired"), answer(200, page(testItem("a", 1))), err(401, "token_expired"), err(401, "invalid_token"))
        val tokens = ArrayList<String>()
        val c = client(t, tokens)
        c.load()
        assertEquals(listOf("Bearer tok1", "Bearer tok2"), t.sent.map { it.headers["Authorization"] })
        assertEquals(listOf("a"), c.state.value.items.map { it.itemKey })
        // The fresh token is kept; a second 401 after a refresh is the caller's error.
        val e = assertThrows(InboxException::class.java) { runBlocking { c.refreshCounts() } }
        assertEquals(listOf(401, "invalid_token", "req-401"), listOf(e.status, e.code, e.requestId))
        assertEquals(listOf("tok1", "tok2", "tok3"), tokens)
    }

    @Test
    fun retryAfterAnd5xxAreRetriedThenSurfacedWithCodeAndRequestId() = runBlocking {
        val t = Scripted(err(429, "rate_limited", "Retry-After" to "0"), answer(200, """{"unread":3,"unseen":1}"""))
        val c = client(t, ArrayList())
        c.refreshCounts()
        assertEquals(2, t.sent.size)
        assertEquals(Counts(3, 1), c.state.value.counts)
        val t2 = Scripted(*Array(4) { err(503, "backend_unavailable", "Retry-After" to "0") })
        val c2 = client(t2, ArrayList())
        val e = assertThrows(InboxException::class.java) { runBlocking { c2.refreshCounts() } }
        assertEquals(listOf(503, "backend_unavailable", "req-503"), listOf(e.status, e.code, e.requestId))
        assertEquals("maxAttempts requests, then the error", InboxConfig().maxAttempts, t2.sent.size)
    }

    @Test
    fun aRefusedMarkRollsBackExactlyAndAnOfflineMarkIsQueuedWithItsKey() = runBlocking {
        val persistence = MemoryPersistence()
        val t = Scripted(
            answer(200, page(testItem("b", 2), testItem("a", 1))),
            err(422, "field_too_long"), // the refused mark
            answer(200, """{"items":[],"sync":"WzIsIiJd","hasMore":false}"""), // the reconciling pull
        )
        val c = client(t, ArrayList(), persistence)
        c.load()
        val before = c.state.value.view
        assertFalse(c.mark("a", Flag.READ))
        // The pull after a failure runs in the background; wait for its answer to be applied.
        c.awaitState { it.view.sync == "WzIsIiJd" }
        assertEquals(before.items, c.state.value.items)
        assertEquals(before.counts, c.state.value.counts)
        assertEquals("field_too_long", (c.state.value.lastError as InboxException).code)

        // The network goes away (a background flush after the pull may try again: same answer).
        t.fallback = { throw IOException("offline") }
        assertFalse(c.mark("b", Flag.READ))
        assertEquals(Counts(1, 2), c.state.value.counts)
        assertEquals(1, c.state.value.view.pending)
        val marks = t.sent.filter { it.url.endsWith("/mark") && it.body!!.contains("\"b\"") }
        val key = marks.first().headers["Idempotency-Key"]
        assertTrue(key!!.startsWith("inbox-"))
        assertTrue(marks.all { it.headers["Idempotency-Key"] == key })
        // Persisted with its key: a new client (a cold start) restores it and sends the same key.
        c.awaitPersisted()
        val t2 = Scripted(
            answer(200, """{"items":[],"sync":"WzMsIiJd","hasMore":false}"""),
            answer(200, """{"updated":1}"""),
        )
        val c2 = client(t2, ArrayList(), persistence)
        c2.start(stream = false)
        assertEquals(key, t2.sent[1].headers["Idempotency-Key"])
        assertEquals("""{"itemKey":"b","flag":"read","value":true}""", t2.sent[1].body)
        assertEquals(0, c2.state.value.view.pending)
        assertEquals(Counts(1, 2), c2.state.value.counts)
        assertNull(t2.queue.firstOrNull())
    }

    @Test
    fun reconnectWaitsAreFullJitterUpToTheServersCap() {
        val r = Random(42)
        for (attempt in 0..8) {
            val cap = minOf(30_000L, 1_000L shl attempt)
            val waits = List(2000) { fullJitter(1_000, 30_000, attempt, r) }
            assertTrue("attempt $attempt within [0, $cap]", waits.all { it in 0..cap })
            // Spread over the whole range, not clustered at the cap (what plain backoff does).
            assertTrue(waits.min() < cap / 10 && waits.max() > cap * 9 / 10)
        }
        assertEquals(0L, fullJitter(0, 30_000, 3, r))
    }
}
