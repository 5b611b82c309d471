package dev.edgegeonotify.inbox

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.TimeoutCancellationException
import kotlinx.coroutines.async
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.withTimeout
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import java.nio.file.Files
import java.util.Base64
import java.util.concurrent.atomic.AtomicLong
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec
import kotlin.system.exitProcess

/**
 * Benchmarks of the Kotlin SDK (not tests), printed as markdown for BENCHMARKS.md by
 * bench/report/85_sdk_kotlin.sh:
 * - `store`: a 100-entry change page applied to a 10 000-item store (JVM, in process).
 * - `coldstart`: against the worker in workerd + the local stack (via tests/js/kotlin_stack.mjs):
 *   requests and bytes of a cold start from persisted state vs a full reload.
 * - `latency`: the same stack: a service create → the badge's counts in a live client's state →
 *   the item in its store, p50/p95.
 * - `harness`: the correctness numbers ([BenchHarness]): vectors passed, interleaving runs.
 */
object Bench {
    @JvmStatic
    fun main(args: Array<String>) {
        when (args.firstOrNull()) {
            "store" -> store()
            "coldstart" -> runBlocking { coldStart() }
            "latency" -> runBlocking { latency() }
            "harness" -> BenchHarness.report()
            else -> {
                System.err.println("usage: Bench store|coldstart|latency|harness")
                exitProcess(2)
            }
        }
        exitProcess(0)
    }

    private fun pos(ms: Long) = Base64.getUrlEncoder().withoutPadding().encodeToString(jsonText(listOf(ms, "")).toByteArray())

    private var lastBytes = 0L

    private fun store() {
        val n = 10_000
        val page = Page((0 until n).map { testItem("k$it", 1_000_000L + it) }.reversed(), null, Counts(n.toLong(), n.toLong()), pos(1))
        var next = 2_000_000L
        // A page: 80 items changed (marked read, or merged with a new revision), 10 new, 10 deleted.
        fun changePage(round: Int): Changes {
            val items = ArrayList<Change>(100)
            for (i in 0 until 80) {
                val k = (round * 997 + i * 113) % n
                items.add(Change.Upsert(testItem("k$k", if (i % 2 == 0) next++ else 1_000_000L + k, read = true)))
            }
            for (i in 0 until 10) items.add(Change.Upsert(testItem("new$round-$i", next++)))
            for (i in 0 until 10) items.add(Change.Tombstone("k${(round * 31 + i * 7) % n}"))
            return Changes(items, pos(next), false)
        }
        val rounds = 300
        val pages = (0 until rounds).map { changePage(it) }
        // persist: 0 nothing, 1 the whole store as JSON (every change before issue 41), 2 the
        // change's journal lines (what a change appends now).
        fun run(persist: Int, mark: Boolean = false): Pair<Double, Double> {
            val s = InboxStore()
            s.applyPage(page, append = false)
            s.view()
            s.drainJournal()
            val times = DoubleArray(rounds)
            var bytes = 0L
            for ((i, p) in pages.withIndex()) {
                val t0 = System.nanoTime()
                if (mark) s.addPending(PendingOp.Mark("op$i", "k${(i * 7919) % n}", Flag.READ, true, "key$i")) else s.applyChanges(p)
                val v = s.view()
                when (persist) {
                    1 -> bytes += s.snapshot().toJson().toString().length
                    2 -> bytes += s.drainJournal()!!.sumOf { it.length + 1 }
                }
                times[i] = (System.nanoTime() - t0) / 1e6
                if (persist != 2) s.drainJournal()
                check(v.items.size >= n - 10 * (i + 1))
            }
            lastBytes = bytes / rounds
            // The first third warms the JIT up; report the rest.
            val measured = times.drop(rounds / 3).sorted()
            return measured[measured.size / 2] to measured[(measured.size * 95) / 100]
        }
        run(0)
        run(2) // both paths warm before anything is measured
        fun row(label: String, r: Pair<Double, Double>, bytes: Boolean = true) =
            println("| $label | ${"%.3f".format(r.first)} | ${"%.3f".format(r.second)} | ${if (bytes) lastBytes.toString() else "–"} |")
        println("| step | median ms | p95 ms | bytes written per change |")
        println("|---|---|---|---|")
        row("apply 100 changes + build the visible list (10 000 items)", run(0), bytes = false)
        row("the same + render the whole store to JSON (the whole-store rewrite every change did before; now only a compaction does it)", run(1))
        row("the same + render the change as journal lines (what a change appends now)", run(2))
        row("one mark (optimistic) + the whole store as JSON (before)", run(1, mark = true))
        row("one mark (optimistic) + its journal lines (now)", run(2, mark = true))
        // A cold start: the persisted text (a snapshot of 10 000 items) parsed into a store.
        val text = InboxStore().also { it.applyPage(page, append = false) }.toPersisted().toString()
        val loads = (0 until 30).map {
            val t0 = System.nanoTime()
            check(InboxStore.fromPersisted(parseObject(text)).size == n)
            (System.nanoTime() - t0) / 1e6
        }.drop(10).sorted()
        println("| a cold start: parse the persisted snapshot (10 000 items) into a store | ${"%.3f".format(loads[loads.size / 2])} | ${"%.3f".format(loads[loads.size * 95 / 100])} | ${text.length} read |")
        println()
        println("The journal is compacted (one snapshot written again) once its lines outgrow the last snapshot (at least ${Journal.COMPACT_MIN / 1024} KiB).")
    }

    // The stack tests/js/kotlin_stack.mjs started: the worker, the service key, the token setup.
    private val env: Map<String, String> by lazy { System.getenv() }
    private val base by lazy { env["INBOX_BASE_URL"] ?: error("run through tests/js/kotlin_stack.mjs") }
    private val http by lazy { OkHttpTransport() }
    private val svc by lazy { mapOf("Authorization" to "Bearer ${env["INBOX_SERVICE_TOKEN"]}", "Content-Type" to "application/json") }

    /** A user token signed as the app backend would (HS256, the stack's setup). */
    private fun mint(sub: String): String {
        val b64 = Base64.getUrlEncoder().withoutPadding()
        val now = System.currentTimeMillis() / 1000
        val h = b64.encodeToString("""{"alg":"HS256","typ":"JWT"}""".toByteArray())
        val c = b64.encodeToString(jsonText(mapOf("sub" to sub, "iss" to env["INBOX_AUTH_ISSUER"], "aud" to env["INBOX_AUTH_AUDIENCE"], "iat" to now, "exp" to now + 600)).toByteArray())
        val mac = Mac.getInstance("HmacSHA256").apply { init(SecretKeySpec(env["INBOX_AUTH_SECRET"]!!.toByteArray(), "HmacSHA256")) }
        return "$h.$c." + b64.encodeToString(mac.doFinal("$h.$c".toByteArray()))
    }

    private var ev = 0

    /** A create event for [owner]'s [key], as the service posts it. */
    private fun event(owner: String, key: String) = mapOf(
        "owner" to owner, "itemKey" to key, "serviceType" to "feed", "categoryType" to "social", "notificationType" to "like",
        "templateType" to "default", "eventId" to "b${System.nanoTime()}-${ev++}", "sender" to mapOf("id" to "s$ev", "name" to "Sender $ev"),
        "createdTimeMsec" to System.currentTimeMillis(),
    )

    private suspend fun coldStart() {
        val u = "bench-cold-${System.nanoTime()}"
        fun event(key: String) = event(u, key)
        for (b in 0 until 10) {
            val r = http.execute(HttpRequest("POST", "$base/v1/notifications/events", svc, jsonText(mapOf("events" to (0 until 100).map { event("i${b * 100 + it}") }))))
            check(r.status == 200) { "batch: ${r.status} ${r.body}" }
        }
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        val dir = Files.createTempDirectory("inbox-bench").toFile()
        try {
            // Full reload: every page of 100 until nextCursor is null.
            val full = InboxClient(base, u, { _ -> mint(u) }, scope, http, FilePersistence(dir), InboxConfig(pageSize = 100))
            full.load()
            while (full.state.value.view.nextCursor != null) full.loadMore()
            check(full.state.value.items.size == 1000)
            full.awaitPersisted()
            // 10 changes while the app is closed: 5 new items, 3 marks, 2 deletes (another device).
            for (i in 0 until 5) {
                val r = http.execute(HttpRequest("POST", "$base/v1/notifications/events", svc, jsonText(event("new$i"))))
                check(r.status == 201) { "create: ${r.status}" }
            }
            val other = InboxClient(base, u, { _ -> mint(u) }, scope, http, MemoryPersistence(), InboxConfig(pageSize = 100))
            other.load()
            for (i in 0 until 3) check(other.mark("i${990 - i}", Flag.READ) == WriteResult.Applied)
            for (i in 0 until 2) check(other.remove("i${980 - i}") == WriteResult.Applied)
            // Cold start from the persisted state.
            val cold = InboxClient(base, u, { _ -> mint(u) }, scope, http, FilePersistence(dir), InboxConfig(pageSize = 100))
            cold.start(live = false)
            check(cold.state.value.items.size == 1003) { "cold start shows ${cold.state.value.items.size}" }
            val persisted = dir.listFiles()!!.sumOf { it.length() }
            println("| start | requests | bytes read |")
            println("|---|---|---|")
            println("| full reload (pages of 100) | ${full.requestsSent} | ${full.bytesReceived} |")
            println("| cold start from persisted state (the change feed since its sync, then the counts) | ${cold.requestsSent} | ${cold.bytesReceived} |")
            println()
            println("1 000 items, then 10 changes (5 creates, 3 marks, 2 deletes) made elsewhere; the persisted file is $persisted bytes.")
        } finally {
            scope.cancel()
            dir.deleteRecursively()
        }
    }

    private fun ms(ns: Long) = ns / 1e6

    private suspend fun latency() {
        val warm = 5
        val u = "bench-latency-${System.nanoTime()}"
        val scope = CoroutineScope(SupervisorJob() + Dispatchers.Default)
        try {
            // The transport notes when the first socket message after a POST arrives, to tell the
            // server's share of the badge time from the client's.
            val message = AtomicLong(-1)
            val timed = object : InboxTransport {
                override suspend fun execute(request: HttpRequest) = http.execute(request)
                override fun openSocket(url: String, protocols: List<String>, listener: SocketListener) = http.openSocket(
                    url, protocols,
                    object : SocketListener by listener {
                        override fun onMessage(text: String) {
                            message.compareAndSet(0, System.nanoTime())
                            listener.onMessage(text)
                        }
                    },
                )
            }
            val c = InboxClient(base, u, { _ -> mint(u) }, scope, timed, MemoryPersistence(), InboxConfig(pageSize = 100))
            c.start()
            withTimeout(30_000) { c.awaitState { it.status == Status.LIVE && it.ready } }
            var n0 = 0
            var lastMessage = 0L
            // One round: [count] creates after [warm] warm-up, one at a time, each posted once the
            // previous item is in the store, [paced]: not before 300 ms after the previous badge.
            // The hub pushes at most one badge per 250 ms per owner (COALESCE_MS in
            // crates/core/src/notify/badge.rs) and holds a change inside that window until it ends:
            // paced rounds measure a create on an idle inbox, unpaced ones the window.
            suspend fun round(count: Int, paced: Boolean): List<List<Double>> {
                val cols = List(4) { ArrayList<Double>() } // POST answered, socket message, counts, item
                for (i in 0 until warm + count) {
                    val key = "l$n0"
                    val want = (++n0).toLong() // each create is a new item: one more unread
                    if (paced) delay(maxOf(0L, 300 - (System.nanoTime() - lastMessage) / 1_000_000))
                    var badgeAt = 0L
                    // Subscribed before the POST (undispatched) and resumed in the thread that sets
                    // the state (unconfined), so a timestamp is when the state first showed it; a
                    // state that shows both at once gives both the same time.
                    val watch = scope.async(Dispatchers.Unconfined, start = CoroutineStart.UNDISPATCHED) {
                        c.state.first { it.unread == want }
                        badgeAt = System.nanoTime()
                        c.state.first { s -> s.items.any { it.itemKey == key } }
                        System.nanoTime()
                    }
                    message.set(0)
                    val t0 = System.nanoTime()
                    val r = http.execute(HttpRequest("POST", "$base/v1/notifications/events", svc, jsonText(event(u, key))))
                    val answered = System.nanoTime()
                    check(r.status == 201) { "create: ${r.status} ${r.body}" }
                    val itemAt = try {
                        withTimeout(30_000) { watch.await() }
                    } catch (e: TimeoutCancellationException) {
                        throw IllegalStateException("create $key: no badge/item in 30 s; state ${c.state.value.counts} ${c.state.value.status}", e)
                    }
                    lastMessage = message.get()
                    check(lastMessage > 0) { "create $key: the counts changed without a socket message" }
                    if (i >= warm) listOf(answered, lastMessage, badgeAt, itemAt).forEachIndexed { k, t -> cols[k].add(ms(t - t0)) }
                }
                return cols
            }
            val n = 100
            val idle = round(n, paced = true)
            val burst = round(n, paced = false)
            // Every badge must have come over the open socket, not from polling.
            check(c.state.value.status == Status.LIVE) { "status ${c.state.value.status} at the end" }
            fun p(xs: List<Double>, q: Int) = xs.sorted()[(xs.size * q) / 100].let { "%.1f".format(it) }
            val labels = listOf("the POST's answer (201)", "the badge message arrives on the socket", "the state shows the badge's counts (badge)", "the item is in the store (item in store)")
            println("| creates | from just before the service's POST until | p50 ms | p95 ms | max ms |")
            println("|---|---|---|---|---|")
            for ((what, cols) in listOf("each ≥ 300 ms after the last badge" to idle, "back to back (the 250 ms badge window)" to burst)) {
                for ((k, xs) in cols.withIndex()) println("| $what | ${labels[k]} | ${p(xs, 50)} | ${p(xs, 95)} | ${"%.1f".format(xs.max())} |")
            }
            println()
            println("Per row $n creates (each a new item for one user, posted with the service key) after $warm warm-up, one at a time, each once the previous item was in the store; one live client (socket open, LIVE throughout).")
        } finally {
            scope.cancel()
        }
    }
}
