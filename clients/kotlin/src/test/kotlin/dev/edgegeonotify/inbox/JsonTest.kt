package dev.edgegeonotify.inbox

import org.json.JSONException
import org.junit.Assert.assertEquals
import org.junit.Assert.assertThrows
import org.junit.Test

class JsonTest {
    @Test
    fun readsAndWritesTheShapesTheServerSends() {
        val text = """{"a":[1,-2,3.5,true,false,null,12345678901],"s":"q\"\\\n\u00e9\ud83d\ude00","o":{}}"""
        val v = plain(parseObject(text)) as Map<*, *>
        assertEquals(listOf(1L, -2L, 3.5, true, false, null, 12345678901L), v["a"])
        assertEquals("q\"\\\né\uD83D\uDE00", v["s"])
        assertEquals(emptyMap<String, Any?>(), v["o"])
        assertEquals(v, plain(parseObject(jsonText(v))))
    }

    @Test
    fun refusesBrokenTextAndMistypedFields() {
        for (bad in listOf("", "{", "{\"a\" 1}", "\"open", "[1]")) {
            assertThrows(bad, JSONException::class.java) { parseObject(bad) }
        }
        // A number where a string belongs is a broken answer (org.json's getString would coerce it).
        assertThrows(JSONException::class.java) { Counts.fromJson(parseObject("""{"unread":"1","unseen":0}""")) }
        assertThrows(JSONException::class.java) { parseObject("""{"k":1}""").str("k") }
    }

    @Test
    fun aNotificationReadsBackAsItself() {
        val plainItem = testItem("a", 5)
        val odd = plainItem.copy(itemKey = "q\"\\\n\u0001é", landing = "https://x/y?a=1", summary = null, messageArguments = mapOf("k" to "v\"w"))
        for (n in listOf(plainItem, odd)) {
            val text = n.toJson().toString()
            assertEquals(plain(n.toJson()), plain(parseObject(text)))
            assertEquals(n, Notification.fromJson(parseObject(text)))
        }
    }
}
