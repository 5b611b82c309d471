package dev.edgegeonotify.inbox

import kotlinx.coroutines.CompletableDeferred
import kotlinx.coroutines.launch
import org.json.JSONArray
import org.json.JSONObject
import java.io.IOException
import java.util.Base64
import kotlin.random.Random

/*
 * The seeded interleaving harness (issue 41): a scripted in-process server that applies each
 * operation once per Idempotency-Key and keeps a change feed, a transport whose answers the
 * scheduler delivers late, drops (applied, answer lost) or fails (not applied), and a seeded
 * scheduler that picks the next of start, resume, online/offline, socket open/close, badge,
 * poll (timers), flush, pull, a new operation, a restart and a server-side create. Nothing here
 * knows the SDK beyond [HarnessClient], so the same harness ran once against main's client.
 */

/** What the harness asks of a client. */
interface HarnessClient {
    fun start()
    fun resume()
    fun online()
    fun flush()

    /** Launches a pull; [done] gets whether it succeeded. */
    fun pull(done: (Boolean) -> Unit = {})

    /** Launches the operation; [done] gets true (applied), false (queued), null (rejected). */
    fun mark(itemKey: String, read: Boolean, done: (Boolean?) -> Unit)
    fun remove(itemKey: String, done: (Boolean?) -> Unit)
    fun stop()
    fun visible(): Map<String, Boolean> // itemKey → read
    fun unread(): Long
    fun pending(): Int
    fun rollbacks(): Int
}

/** The server: the contract of issue 41 (Idempotency-Key on user writes, 404 item_not_found). */
class ModelServer {
    class Item(val key: String, val revision: Long, var read: Boolean)

    val items = LinkedHashMap<String, Item>()
    private val feed = ArrayList<Pair<Long, String>>() // (seq, itemKey), newest last
    private var seq = 1L
    private val answers = HashMap<String, Pair<Int, String>>()

    /** (kind, itemKey, value) of each first application of a key, in order. */
    val applied = ArrayList<Triple<String, String, Boolean>>()
    var badge: (() -> Unit)? = null

    fun pos(s: Long): String = Base64.getUrlEncoder().withoutPadding().encodeToString("[$s,\"\"]".toByteArray())

    private fun changed(key: String) {
        feed.add(++seq to key)
        badge?.invoke()
    }

    fun create(key: String) {
        items[key] = Item(key, seq * 10, false)
        changed(key)
    }

    fun unread() = items.values.count { !it.read }.toLong()

    fun badgeText(): String = JSONObject().put("type", "badge").put("unread", unread()).put("unseen", items.size).put("sync", pos(seq)).toString()

    private fun itemJson(i: Item) = JSONObject()
        .put("notificationId", "%016x".format(i.revision)).put("itemKey", i.key).put("serviceType", "feed").put("categoryType", "social")
        .put("notificationType", "like").put("templateType", "default").put("createdTimeMsec", 1).put("expireAtMsec", 2)
        .put("revision", i.revision).put("originsCount", 1).put("originsCountExact", true).put("origins", JSONArray())
        .put("read", i.read).put("seen", false).put("archived", false).put("landing", JSONObject.NULL)
        .put("messageArguments", JSONObject()).put("summary", JSONObject.NULL)

    private fun counts() = JSONObject().put("unread", unread()).put("unseen", items.size)

    private fun error(status: Int, code: String) = status to JSONObject().put("error", JSONObject().put("code", code).put("message", code)).toString()

    fun handle(r: HttpRequest): HttpResponse {
        val path = r.url.substringAfter("//").substringAfter('/').let { "/$it" }
        val key = r.headers["Idempotency-Key"]
        if (key != null) answers[key]?.let { return HttpResponse(it.first, emptyMap(), it.second) }
        val (status, body) = when {
            r.method == "GET" && path.startsWith("/v1/notifications/changes") -> {
                val since = Regex("since=([^&]+)").find(path)!!.groupValues[1]
                val from = String(Base64.getUrlDecoder().decode(since)).removePrefix("[").substringBefore(',').toLong()
                val keys = LinkedHashSet<String>()
                for ((s, k) in feed) if (s > from) keys.apply { remove(k); add(k) }
                val out = JSONArray()
                for (k in keys) out.put(items[k]?.let { itemJson(it) } ?: JSONObject().put("itemKey", k).put("deleted", true))
                200 to JSONObject().put("items", out).put("sync", pos(seq)).put("hasMore", false).toString()
            }
            r.method == "GET" && path.startsWith("/v1/notifications/unread-count") -> 200 to counts().toString()
            r.method == "GET" && path.startsWith("/v1/notifications") -> {
                val list = JSONArray()
                items.values.sortedByDescending { it.revision }.forEach { list.put(itemJson(it)) }
                200 to JSONObject().put("items", list).put("nextCursor", JSONObject.NULL).put("counts", counts()).put("sync", pos(seq)).toString()
            }
            r.method == "POST" && path == "/v1/notifications/mark" -> {
                val b = JSONObject(r.body!!)
                val item = items[b.getString("itemKey")]
                if (item == null) {
                    error(404, "item_not_found")
                } else {
                    item.read = b.getBoolean("value")
                    applied.add(Triple("mark", item.key, item.read))
                    changed(item.key)
                    200 to """{"updated":1}"""
                }
            }
            r.method == "DELETE" -> {
                val k = path.substringAfterLast('/')
                if (items.remove(k) == null) {
                    error(404, "item_not_found")
                } else {
                    applied.add(Triple("delete", k, true))
                    changed(k)
                    200 to """{"deleted":true}"""
                }
            }
            else -> error(400, "unexpected")
        }
        if (key != null) answers[key] = status to body
        return HttpResponse(status, emptyMap(), body)
    }
}

/** A network the scheduler controls: requests wait until delivered, dropped or failed. */
class HarnessNet(private val server: ModelServer) : InboxTransport {
    class Call(val request: HttpRequest, val answer: CompletableDeferred<HttpResponse>)
    class Sock(val listener: SocketListener) {
        var open = false
        var ended = false
    }

    val inFlight = ArrayList<Call>()
    val sockets = ArrayList<Sock>()
    var maxInFlight = 0
    var online = true

    /** While true the identity provider is down: getToken() throws. */
    var tokensDown = false

    override suspend fun execute(request: HttpRequest): HttpResponse {
        val c = Call(request, CompletableDeferred())
        inFlight.add(c)
        maxInFlight = maxOf(maxInFlight, inFlight.size)
        try {
            return c.answer.await()
        } finally {
            inFlight.remove(c)
        }
    }

    override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket {
        val s = Sock(listener)
        sockets.add(s)
        return object : InboxSocket {
            override fun send(text: String) = true
            override fun close(code: Int, reason: String) = end(s, code)
            override fun cancel() = end(s, 1006)
        }
    }

    fun end(s: Sock, code: Int) {
        if (s.ended) return
        s.ended = true
        s.listener.onClosed(code, "", null, null)
    }

    /** The server handles it; [lose] drops the answer on the way back. */
    fun deliver(c: Call, lose: Boolean) {
        inFlight.remove(c)
        if (!online) return c.answer.completeExceptionally(IOException("offline")).let { }
        val r = server.handle(c.request)
        if (lose) c.answer.completeExceptionally(IOException("connection reset")) else c.answer.complete(r)
    }

    fun fail(c: Call) {
        inFlight.remove(c)
        c.answer.completeExceptionally(IOException("unreachable"))
    }

    /** A 503 from a backend that is down (not applied; a 5xx answer is never kept for the key). */
    fun unavailable(c: Call) {
        inFlight.remove(c)
        val body = JSONObject().put("error", JSONObject().put("code", "backend_unavailable").put("message", "down")).toString()
        c.answer.complete(HttpResponse(503, mapOf("retry-after" to "1"), body))
    }
}

/** One seeded run: the invariants it broke (empty: none) and what happened in it. */
class Run(val violations: List<String>, val ops: Int, val applied: Int, val restarts: Int, val lost: Int)

/** The kind of a violation, for a summary over many seeds. */
fun violationKind(v: String): String = when {
    "in flight" in v -> "two requests in flight"
    "shown again" in v -> "a confirmed delete shown again"
    "applied" in v -> "ops not applied exactly once in creation order"
    "device" in v -> "device differs from server"
    "rollback" in v -> "spurious rollback"
    "queued" in v -> "ops left queued"
    else -> v
}

fun interleave(seed: Long, steps: Int, make: (Sim, HarnessNet) -> HarnessClient, fifo: Boolean = false, trace: Boolean = false): Run {
    val rnd = Random(seed)
    val sim = Sim(1_796_083_200_000L, if (fifo) null else Random(seed * 31 + 7))
    val server = ModelServer()
    for (k in listOf("m0", "m1", "m2", "d0", "d1", "d2", "d3")) server.create(k)
    val net = HarnessNet(server)
    server.badge = { net.sockets.filter { it.open && !it.ended }.forEach { it.listener.onMessage(server.badgeText()) } }
    var client = make(sim, net)
    val violations = ArrayList<String>()
    val intents = ArrayList<Triple<String, String, Boolean>>()
    val confirmedDeletes = HashSet<String>()
    var rejected = 0
    val deletable = ArrayDeque(listOf("d0", "d1", "d2", "d3").shuffled(rnd))
    var created = 0
    var restarts = 0
    var lost = 0
    fun checkNow(where: String) {
        if (net.inFlight.size > 1) violations.add("$where: ${net.inFlight.size} requests in flight")
        for (k in confirmedDeletes) if (client.visible().containsKey(k)) violations.add("$where: $k shown again after its delete was confirmed")
    }
    fun outcome(kind: String, key: String) = { r: Boolean? ->
        if (r == null) rejected++
        if (r == true && kind == "delete") confirmedDeletes.add(key)
    }
    client.start()
    sim.settle()
    for (step in 0 until steps) {
        val e = rnd.nextInt(100)
        val where = "seed $seed step $step"
        when {
            e < 14 -> {
                val c = net.inFlight.randomOrNull(rnd)
                if (c != null) net.deliver(c, lose = false)
            }
            e < 18 -> net.inFlight.randomOrNull(rnd)?.let {
                lost++
                net.deliver(it, lose = true)
            }
            e < 20 -> net.inFlight.randomOrNull(rnd)?.let { net.fail(it) }
            e < 21 -> net.inFlight.randomOrNull(rnd)?.let { net.unavailable(it) }
            e < 33 -> {
                val m = "m${rnd.nextInt(3)}"
                val v = rnd.nextBoolean()
                intents.add(Triple("mark", m, v))
                client.mark(m, v, outcome("mark", m))
            }
            e < 37 -> deletable.removeFirstOrNull()?.let { d ->
                intents.add(Triple("delete", d, true))
                client.remove(d, outcome("delete", d))
            }
            e < 42 -> client.flush()
            e < 47 -> client.pull()
            e < 52 -> client.resume()
            e < 56 -> {
                net.online = true
                client.online()
            }
            e < 59 -> net.online = false
            e < 66 -> net.sockets.lastOrNull { !it.open && !it.ended }?.let {
                if (net.online) {
                    it.open = true
                    it.listener.onOpen("inbox.v1")
                }
            }
            e < 69 -> net.sockets.lastOrNull { it.open && !it.ended }?.let { net.end(it, if (rnd.nextBoolean()) 1006 else 4001) }
            e < 70 -> net.sockets.lastOrNull { !it.open && !it.ended }?.let { net.end(it, 1006) } // upgrade refused
            e < 74 -> server.create("n${created++}")
            e < 75 -> net.tokensDown = !net.tokensDown
            e < 77 -> {
                // A restart: the app is killed and started again on the same persistence.
                restarts++
                client.stop()
                sim.settle()
                client = make(sim, net)
                client.start()
            }
            else -> sim.fireNext()
        }
        sim.settle()
        if (trace) println("$where e=$e t=${sim.t} online=${net.online} inFlight=${net.inFlight.map { it.request.method + " " + it.request.url.substringAfter("test") }} device=${client.visible()} pending=${client.pending()} server=${server.items.keys}")
        checkNow(where)
    }
    // Settle: the network and the identity provider come back and stay; deliver everything,
    // fire timers, trigger.
    net.online = true
    net.tokensDown = false
    client.online()
    var rounds = 0
    while (rounds++ < 5000) {
        sim.settle()
        net.sockets.lastOrNull { !it.open && !it.ended }?.let { it.open = true; it.listener.onOpen("inbox.v1") }
        sim.settle()
        val c = net.inFlight.firstOrNull()
        if (c != null) {
            net.deliver(c, lose = false)
        } else if (client.pending() > 0) {
            client.flush()
            sim.settle()
            if (net.inFlight.isEmpty()) sim.fireNext() // a lane waiting out a backoff
        } else {
            break
        }
        checkNow("seed $seed settling")
    }
    // Last, a pull that succeeds (answered, timers fired: a lane may be waiting out a backoff),
    // so the device has seen everything the server did.
    var pulled = false
    var tries = 0
    while (!pulled && tries++ < 20) {
        var ended = false
        client.pull { ok -> ended = true; pulled = ok }
        var n = 0
        while (!ended && n++ < 200) {
            sim.settle()
            val c = net.inFlight.firstOrNull()
            if (c != null) net.deliver(c, lose = false) else sim.fireNext()
        }
    }
    sim.settle()
    if (!pulled) violations.add("seed $seed: no pull succeeded at the end")
    checkNow("seed $seed end")
    if (client.pending() != 0) violations.add("seed $seed: ${client.pending()} operations still queued")
    if (rejected > 0 || client.rollbacks() > 0) violations.add("seed $seed: spurious rollback ($rejected rejected, ${client.rollbacks()} rollback events)")
    // Each op applied exactly once, in creation order (a delete of an item already gone would
    // be applied as 404; none happens here: each d-item is removed once, never recreated).
    if (server.applied != intents) violations.add("seed $seed: applied ${server.applied} but made ${intents}")
    val want = server.items.mapValues { it.value.read }
    if (client.visible() != want) violations.add("seed $seed: device ${client.visible()} but server $want")
    if (client.unread() != server.unread()) violations.add("seed $seed: device unread ${client.unread()} but server ${server.unread()}")
    client.stop()
    sim.settle()
    return Run(violations.distinct(), intents.size, server.applied.size, restarts, lost)
}

/** What InterleavingTest runs (and `Bench harness` reports): these seeds, this many scheduler steps each. */
val HARNESS_SEEDS = 1L..320L
const val HARNESS_STEPS = 150

/** Every seed of [HARNESS_SEEDS] against this tree's SDK, each on its own persistence. */
fun interleaveAll(): Map<Long, Run> = HARNESS_SEEDS.associateWith { seed ->
    val persistence = MemoryPersistence()
    interleave(seed, HARNESS_STEPS, { sim, net -> LaneClient(sim, net, persistence) })
}

/** The SDK of this tree behind [HarnessClient]. */
class LaneClient(private val sim: Sim, net: HarnessNet, persistence: InboxPersistence) : HarnessClient {
    private val c = InboxClient(
        "https://h.test", "u", { _ -> if (net.tokensDown) throw IOException("identity provider down") else "tok" }, sim.scope, net, persistence,
        InboxConfig(clock = sim, random = Random(1), pollMs = 5_000),
    )
    private var rollbacks = 0

    init {
        sim.scope.launch { c.rollbacks.collect { rollbacks++ } }
    }

    override fun start() {
        sim.scope.launch { c.start() }
    }

    override fun resume() = c.onForeground()
    override fun online() = c.onOnline()
    override fun flush() {
        sim.scope.launch { runCatching { c.flush() } }
    }

    override fun pull(done: (Boolean) -> Unit) {
        sim.scope.launch { done(runCatching { c.pull() }.isSuccess) }
    }

    private fun report(r: WriteResult, done: (Boolean?) -> Unit) = done(
        when (r) {
            WriteResult.Applied -> true
            is WriteResult.Queued -> false
            is WriteResult.Rejected -> null
        },
    )

    override fun mark(itemKey: String, read: Boolean, done: (Boolean?) -> Unit) {
        sim.scope.launch { report(c.mark(itemKey, Flag.READ, read), done) }
    }

    override fun remove(itemKey: String, done: (Boolean?) -> Unit) {
        sim.scope.launch { report(c.remove(itemKey), done) }
    }

    override fun stop() {
        c.stop()
        sim.scope.launch { c.awaitPersisted() }
    }

    override fun visible() = c.state.value.items.associate { it.itemKey to it.read }
    override fun unread() = c.state.value.unread
    override fun pending() = c.state.value.view.pending
    override fun rollbacks() = rollbacks
}
