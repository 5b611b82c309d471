// One request path for the SDK: JSON in and out, auth (a fresh token once on 401), backpressure
// (429/503/409 wait for `Retry-After`), and errors that carry the server's `code` and the
// `X-Request-Id` of the answer.
import type { ErrorBody } from "./types.ts";

/** Every error the SDK surfaces. `code` is the server's stable code, or an SDK code:
 * `network` (no answer), `bad_response` (an answer that is not the documented JSON). */
export class InboxError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  /** The server's `Retry-After`, in ms, when it sent one. */
  readonly retryAfterMs: number | null;
  constructor(status: number, code: string, message: string, requestId: string | null = null, retryAfterMs: number | null = null, options?: { cause?: unknown }) {
    super(`${code}: ${message}${requestId ? ` (request ${requestId})` : ""}`, options);
    this.name = "InboxError";
    this.status = status;
    this.code = code;
    this.requestId = requestId;
    this.retryAfterMs = retryAfterMs;
  }
  /** True when trying again later may succeed (network, 408/409/425/429, 5xx). */
  get retryable(): boolean {
    return this.status === 0 || [408, 409, 425, 429].includes(this.status) || this.status >= 500;
  }
}

/** Retry policy for 429/503/409 and network failures. */
export interface RetryPolicy {
  /** Retries after the first attempt (default 3). */
  attempts: number;
  /** Backoff without `Retry-After`: full jitter from `baseMs` doubling to `maxMs`. */
  baseMs: number;
  maxMs: number;
  /** A `Retry-After` longer than this is not waited for: the call fails at once (default 60 s). */
  maxWaitMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 3, baseMs: 250, maxMs: 8_000, maxWaitMs: 60_000 };

export interface HttpOptions {
  baseUrl: string;
  /** The bearer token; called again (fresh) after a 401. Omit for public routes. */
  getToken?: (opts: { refresh: boolean }) => string | Promise<string>;
  fetch?: typeof fetch;
  retry?: Partial<RetryPolicy>;
  /** Waits `ms` (tests pass a recorder; default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): jitter source (default Math.random). */
  random?: () => number;
}

export interface RequestOptions {
  body?: unknown;
  idempotencyKey?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
}

/** `Retry-After`: delta-seconds or an HTTP date, in ms; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}

const sleeper = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Http {
  readonly baseUrl: string;
  readonly #getToken: HttpOptions["getToken"];
  readonly #fetch: typeof fetch;
  readonly #retry: RetryPolicy;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  #token: string | null = null;

  constructor(o: HttpOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, "");
    this.#getToken = o.getToken;
    // Bound late: a test (or a polyfill) may replace globalThis.fetch after construction.
    this.#fetch = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#retry = { ...DEFAULT_RETRY, ...o.retry };
    this.#sleep = o.sleep ?? sleeper;
    this.#random = o.random ?? Math.random;
  }

  /** A token: the cached one, or a fresh one from `getToken` (always when `refresh`). */
  async token(refresh = false): Promise<string | null> {
    if (!this.#getToken) return null;
    if (refresh || this.#token === null) this.#token = await this.#getToken({ refresh });
    return this.#token;
  }

  /** The backoff before retry `attempt` (0-based): full jitter. */
  backoff(attempt: number, baseMs = this.#retry.baseMs, maxMs = this.#retry.maxMs): number {
    return Math.floor(this.#random() * Math.min(maxMs, baseMs * 2 ** attempt));
  }

  /** Sends one request (retrying as the policy says) and parses the JSON answer. */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.#send(method, path, o, await this.token(false));
        if (res.status === 401 && this.#getToken && !refreshed) {
          // The token expired (or was revoked) while in use: one fresh token, one retry.
          refreshed = true;
          await res.body?.cancel();
          res = await this.#send(method, path, o, await this.token(true));
        }
      } catch (cause) {
        if (cause instanceof InboxError) throw cause;
        const err = new InboxError(0, "network", String((cause as Error)?.message ?? cause), null, null, { cause });
        if (attempt >= this.#retry.attempts) throw err;
        await this.#sleep(this.backoff(attempt));
        continue;
      }
      if (res.ok) {
        const text = await res.text();
        try {
          return (text ? JSON.parse(text) : null) as T;
        } catch {
          throw new InboxError(res.status, "bad_response", "the answer is not JSON", res.headers.get("x-request-id"));
        }
      }
      const err = await errorOf(res);
      const retryable = err.status === 429 || err.status === 503 || err.status === 409;
      if (!retryable || attempt >= this.#retry.attempts) throw err;
      const wait = err.retryAfterMs ?? this.backoff(attempt);
      // Honour Retry-After: never earlier; if it is longer than we may wait, fail now.
      if (wait > this.#retry.maxWaitMs) throw err;
      await this.#sleep(wait);
    }
  }

  #send(method: string, path: string, o: RequestOptions, token: string | null): Promise<Response> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.body !== undefined) headers["content-type"] = "application/json";
    if (token) headers.authorization = `Bearer ${token}`;
    if (o.idempotencyKey) headers["idempotency-key"] = o.idempotencyKey;
    return this.#fetch(this.baseUrl + path, {
      method,
      headers,
      body: o.body === undefined ? undefined : JSON.stringify(o.body),
    });
  }
}

async function errorOf(res: Response): Promise<InboxError> {
  const requestId = res.headers.get("x-request-id");
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"));
  const text = await res.text().catch(() => "");
  let body: Partial<ErrorBody> | null = null;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    // not the error shape: reported with an HTTP code below
  }
  const e = body?.error;
  return new InboxError(res.status, e?.code ?? `http_${res.status}`, e?.message ?? text.slice(0, 200), requestId, retryAfter);
}

/** A random Idempotency-Key (visible ASCII, as the server requires). */
export function newKey(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  // React Native without a crypto polyfill: not secret, only unique enough per device.
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}
