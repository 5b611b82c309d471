package dev.edgegeonotify.inbox

import org.junit.Assert.assertEquals
import org.junit.Assert.assertThrows
import org.junit.Test

class JsonTest {
    @Test
    fun parsesAndWritesTheShapesTheServerSends() {
        val text = """{"a":[1,-2,3.5,true,false,null],"s":"q\"\\\n\u00e9\ud83d\ude00","o":{}}"""
        val v = Json.parse(text).asObj()
        assertEquals(listOf(1L, -2L, 3.5, true, false, null), v["a"])
        assertEquals("q\"\\\né\uD83D\uDE00", v["s"])
        assertEquals(emptyMap<String, Any?>(), v["o"])
        assertEquals(v, Json.parse(Json.write(v)))
        assertEquals("""{"k":"\u0001"}""", Json.write(mapOf("k" to "\u0001")))
    }

    @Test
    fun refusesBrokenText() {
        for (bad in listOf("", "{", "[1,]", "{\"a\" 1}", "tru", "\"open", "1 2", "{\"a\":1,}")) {
            assertThrows(bad, Json.ParseException::class.java) { Json.parse(bad) }
        }
    }

    @Test
    fun aNotificationWrittenDirectlyReadsBackAsItsTree() {
        val plain = testItem("a", 5)
        val odd = plain.copy(itemKey = "q\"\\\n\u0001é", landing = "https://x/y?a=1", summary = null, messageArguments = mapOf("k" to "v\"w"))
        for (n in listOf(plain, odd)) {
            val text = Json.write(n)
            assertEquals(n.toJson(), Json.parse(text))
            assertEquals(n, Notification.fromJson(Json.parse(text).asObj()))
        }
    }
}
