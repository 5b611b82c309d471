package dev.edgegeonotify.inbox

import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertTrue
import org.junit.Test
import java.util.Base64

class PositionTest {
    private fun pos(ms: Long, id: String) =
        Base64.getUrlEncoder().withoutPadding().encodeToString(jsonText(listOf(ms, id)).toByteArray())

    @Test
    fun positionsOrderByTimeThenId() {
        assertTrue(Position.isOlder(pos(1, "z"), pos(2, "a")))
        assertTrue(Position.isOlder(pos(2, "a"), pos(2, "b")))
        assertFalse(Position.isOlder(pos(2, "b"), pos(2, "b")))
        assertTrue(Position.isOlder(null, pos(0, "")))
        assertFalse(Position.isOlder("garbage", pos(5, "x")), "an undecodable position is never older")
        assertEquals(pos(3, "a"), Position.max(pos(3, "a"), pos(2, "z")))
        assertEquals("garbage", Position.max(pos(3, "a"), "garbage"))
    }

    @Test
    fun base64UrlDecodingMatchesTheJdk() {
        for (n in 0..40) {
            val bytes = ByteArray(n) { (it * 37 + n * 11).toByte() }
            val text = Base64.getUrlEncoder().withoutPadding().encodeToString(bytes)
            org.junit.Assert.assertArrayEquals(bytes, Position.base64UrlDecode(text))
        }
    }

    private fun assertFalse(b: Boolean, msg: String) = org.junit.Assert.assertFalse(msg, b)
}
