package dev.edgegeonotify.inbox

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.launch
import org.junit.Assert.assertEquals
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
 * The client's rules that the transport vectors do not state on their own: the two lost-intent
 * bugs of issue 41 as they were reported, the token cache, Retry-After parsing, the backoff,
 * and the persistence log (a change appends, a cold start replays it).
 */
class ClientUnitTest {
    /** A transport whose answers the test gives by hand, one request at a time. */
    private class Held : InboxTransport {
        val open = ArrayList<Pair<HttpRequest, CompletableDeferred<HttpResponse>>>()
        val all = ArrayList<HttpRequest>()
        var maxInFlight = 0
        override suspend fun execute(request: HttpRequest): HttpResponse {
            val d = CompletableDeferred<HttpResponse>()
            open.add(request to d)
            all.add(request)
            maxInFlight = maxOf(maxInFlight, open.size)
            try {
                return d.await()
            } finally {
                open.removeAll { it.second === d }
            }
        }

        fun answer(status: Int, body: String) = open.first().second.complete(HttpResponse(status, emptyMap(), body))
        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket = throw IOException("no socket here")
    }

    private fun pageText(vararg items: Notification) =
        Page(items.toList(), null, Counts(items.count { !it.read }.toLong(), items.count { !it.seen }.toLong()), "WzEsIiJd").toJson().toString()

    @Test
    fun readThenUnreadWithTheFirstRequestSlowEndsUnread() {
        val sim = Sim()
        val t = Held()
        val c = InboxClient("http://x", "u", { "tok" }, sim.scope, t, MemoryPersistence(), InboxConfig(clock = sim))
        sim.scope.launch { c.load() }
        sim.settle()
        t.answer(200, pageText(testItem("a", 1)))
        sim.settle()
        sim.scope.launch { c.mark("a", Flag.READ, true) }
        sim.scope.launch { c.mark("a", Flag.READ, false) }
        sim.scope.launch { c.pull() }
        c.onForeground()
        sim.settle()
        // The first mark is slow: nothing else goes out meanwhile.
        assertEquals(1, t.open.size)
        assertTrue(t.open.single().first.body!!.contains("\"value\":true"))
        sim.advance(600)
        t.answer(200, """{"updated":1}""")
        sim.settle()
        assertTrue(t.open.single().first.body!!.contains("\"value\":false"))
        t.answer(200, """{"updated":1}""")
        sim.settle()
        assertEquals("GET", t.open.single().first.method) // then the pull
        t.answer(200, """{"items":[],"sync":"WzIsIiJd","hasMore":false}""")
        sim.settle()
        assertEquals(1, t.maxInFlight)
        assertEquals(false, c.state.value.items.single().read)
        assertEquals(0, c.state.value.view.pending)
    }

    @Test
    fun aPageReadBeforeAConfirmedDeleteNeverResurrectsIt() {
        val sim = Sim()
        val t = Held()
        val c = InboxClient("http://x", "u", { "tok" }, sim.scope, t, MemoryPersistence(), InboxConfig(clock = sim))
        sim.scope.launch { c.load() }
        sim.settle()
        t.answer(200, pageText(testItem("a", 1), testItem("b", 2)))
        sim.settle()
        // A pull is running (its page still shows "a") when the delete is made.
        sim.scope.launch { c.pull() }
        sim.settle()
        sim.scope.launch { c.remove("a") }
        sim.settle()
        assertEquals(listOf("b"), c.state.value.items.map { it.itemKey })
        t.answer(200, Changes(listOf(Change.Upsert(testItem("a", 1))), "WzIsIiJd", false).toJson().toString())
        sim.settle()
        t.answer(200, """{"unread":2,"unseen":2}""") // the counts after a pull that changed items
        sim.settle()
        assertEquals("the delete waited for the pull", "DELETE", t.open.single().first.method)
        t.answer(204, "")
        sim.settle()
        assertEquals(listOf("b"), c.state.value.items.map { it.itemKey })
        assertEquals(1, t.maxInFlight)
    }

    @Test
    fun retryAfterIsSecondsOrAnHttpDate() {
        val now = 1_796_083_200_000L // 2026-12-01T00:00:00Z
        assertEquals(3000L, retryAfterMs("3", now))
        assertEquals(5000L, retryAfterMs("Tue, 01 Dec 2026 00:00:05 GMT", now))
        assertEquals(0L, retryAfterMs("Mon, 30 Nov 2026 00:00:05 GMT", now))
        assertEquals(null, retryAfterMs("soon", now))
        assertEquals(null, retryAfterMs(null, now))
    }

    @Test
    fun aJwtIsCachedUntil30SecondsBeforeItsExp() {
        val b64 = java.util.Base64.getUrlEncoder().withoutPadding()
        val jwt = "h." + b64.encodeToString("""{"exp":100}""".toByteArray()) + ".s"
        assertEquals(100_000L, jwtExpMs(jwt))
        assertEquals(null, jwtExpMs("opaque-token"))
    }

    @Test
    fun aChangeAppendsItsLinesAndAColdStartReplaysThem() {
        val sim = Sim()
        val t = Held()
        val p = MemoryPersistence()
        val c = InboxClient("http://x", "u", { "tok" }, sim.scope, t, p, InboxConfig(clock = sim))
        sim.scope.launch { c.load() }
        sim.settle()
        t.answer(200, pageText(*Array(50) { testItem("k$it", it + 1L) }))
        sim.settle()
        sim.scope.launch { c.awaitPersisted() }
        sim.settle()
        var text = ""
        sim.scope.launch { text = p.read("inbox.u")!! }
        sim.settle()
        val snapshotLen = text.length
        sim.scope.launch { c.mark("k3", Flag.READ) }
        sim.settle()
        sim.scope.launch { c.awaitPersisted(); text = p.read("inbox.u")!! }
        sim.settle()
        val appended = text.length - snapshotLen
        assertTrue("a mark appends its own lines ($appended bytes), not the store ($snapshotLen)", appended in 1 until snapshotLen / 10)
        // A cold start from the log shows the mark, still queued with its key.
        val c2 = InboxClient("http://x", "u", { "tok" }, sim.scope, t, p, InboxConfig(clock = sim))
        sim.scope.launch { c2.start(live = false) }
        sim.settle()
        assertEquals(1, c2.state.value.view.pending)
        assertTrue(c2.state.value.items.first { it.itemKey == "k3" }.read)
        assertEquals(c.state.value.items, c2.state.value.items)
    }

    @Test
    fun reconnectWaitsAreFullJitterUpToTheServersCap() {
        val r = Random(42)
        for (attempt in 0..8) {
            val cap = minOf(30_000L, 1_000L shl attempt)
            val waits = List(2000) { fullJitter(1_000, 30_000, attempt, r) }
            assertTrue("attempt $attempt within [0, $cap)", waits.all { it in 0 until cap })
            // Spread over the whole range, not clustered at the cap (what plain backoff does).
            assertTrue(waits.min() < cap / 10 && waits.max() > cap * 9 / 10)
        }
        assertEquals(0L, fullJitter(0, 30_000, 3, r))
    }
}
