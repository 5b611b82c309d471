package dev.edgegeonotify.inbox

import kotlinx.coroutines.launch
import kotlin.random.Random

/** main's client (before issue 41) behind the harness, run once to show what the harness finds. */
class OldClient(private val sim: Sim, net: HarnessNet, persistence: InboxPersistence) : HarnessClient {
    // stream = false: main's stream loop waits with withTimeoutOrNull (wall clock), which the
    // harness's virtual time cannot drive; its flush and pull races run without it.
    private val c = InboxClient("https://h.test", "u", { "tok" }, sim.scope, net, persistence, InboxConfig(random = Random(1)))
    override fun start() { sim.scope.launch { c.start(stream = false) } }
    override fun resume() = c.onForeground()
    override fun online() = c.onForeground()
    override fun flush() { sim.scope.launch { runCatching { c.flushQueue() } } }
    override fun pull(done: (Boolean) -> Unit) { sim.scope.launch { done(runCatching { c.pull() }.isSuccess) } }
    override fun mark(itemKey: String, read: Boolean, done: (Boolean?) -> Unit) { sim.scope.launch { done(c.mark(itemKey, Flag.READ, read)) } }
    override fun remove(itemKey: String, done: (Boolean?) -> Unit) { sim.scope.launch { done(c.delete(itemKey)) } }
    override fun stop() { c.stop(); sim.scope.launch { c.awaitPersisted() } }
    override fun visible() = c.state.value.items.associate { it.itemKey to it.read }
    override fun unread() = c.state.value.unread
    override fun pending() = c.state.value.view.pending
    override fun rollbacks() = 0
}

object OldMain {
    @JvmStatic
    fun main(args: Array<String>) {
        val seeds = 1L..320L
        val kinds = HashMap<String, Int>()
        var failed = 0
        var firstLines = ArrayList<String>()
        for (seed in seeds) {
            val p = MemoryPersistence()
            val run = try {
                interleave(seed, 150, { sim, net -> OldClient(sim, net, p) })
            } catch (e: Throwable) {
                Run(listOf("crashed: $e"), 0, 0, 0, 0)
            }
            if (run.violations.isNotEmpty()) {
                failed++
                run.violations.map { violationKind(it) }.distinct().forEach { kinds[it] = (kinds[it] ?: 0) + 1 }
                if (firstLines.size < 12) firstLines.addAll(run.violations.filter { "in flight" !in it }.take(2))
            }
        }
        println("main's client: $failed of ${seeds.count()} seeds broke an invariant")
        kinds.entries.sortedByDescending { it.value }.forEach { println("  ${it.value} seeds: ${it.key}") }
        firstLines.forEach { println("  e.g. $it") }
    }
}
