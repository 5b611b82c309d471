package dev.edgegeonotify.inbox

import org.junit.runner.JUnitCore
import java.io.PrintStream

/**
 * `Bench harness`: the SDK's correctness numbers as markdown for BENCHMARKS.md, counted here
 * from the suites' own runs (JUnit's result per vector file, the harness's [Run]s), not parsed
 * from a log: the transport and store vectors passed, and the interleaving harness's runs.
 * A failure is reported in the table (the numbers are what they are); the suites fail the build.
 */
object BenchHarness {
    fun report() {
        val out = System.out
        // The suites' own prints go to stderr, so stdout stays the table.
        System.setOut(PrintStream(System.err, true))
        val rows = try {
            listOf(
                "transport vectors (clients/conformance/transport, `TransportVectorTest`)" to TransportVectorTest::class.java,
                "store vectors (clients/conformance/vectors, `ConformanceTest`)" to ConformanceTest::class.java,
            ).map { (label, cls) ->
                val r = JUnitCore().run(cls)
                val failed = r.failures.map { it.description.methodName.substringAfter('[').substringBefore(']') }
                Triple(label, r.runCount, failed)
            }
        } finally {
            System.setOut(out)
        }
        println("| suite | vectors | passed | failed |")
        println("|---|---|---|---|")
        for ((label, count, failed) in rows) {
            println("| $label | $count | ${count - failed.size} | ${if (failed.isEmpty()) "0" else "${failed.size}: ${failed.joinToString(", ")}"} |")
        }
        println()
        val t0 = System.nanoTime()
        val runs = interleaveAll()
        val seconds = (System.nanoTime() - t0) / 1e9
        val broken = runs.filterValues { it.violations.isNotEmpty() }
        println("| interleaving harness (`InterleavingTest`, `Interleavings.kt`) | |")
        println("|---|---|")
        println("| seeds | ${HARNESS_SEEDS.first}–${HARNESS_SEEDS.last} (${runs.size}) |")
        println("| scheduler steps per seed (then settling to the end) | $HARNESS_STEPS (${runs.size * HARNESS_STEPS} in all) |")
        println("| operations made (marks, deletes) | ${runs.values.sumOf { it.ops }} |")
        println("| operations applied by the model server | ${runs.values.sumOf { it.applied }} |")
        println("| restarts (app killed, started on its persisted state) | ${runs.values.sumOf { it.restarts }} |")
        println("| answers lost after the server applied | ${runs.values.sumOf { it.lost }} |")
        println("| seeds with a violation | ${broken.size}${if (broken.isEmpty()) "" else ": " + broken.keys.joinToString(", ")} |")
        println("| violations | ${runs.values.sumOf { it.violations.size }}${if (broken.isEmpty()) "" else " (" + broken.values.flatMap { it.violations }.map(::violationKind).distinct().joinToString("; ") + ")"} |")
        println("| wall time of all seeds (one JVM, this machine) | ${"%.1f".format(seconds)} s |")
    }
}
