package dev.edgegeonotify.inbox

import kotlinx.coroutines.delay

/**
 * Time as the client sees it: every wait it makes (a retry's backoff, a `Retry-After`, a poll
 * interval, a reconnect backoff) is a [sleep] here, so tests run on a clock they control.
 */
interface InboxClock {
    fun nowMs(): Long
    suspend fun sleep(ms: Long)
}

/** Wall time and coroutine `delay` (the default). */
object SystemClock : InboxClock {
    override fun nowMs(): Long = System.currentTimeMillis()
    override suspend fun sleep(ms: Long) = delay(ms)
}
