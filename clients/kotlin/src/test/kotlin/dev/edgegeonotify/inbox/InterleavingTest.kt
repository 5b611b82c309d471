package dev.edgegeonotify.inbox

import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test

/**
 * The interleaving harness ([interleaveAll]: [HARNESS_SEEDS], [HARNESS_STEPS] scheduler steps each). A failure
 * prints every seed that broke an invariant and what it broke; rerun one with [interleave].
 */
class InterleavingTest {
    @Test
    fun everySeededInterleavingKeepsTheInvariants() {
        val seeds = HARNESS_SEEDS
        val runs = interleaveAll()
        println(
            "  interleavings: ${seeds.count()} seeds, ${runs.values.sumOf { it.ops }} operations made, " +
                "${runs.values.sumOf { it.applied }} applied, ${runs.values.sumOf { it.restarts }} restarts, " +
                "${runs.values.sumOf { it.lost }} answers lost after the server applied",
        )
        // A harness whose runs make no operations, restarts or lost answers would prove nothing.
        assertTrue(runs.values.sumOf { it.ops } > 1000 && runs.values.sumOf { it.restarts } > 100 && runs.values.sumOf { it.lost } > 100)
        val broken = runs.mapValues { it.value.violations }.filterValues { it.isNotEmpty() }
        val report = broken.entries.joinToString("\n") { (seed, v) -> "seed $seed: ${v.take(3).joinToString("; ")}" }
        assertEquals("seeds that broke an invariant (of ${seeds.count()}): ${broken.keys}\n$report", emptySet<Long>(), broken.keys)
    }
}
