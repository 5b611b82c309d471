package dev.edgegeonotify.inbox

import kotlinx.coroutines.CancellableContinuation
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineExceptionHandler
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.suspendCancellableCoroutine
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.resume
import kotlin.random.Random

/**
 * A world the test controls: one thread, a dispatcher that runs nothing until [settle], and a
 * clock that moves only in [fireNext]/[advance] (kotlinx-coroutines-test is not available here).
 * With a [pick] source the ready coroutines run in a seeded random order (the interleaving
 * harness); without, first in first out (the vectors).
 */
class Sim(private val startMs: Long = 0, private val pick: Random? = null) : CoroutineDispatcher(), InboxClock {
    private val ready = ArrayList<Runnable>()
    private class Timer(val at: Long, val seq: Long, val fire: () -> Unit)
    private val timers = ArrayList<Timer>()
    private var seq = 0L

    /** Virtual ms since the start. */
    var t = 0L
        private set
    val failures = ArrayList<Throwable>()
    val scope = CoroutineScope(SupervisorJob() + this + CoroutineExceptionHandler { _, e -> failures.add(e) })

    override fun dispatch(context: CoroutineContext, block: Runnable) {
        ready.add(block)
    }

    override fun nowMs(): Long = startMs + t

    override suspend fun sleep(ms: Long) = suspendCancellableCoroutine { c: CancellableContinuation<Unit> ->
        val timer = at(t + maxOf(0, ms)) { if (c.isActive) c.resume(Unit) }
        c.invokeOnCancellation { timers.remove(timer) }
    }

    /** Runs [fire] when the clock reaches [atMs] (virtual ms since the start). */
    private fun at(atMs: Long, fire: () -> Unit): Timer = Timer(atMs, seq++, fire).also { timers.add(it) }

    fun schedule(delayMs: Long, fire: () -> Unit) {
        at(t + delayMs, fire)
    }

    /** Runs every ready coroutine until none is (the clock stands still). */
    fun settle() {
        var steps = 0
        while (ready.isNotEmpty()) {
            check(++steps < 1_000_000) { "settle does not end (a busy loop?)" }
            val i = if (pick == null) 0 else pick.nextInt(ready.size)
            ready.removeAt(i).run()
        }
        failures.firstOrNull()?.let { throw AssertionError("a coroutine failed: $it", it) }
    }

    fun hasReady() = ready.isNotEmpty()

    fun nextTimerAt(): Long? = timers.minOfOrNull { it.at }

    /** Moves the clock to the next timer, fires it and settles; false when there is none. */
    fun fireNext(limit: Long = Long.MAX_VALUE): Boolean {
        val next = timers.minWithOrNull(compareBy<Timer> { it.at }.thenBy { it.seq }) ?: return false
        if (next.at > limit) return false
        timers.remove(next)
        t = maxOf(t, next.at)
        next.fire()
        settle()
        return true
    }

    /** Moves the clock by [ms], firing the timers on the way in order. */
    fun advance(ms: Long) {
        val end = t + ms
        settle()
        while (fireNext(end)) {
            // each fired timer settles
        }
        t = end
    }
}
