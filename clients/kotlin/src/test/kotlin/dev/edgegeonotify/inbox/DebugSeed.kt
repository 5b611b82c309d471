package dev.edgegeonotify.inbox

/**
 * Reruns one seed of the interleaving harness with a line per step (the event, the clock, the
 * requests in flight, the device's and the server's items), for a seed InterleavingTest reported:
 *   java -cp <build.sh's classpath> dev.edgegeonotify.inbox.DebugSeed 63
 */
object DebugSeed {
    @JvmStatic
    fun main(args: Array<String>) {
        val seed = args[0].toLong()
        val p = MemoryPersistence()
        val r = interleave(seed, HARNESS_STEPS, { sim, net -> LaneClient(sim, net, p) }, trace = true)
        println(r.violations.ifEmpty { listOf("no violation") }.joinToString("\n"))
    }
}
