package dev.edgegeonotify.inbox

import org.junit.runner.Description
import org.junit.runner.JUnitCore
import org.junit.runner.notification.Failure
import org.junit.runner.notification.RunListener
import kotlin.system.exitProcess

/**
 * Runs the JUnit classes of this SDK in one JVM and ends with the plain summary line
 * `kotlin: N passed, N failed, N skipped`. `INBOX_TESTS=unit` runs only the tests that need no
 * server (clients/kotlin/build.sh unit); otherwise the integration tests need the environment
 * tests/js/kotlin_stack.mjs provides.
 */
object TestMain {
    private val unit = listOf(JsonTest::class.java, PositionTest::class.java, ConformanceTest::class.java, TransportVectorTest::class.java, ClientUnitTest::class.java, InterleavingTest::class.java, GeoUnitTest::class.java)
    private val server = listOf(ContractTest::class.java, IntegrationTest::class.java, GeoIntegrationTest::class.java, InboxClientGeoTest::class.java)

    @JvmStatic
    fun main(args: Array<String>) {
        val classes = if (System.getenv("INBOX_TESTS") == "unit") unit else unit + server
        val core = JUnitCore()
        var ignored = 0
        core.addListener(object : RunListener() {
            override fun testStarted(description: Description) {
                println("  … ${description.className.substringAfterLast('.')} > ${description.methodName}")
            }

            override fun testFailure(failure: Failure) {
                println("  FAILED ${failure.description.displayName}: ${failure.message}")
            }

            override fun testIgnored(description: Description) {
                ignored++
            }
        })
        val result = core.run(*classes.toTypedArray())
        for (f in result.failures) {
            println("== ${f.description.displayName}")
            println(f.trace)
        }
        val failed = result.failureCount
        println("kotlin: ${result.runCount - failed} passed, $failed failed, ${ignored + result.assumptionFailureCount} skipped")
        exitProcess(if (result.wasSuccessful()) 0 else 1)
    }
}
