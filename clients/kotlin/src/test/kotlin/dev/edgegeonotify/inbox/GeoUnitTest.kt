package dev.edgegeonotify.inbox

import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.fail
import org.junit.Test
import java.io.IOException

/**
 * What [GeoClient] sends without a server: no token on the public routes (so a 401 is final,
 * never a refresh), the query and body as written, non-finite numbers in a batch as null (what
 * JSON.stringify sends from the TypeScript SDK), and a broken answer as `invalid_answer`.
 */
class GeoUnitTest {
    /** Answers every request with [answer]; records what was sent. */
    private class Canned(val answer: HttpResponse) : InboxTransport {
        val sent = ArrayList<HttpRequest>()
        override suspend fun execute(request: HttpRequest): HttpResponse = answer.also { sent.add(request) }
        override fun openSocket(url: String, protocols: List<String>, listener: SocketListener): InboxSocket = throw IOException("no socket here")
    }

    private fun geo(t: InboxTransport) = GeoClient("http://x/", t, InboxConfig(retries = 0))

    private fun code(block: suspend () -> Unit): String = runBlocking {
        try {
            block()
            fail("expected an error")
            ""
        } catch (e: InboxError) {
            e.code
        }
    }

    @Test
    fun requestsAsWrittenWithoutAToken(): Unit = runBlocking {
        val t = Canned(HttpResponse(200, emptyMap(), """{"lat":47.697,"lon":8.691,"country":{"alpha2":"DE","alpha3":"DEU"}}"""))
        val r = geo(t).whereIs(47.697, 8.691, listOf(GeoField.COUNTRY))
        assertEquals(PointResult(47.697, 8.691, Country("DE", "DEU"), null), r)
        val req = t.sent.single()
        assertEquals("GET http://x/v1/geo/country?lat=47.697&lon=8.691&fields=country", "${req.method} ${req.url}")
        assertFalse(req.headers.keys.any { it.equals("authorization", ignoreCase = true) })
        geo(t).whereIs(0.0, -150.0, emptyList())
        assertEquals("http://x/v1/geo/country?lat=0.0&lon=-150.0&fields=", t.sent.last().url)
        val m = Canned(
            HttpResponse(
                200, emptyMap(),
                """{"cf_country":"GB","ip":null,"coordinates":null,"cf_timezone":"Europe/London","time_zone":{"name":"Europe/London","source":"edge"},"agree":null,"sources":1,"ipdb":{"version":"v1","source":"bundled","attribution":null}}""",
            ),
        )
        val me = geo(m).me(LatLon(1e-7, -2.5))
        assertEquals("http://x/v1/geo/me?lat=1.0E-7&lon=-2.5", m.sent.single().url)
        assertEquals(Me("GB", null, null, "Europe/London", TimeZoneAnswer("Europe/London", TimeZoneSource.EDGE), null, 1, Ipdb("v1", "bundled", null)), me)
    }

    @Test
    fun aBatchSendsNonFiniteNumbersAsNull(): Unit = runBlocking {
        val t = Canned(HttpResponse(200, emptyMap(), """{"results":[{"alpha2":"DE","alpha3":"DEU"},null],"timeZones":["Europe/Busingen","Etc/GMT+10"]}"""))
        val r = geo(t).whereAre(listOf(LatLon(47.697, 8.691), LatLon(Double.NaN, Double.NEGATIVE_INFINITY)), listOf(GeoField.COUNTRY, GeoField.TIME_ZONE))
        assertEquals(CountryResults(listOf(Country("DE", "DEU"), null), listOf("Europe/Busingen", "Etc/GMT+10")), r)
        val req = t.sent.single()
        assertEquals("POST http://x/v1/geo/country?fields=country,timeZone", "${req.method} ${req.url}")
        assertEquals("""{"points":[[47.697,8.691],[null,null]]}""", req.body)
    }

    @Test
    fun errorsCarryTheServersCodeAndA401IsFinal() {
        val refused = Canned(HttpResponse(400, mapOf("x-request-id" to "r1"), """{"error":{"code":"invalid_coordinate","message":"lat"}}"""))
        assertEquals("invalid_coordinate", code { geo(refused).whereIs(91.0, 0.0) })
        val unauthorized = Canned(HttpResponse(401, emptyMap(), """{"error":{"code":"unauthorized","message":"no"}}"""))
        assertEquals("unauthorized", code { geo(unauthorized).me() })
        assertEquals("one request: no token to refresh", 1, unauthorized.sent.size)
        val broken = Canned(HttpResponse(200, emptyMap(), """{"lat":"north"}"""))
        assertEquals("invalid_answer", code { geo(broken).whereIs(1.0, 2.0) })
    }
}
