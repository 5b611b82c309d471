package dev.edgegeonotify.inbox

import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import java.io.File

/**
 * The typed models against the worker's own /openapi.json (served by the compiled worker in
 * workerd; tests/js/kotlin_stack.mjs saves it to INBOX_OPENAPI): every field a model declares is
 * a property of the schema and every property of the schema is declared (a renamed or added
 * field fails here), response fields the client requires are required by the server, and the
 * enums the client sends and reads are the server's.
 */
class ContractTest {
    private val doc: Map<String, Any?> by lazy {
        val path = System.getenv("INBOX_OPENAPI") ?: error("INBOX_OPENAPI is not set (run clients/kotlin/build.sh)")
        plain(parseObject(File(path).readText())).asObj()
    }

    private fun resolve(node: Any?): Map<String, Any?> {
        val m = node.asObj()
        val ref = m["\$ref"] as? String ?: return m
        var cur: Any? = doc
        for (part in ref.removePrefix("#/").split('/')) cur = cur.asObj()[part.replace("~1", "/").replace("~0", "~")]
        return resolve(cur)
    }

    private fun at(path: List<String>): Map<String, Any?> {
        var cur: Any? = doc
        for (p in path) {
            cur = resolve(cur)[p] ?: throw AssertionError("no ${path.joinToString(" > ")} in /openapi.json (stopped at '$p')")
        }
        return resolve(cur)
    }

    @Suppress("UNCHECKED_CAST")
    private fun strings(v: Any?): Set<String> = (v as? List<String>)?.toSet().orEmpty()

    @Test
    fun everyModelMatchesItsSchema() {
        for (m in Contract.models) {
            val schema = at(m.schema)
            val props = schema["properties"].asObj().keys
            assertEquals("${m.name}: fields vs the schema's properties", props.toSortedSet(), m.fields.toSortedSet())
            val required = strings(schema["required"])
            val isRequest = "requestBody" in m.schema
            if (isRequest) {
                assertTrue("${m.name}: the server requires $required, the model sends ${m.fields}", m.fields.containsAll(required))
                assertTrue("${m.name}: the model always sends ${m.required}, the server requires $required", m.required.containsAll(required))
            } else {
                assertEquals("${m.name}: required fields", required.toSortedSet(), m.required.toSortedSet())
            }
        }
    }

    @Test
    fun theEnumsTheClientSendsAndReadsAreTheServers() {
        val mark = at(listOf("paths", "/v1/notifications/mark", "post", "requestBody", "content", "application/json", "schema"))
        assertEquals(strings(mark["properties"].asObj()["flag"].asObj()["enum"]), Contract.flagValues)
        val bulk = at(listOf("paths", "/v1/notifications/bulk", "post", "requestBody", "content", "application/json", "schema"))
        assertEquals(strings(bulk["properties"].asObj()["action"].asObj()["enum"]), Contract.bulkValues)
        val badge = at(listOf("components", "schemas", "BadgeMessage"))
        assertEquals(strings(badge["properties"].asObj()["type"].asObj()["enum"]), Contract.badgeType)
        val hint = at(listOf("components", "schemas", "ReconnectHint"))
        assertEquals(strings(hint["properties"].asObj()["jitter"].asObj()["enum"]), Contract.jitterValues)
        val source = at(listOf("components", "schemas", "TimeZoneSource"))
        assertEquals((source["oneOf"] as List<*>).map { resolve(it)["const"] }.toSet(), Contract.timeZoneSources)
        // `fields`: the names its pattern allows, `^(country|timeZone)(,(country|timeZone))*$`.
        for ((path, method) in listOf("/v1/geo/country" to "get", "/v1/geo/country" to "post")) {
            val fields = (at(listOf("paths", path, method))["parameters"] as List<*>).map { resolve(it) }.single { it["name"] == "fields" }
            val pattern = fields.obj("schema")["pattern"] as String
            val names = Regex("""^\^\(([^)]*)\)""").find(pattern)?.groupValues?.get(1)?.split('|')?.toSet()
            assertEquals("$method $path fields=", names, Contract.geoFields)
        }
    }

    @Test
    fun theRoutesTheClientCallsExist() {
        val paths = doc.obj("paths")
        for ((path, method) in listOf(
            "/v1/notifications" to "get", "/v1/notifications/changes" to "get", "/v1/notifications/unread-count" to "get",
            "/v1/notifications/stream" to "get", "/v1/notifications/mark" to "post", "/v1/notifications/bulk" to "post",
            "/v1/notifications/items/{itemKey}" to "delete",
            "/v1/geo/country" to "get", "/v1/geo/country" to "post", "/v1/geo/me" to "get",
        )) {
            assertTrue("$method $path in /openapi.json", paths[path]?.asObj()?.containsKey(method) == true)
        }
        // The list parameters the client sends.
        val params = (paths.obj("/v1/notifications").obj("get")["parameters"] as List<*>).map { resolve(it)["name"] }
        assertTrue(params.containsAll(listOf("limit", "cursor")))
        val cp = (paths.obj("/v1/notifications/changes").obj("get")["parameters"] as List<*>).map { resolve(it)["name"] }
        assertTrue(cp.containsAll(listOf("limit", "since")))
        val gp = (paths.obj("/v1/geo/country").obj("get")["parameters"] as List<*>).map { resolve(it)["name"] }
        assertTrue(gp.containsAll(listOf("lat", "lon", "fields")))
        // /v1/geo/me's lat and lon are one form-exploded object parameter.
        val me = (paths.obj("/v1/geo/me").obj("get")["parameters"] as List<*>).map { resolve(it) }
        assertEquals(setOf("lat", "lon"), me.flatMap { it.obj("schema").obj("properties").keys }.toSet())
    }
}
