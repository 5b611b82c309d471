package dev.edgegeonotify.inbox

import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.cancel
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNotNull
import org.junit.Assert.fail
import org.junit.Test
import org.junit.runner.RunWith
import org.junit.runners.Parameterized
import org.json.JSONObject
import java.io.File

/**
 * [GeoClient] against the compiled worker in workerd (started by tests/js/kotlin_stack.mjs), on
 * every case of clients/conformance/geo/cases.json: the file the TypeScript SDK runs in
 * tests/js/sdk_geo.test.mjs, reduced to the same comparable values, so both SDKs give the same
 * answers and error codes for the same inputs. A call this runner does not know fails the case.
 */
@RunWith(Parameterized::class)
class GeoIntegrationTest(private val name: String, private val case: JSONObject) {
    companion object {
        @JvmStatic
        @Parameterized.Parameters(name = "{0}")
        fun cases(): List<Array<Any>> {
            val doc = parseObject(File(repoRoot(), "clients/conformance/geo/cases.json").readText())
            return doc.arr("cases").objects().map { arrayOf<Any>("${it.str("call")}: ${it.str("name")}", it) }
        }
    }

    private val base = System.getenv("INBOX_BASE_URL") ?: error("INBOX_BASE_URL is not set (run clients/kotlin/build.sh)")
    private val geo = GeoClient(base, config = InboxConfig(retries = 0))

    /** A case's number: the strings "NaN", "Infinity" and "-Infinity" stand for what JSON cannot hold. */
    private fun num(v: Any?): Double = when (v) {
        is Number -> v.toDouble()
        "NaN" -> Double.NaN
        "Infinity" -> Double.POSITIVE_INFINITY
        "-Infinity" -> Double.NEGATIVE_INFINITY
        else -> error("$name: $v is not a number")
    }

    private fun numAt(k: String) = num(case.opt(k))

    private fun fields(): List<GeoField>? = if (!case.has("fields")) null else {
        val a = case.arr("fields")
        List(a.length()) { i -> GeoField.entries.single { it.wire == a.getString(i) } }
    }

    /** The call, reduced to what `expect` compares (as the TypeScript test reduces it). */
    private suspend fun run(): Map<String, Any?> = when (val call = case.str("call")) {
        "whereIs" -> {
            val r = geo.whereIs(numAt("lat"), numAt("lon"), fields())
            assertEquals("$name: lat as parsed", numAt("lat"), r.lat, 0.0)
            assertEquals("$name: lon as parsed", numAt("lon"), r.lon, 0.0)
            mapOf("country" to r.country?.alpha2, "timeZone" to r.timeZone)
        }
        "whereAre" -> {
            val pts = case.arr("points")
            val points = List(pts.length()) { i -> pts.getJSONArray(i).let { LatLon(num(it.opt(0)), num(it.opt(1))) } }
            val r = geo.whereAre(points, fields())
            mapOf("countries" to r.results.map { it?.alpha2 }, "timeZones" to r.timeZones)
        }
        "me" -> {
            val at = case.objOrNull("at")?.let { LatLon(num(it.opt("lat")), num(it.opt("lon"))) }
            val r = geo.me(at)
            val got = linkedMapOf<String, Any?>(
                "zone" to r.timeZone?.let { mapOf("name" to it.name, "source" to it.source.wire) },
                "cfTimezone" to r.cfTimezone,
            )
            if (at != null) {
                got["country"] = r.coordinates?.country?.alpha2
                got["timeZone"] = r.coordinates?.timeZone
            }
            got
        }
        else -> error("$name: unknown call '$call'")
    }

    @Test
    fun case(): Unit = runBlocking {
        val expect = plain(case.obj("expect")).asObj()
        val error = expect["error"]?.asObj()
        if (error == null) {
            assertEquals(name, expect, run())
            return@runBlocking
        }
        try {
            run()
            fail("$name: expected ${error["code"]}")
        } catch (e: InboxException) {
            assertEquals(name, error, mapOf("status" to e.status.toLong(), "code" to e.code))
            assertNotNull("$name: the answer's X-Request-Id", e.requestId)
        }
    }
}

/** An [InboxClient]'s [InboxClient.geo] shares its requests: one call counts as the client's. */
class InboxClientGeoTest {
    @Test
    fun theClientsGeoUsesItsRequests(): Unit = runBlocking {
        val base = System.getenv("INBOX_BASE_URL") ?: error("INBOX_BASE_URL is not set (run clients/kotlin/build.sh)")
        var asked = 0
        val scope = CoroutineScope(SupervisorJob())
        val c = InboxClient(base, "geo-user", { asked++; "not-a-jwt" }, scope)
        val r = c.geo.whereIs(47.697, 8.691, listOf(GeoField.COUNTRY))
        assertEquals(PointResult(47.697, 8.691, Country("DE", "DEU"), null), r)
        assertEquals("one request, counted by the client", 1L, c.requestsSent)
        assertEquals("the cached token, asked once", 1, asked)
        scope.cancel()
    }
}
