package dev.edgegeonotify.inbox

import kotlinx.coroutines.CancellationException
import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter
import java.time.format.DateTimeParseException
import java.util.concurrent.atomic.AtomicLong

/**
 * Every error the client reports, with a stable [code]: the server's (an [InboxException]),
 * `network` (no answer), `token` (getToken() threw), `stopped` (the client was stopped), or a
 * stream's ([StreamException]).
 */
open class InboxError(val code: String, message: String, cause: Throwable? = null) : Exception(message, cause)

/** An error the server answered, with its stable `code` and the `X-Request-Id` to quote. */
class InboxException(
    val status: Int,
    code: String,
    message: String,
    val requestId: String?,
) : InboxError(code, "$status $code: $message" + (requestId?.let { " (request $it)" } ?: "")) {
    companion object {
        fun of(r: HttpResponse): InboxException {
            val err = ErrorBody.fromJsonOrNull(r.body)
            val code = err?.code ?: if (r.status == 401) "unauthorized" else "http_${r.status}"
            return InboxException(r.status, code, err?.message ?: r.body.take(200), r.header("x-request-id"))
        }
    }
}

/** How the client treats an answer (clients/conformance/README.md, "Answer classes"). */
internal enum class AnswerClass { OK, FINAL, AUTH, TRANSIENT }

internal fun classify(r: HttpResponse): AnswerClass = when {
    r.status in 200..299 -> AnswerClass.OK
    r.status == 401 -> AnswerClass.AUTH
    r.status == 408 || r.status == 425 || r.status == 429 || r.status >= 500 -> AnswerClass.TRANSIENT
    r.status == 409 && ErrorBody.fromJsonOrNull(r.body)?.code == "idempotency_in_flight" -> AnswerClass.TRANSIENT
    else -> AnswerClass.FINAL
}

/** `Retry-After` as a wait in ms from [nowMs]: seconds, or an HTTP-date; null if absent or unreadable. */
internal fun retryAfterMs(value: String?, nowMs: Long): Long? {
    val v = value?.trim()?.takeIf { it.isNotEmpty() } ?: return null
    v.toLongOrNull()?.let { return maxOf(0, it * 1000) }
    return try {
        maxOf(0, ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli() - nowMs)
    } catch (e: DateTimeParseException) {
        null
    }
}

/** Where one request ended. */
internal sealed class Sent {
    /** An answer to act on: a 2xx or a final 4xx. */
    class Answer(val response: HttpResponse) : Sent()

    /** No answer to act on: the lane stops ([error] surfaced). [resumeAtMs]: a `Retry-After`
     *  too long to wait in line, after which the work is asked for again. */
    class Stopped(val error: InboxError, val resumeAtMs: Long? = null) : Sent()
}

/**
 * One request with the shared answer classes: a 401 gets one token refresh and an immediate
 * resend; a transient answer (no answer at all, 408, 425, 429, 5xx, 409 `idempotency_in_flight`)
 * waits `Retry-After` or full-jitter backoff and is resent, [InboxConfig.retries] times at most.
 */
internal class Requester(
    private val base: String,
    private val transport: InboxTransport,
    /** Null for the public routes (geo): no `Authorization`, and a 401 is final. */
    private val tokens: TokenCache?,
    private val config: InboxConfig,
) {
    val sent = AtomicLong()
    val received = AtomicLong()
    private val clock get() = config.clock

    suspend fun send(method: String, path: String, body: String? = null, idempotencyKey: String? = null): Sent {
        var refreshed = false
        var retries = 0
        while (true) {
            var failure: InboxError
            var after: Long? = null
            try {
                val token = if (tokens == null) null else try {
                    tokens.current()
                } catch (e: CancellationException) {
                    throw e
                } catch (e: Exception) {
                    throw InboxError("token", "getToken() failed: ${e.message}", e)
                }
                val headers = linkedMapOf("Accept" to "application/json")
                if (token != null) headers["Authorization"] = "Bearer $token"
                if (body != null) headers["Content-Type"] = "application/json"
                if (idempotencyKey != null) headers["Idempotency-Key"] = idempotencyKey
                sent.incrementAndGet()
                val r = transport.execute(HttpRequest(method, base + path, headers, body))
                received.addAndGet(r.body.toByteArray(Charsets.UTF_8).size.toLong())
                when (classify(r)) {
                    AnswerClass.OK, AnswerClass.FINAL -> return Sent.Answer(r)
                    AnswerClass.AUTH -> {
                        if (refreshed || tokens == null || token == null) return Sent.Stopped(InboxException.of(r))
                        refreshed = true
                        try {
                            tokens.refresh(token)
                        } catch (e: CancellationException) {
                            throw e
                        } catch (e: Exception) {
                            throw InboxError("token", "getToken() failed: ${e.message}", e)
                        }
                        continue // the resend after a refresh is not a retry
                    }
                    AnswerClass.TRANSIENT -> {
                        failure = InboxException.of(r)
                        after = retryAfterMs(r.header("retry-after"), clock.nowMs())
                    }
                }
            } catch (e: CancellationException) {
                throw e
            } catch (e: InboxError) {
                failure = e // getToken() failed
            } catch (e: Exception) {
                failure = InboxError("network", e.message ?: e.toString(), e) // no answer: nothing known applied
            }
            if (after != null && after > config.maxWaitMs) return Sent.Stopped(failure, clock.nowMs() + after)
            if (retries >= config.retries) return Sent.Stopped(failure)
            val wait = after ?: fullJitter(config.retryBaseMs, config.retryMaxMs, retries, config.random)
            retries++
            clock.sleep(wait)
        }
    }
}
