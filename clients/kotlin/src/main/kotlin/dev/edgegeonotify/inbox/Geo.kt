package dev.edgegeonotify.inbox

import org.json.JSONException
import org.json.JSONObject
import org.json.JSONStringer
import java.net.URLEncoder

/*
 * Where is this point: its country and IANA time zone (GET and POST /v1/geo/country), and what
 * the edge knows of the caller (GET /v1/geo/me). Public routes, rate-limited per IP. The models
 * are checked against /openapi.json by ContractTest ([Contract.models]); the calls and their
 * answers against the worker by GeoIntegrationTest, on the cases the TypeScript SDK runs too
 * (clients/conformance/geo/cases.json).
 */

/** A coordinate in degrees (WGS 84). Not checked here: the server answers `invalid_coordinate`. */
data class LatLon(val lat: Double, val lon: Double)

/** A field of a geo answer that `fields` can ask for (`country` always comes). */
enum class GeoField(val wire: String) { COUNTRY("country"), TIME_ZONE("timeZone") }

/** A country by its ISO 3166-1 codes (`Country`). */
data class Country(val alpha2: String, val alpha3: String) {
    companion object {
        fun fromJson(m: JSONObject) = Country(m.str("alpha2"), m.str("alpha3"))
    }
}

/** `GET /v1/geo/country` (`PointResult`): [country] is null on the open sea; [timeZone] is null
 *  only when `fields` left it out (the open sea answers `Etc/GMT±N`). */
data class PointResult(val lat: Double, val lon: Double, val country: Country?, val timeZone: String?) {
    companion object {
        fun fromJson(m: JSONObject) = PointResult(
            lat = m.double("lat"),
            lon = m.double("lon"),
            country = if (m.isNull("country")) null else Country.fromJson(m.obj("country")),
            timeZone = m.strOrNull("timeZone"),
        )
    }
}

/** `POST /v1/geo/country` (`CountryResults`): one answer per point, in request order. */
data class CountryResults(val results: List<Country?>, val timeZones: List<String>?) {
    companion object {
        fun fromJson(m: JSONObject): CountryResults {
            val r = m.arr("results")
            return CountryResults(
                results = List(r.length()) { i -> if (r.isNull(i)) null else Country.fromJson(r.optJSONObject(i) ?: throw JSONException("results[$i] must be an object")) },
                timeZones = if (m.isNull("timeZones")) null else m.arr("timeZones").let { a -> List(a.length()) { i -> a.opt(i) as? String ?: throw JSONException("timeZones[$i] must be a string") } },
            )
        }
    }
}

/** Where the caller's zone came from (`TimeZoneSource`). */
enum class TimeZoneSource(val wire: String) {
    COORDINATES("coordinates"), EDGE("edge");

    companion object {
        fun of(wire: String): TimeZoneSource = entries.firstOrNull { it.wire == wire }
            ?: throw JSONException("unknown time zone source '$wire'")
    }
}

/** A time zone and where it came from (`TimeZoneAnswer`). */
data class TimeZoneAnswer(val name: String, val source: TimeZoneSource) {
    companion object {
        fun fromJson(m: JSONObject) = TimeZoneAnswer(m.str("name"), TimeZoneSource.of(m.str("source")))
    }
}

/** One address's answer (`IpResult`); [reason] says why [country] is null. */
data class IpResult(val ip: String, val country: String?, val reason: String?) {
    companion object {
        fun fromJson(m: JSONObject) = IpResult(m.str("ip"), m.strOrNull("country"), m.strOrNull("reason"))
    }
}

/** The credit line a database's licence asks for (`Attribution`). */
data class Attribution(val text: String, val url: String, val license: String) {
    companion object {
        fun fromJson(m: JSONObject) = Attribution(m.str("text"), m.str("url"), m.str("license"))
    }
}

/** Which IP database answered (`Ipdb`). */
data class Ipdb(val version: String, val source: String, val attribution: Attribution?) {
    companion object {
        fun fromJson(m: JSONObject) = Ipdb(m.str("version"), m.str("source"), m.objOrNull("attribution")?.let { Attribution.fromJson(it) })
    }
}

/** `GET /v1/geo/me` (`Me`): what each source says about the caller. [timeZone] is the
 *  coordinates' zone when given, else the edge's (`request.cf.timezone`, also [cfTimezone]). */
data class Me(
    val cfCountry: String?,
    val ip: IpResult?,
    val coordinates: PointResult?,
    val cfTimezone: String?,
    val timeZone: TimeZoneAnswer?,
    val agree: Boolean?,
    val sources: Int,
    val ipdb: Ipdb,
) {
    companion object {
        fun fromJson(m: JSONObject) = Me(
            cfCountry = m.strOrNull("cf_country"),
            ip = m.objOrNull("ip")?.let { IpResult.fromJson(it) },
            coordinates = m.objOrNull("coordinates")?.let { PointResult.fromJson(it) },
            cfTimezone = m.strOrNull("cf_timezone"),
            timeZone = m.objOrNull("time_zone")?.let { TimeZoneAnswer.fromJson(it) },
            agree = m.opt("agree") as? Boolean,
            sources = m.long("sources").toInt(),
            ipdb = Ipdb.fromJson(m.obj("ipdb")),
        )
    }
}

/**
 * The geo calls, through the same request path as the inbox (answer classes, `Retry-After`,
 * backoff): a refused call throws an [InboxException] with the server's code (`invalid_coordinate`,
 * `invalid_parameter`, `empty_batch`, `invalid_point`, …), no answer an [InboxError] (`network`),
 * an unreadable answer `invalid_answer`. An [InboxClient]'s [InboxClient.geo] shares its requests
 * (and sends its token along: harmless, the routes are public); this constructor needs no token.
 */
class GeoClient internal constructor(private val http: Requester) {
    constructor(baseUrl: String, transport: InboxTransport = OkHttpTransport(), config: InboxConfig = InboxConfig()) :
        this(Requester(baseUrl.trimEnd('/'), transport, null, config))

    /** The country (null on the open sea) and time zone of one point; [fields] null = all. */
    suspend fun whereIs(lat: Double, lon: Double, fields: List<GeoField>? = null): PointResult =
        call("GET", "/v1/geo/country?lat=${num(lat)}&lon=${num(lon)}" + (fields?.let { "&" + fieldsParam(it) } ?: ""), null) { PointResult.fromJson(it) }

    /** Up to 10 000 points in one request: `results[i]` and `timeZones[i]` answer `points[i]`. */
    suspend fun whereAre(points: List<LatLon>, fields: List<GeoField>? = null): CountryResults {
        val w = JSONStringer().`object`().key("points").array()
        // A non-finite number goes as null, as JSON.stringify sends it (the server refuses it alike).
        for (p in points) w.array().value(p.lat.takeIf { it.isFinite() }.orJsonNull()).value(p.lon.takeIf { it.isFinite() }.orJsonNull()).endArray()
        val body = w.endArray().endObject().toString()
        return call("POST", "/v1/geo/country" + (fields?.let { "?" + fieldsParam(it) } ?: ""), body) { CountryResults.fromJson(it) }
    }

    /** The caller's edge country and zone, its IP's country, and (given [at]) that point's answer. */
    suspend fun me(at: LatLon? = null): Me =
        call("GET", "/v1/geo/me" + (at?.let { "?lat=${num(it.lat)}&lon=${num(it.lon)}" } ?: ""), null) { Me.fromJson(it) }

    private suspend fun <T> call(method: String, path: String, body: String?, parse: (JSONObject) -> T): T =
        when (val sent = http.send(method, path, body)) {
            is Sent.Stopped -> throw sent.error
            is Sent.Answer -> {
                val r = sent.response
                if (r.status !in 200..299) throw InboxException.of(r)
                try {
                    parse(parseObject(r.body))
                } catch (e: JSONException) {
                    throw InboxError("invalid_answer", "unreadable answer to $method $path: ${e.message}", e)
                }
            }
        }

    private fun num(v: Double) = URLEncoder.encode(v.toString(), "UTF-8")

    private fun fieldsParam(fields: List<GeoField>) = "fields=" + fields.joinToString(",") { it.wire }
}

private fun JSONObject.double(k: String): Double =
    (opt(k) as? Number)?.toDouble() ?: throw JSONException("field '$k' must be a number")
