// One request path for the SDK: JSON in and out, auth (one cached token; a fresh one once on
// 401), transient answers retried after `Retry-After` or a full-jitter backoff, and errors that
// carry the server's `code` and the `X-Request-Id` of the answer. The answer classes are
// clients/conformance/README.md's ("Operations"), shared with the Kotlin SDK.
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
  /**
   * True when trying again later may succeed (the "transient" class): no answer (network, or
   * getToken threw), 408, 425, 429, 5xx, and 409 `idempotency_in_flight` (another 409 is final).
   */
  get retryable(): boolean {
    if (this.status === 409) return this.code === "idempotency_in_flight";
    return this.status === 0 || [408, 425, 429].includes(this.status) || this.status >= 500;
  }
}

/** Retry policy for transient failures (`InboxError.retryable`). */
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
  /**
   * The bearer token: asked once and cached (until 30 s before a JWT's `exp`), with
   * `refresh: true` only after a 401. Omit for public routes.
   */
  getToken?: (opts: { refresh: boolean }) => string | Promise<string>;
  fetch?: typeof fetch;
  retry?: Partial<RetryPolicy>;
  /** Waits `ms` (tests pass a recorder; default setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): jitter source (default Math.random). */
  random?: () => number;
  /** The clock (ms since the epoch) for HTTP-date `Retry-After` and token expiry (default Date.now). */
  now?: () => number;
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

/** A cached token is asked for again this long before its `exp`. */
const EXPIRY_MARGIN_MS = 30_000;

/** A JWT's `exp` in ms; null when the token is not a JWT or has none (then it is kept). */
export function tokenExpiry(token: string): number | null {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const exp = (JSON.parse(atob(part)) as { exp?: unknown }).exp;
    return typeof exp === "number" ? exp * 1000 : null;
  } catch {
    return null;
  }
}

export class Http {
  readonly baseUrl: string;
  readonly #getToken: HttpOptions["getToken"];
  readonly #fetch: typeof fetch;
  readonly #retry: RetryPolicy;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #now: () => number;
  #token: string | null = null;
  /** The getToken call under way: concurrent callers (HTTP and the socket) share it. */
  #asking: { refresh: boolean; promise: Promise<string> } | null = null;

  constructor(o: HttpOptions) {
    this.baseUrl = o.baseUrl.replace(/\/+$/, "");
    this.#getToken = o.getToken;
    // Bound late: a test (or a polyfill) may replace globalThis.fetch after construction.
    this.#fetch = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#retry = { ...DEFAULT_RETRY, ...o.retry };
    this.#sleep = o.sleep ?? sleeper;
    this.#random = o.random ?? Math.random;
    this.#now = o.now ?? Date.now;
  }

  /**
   * The token for a request or a socket: the cached one unless it is a JWT within 30 s of its
   * `exp` (then `getToken({refresh: false})`); `refresh` (after a 401 or a 4001 close) asks
   * `getToken({refresh: true})`. A failing getToken rejects with code `token` (transient).
   */
  async token(refresh = false): Promise<string | null> {
    const get = this.#getToken;
    if (!get) return null;
    if (!refresh && this.#token !== null) {
      const exp = tokenExpiry(this.#token);
      if (exp === null || exp - this.#now() > EXPIRY_MARGIN_MS) return this.#token;
    }
    const asking = this.#asking;
    // Join a call under way, unless it is a plain one and a refresh is wanted.
    if (asking && (asking.refresh || !refresh)) return asking.promise;
    const promise = (async () => {
      if (asking) await asking.promise.catch(() => null);
      try {
        return await get({ refresh });
      } catch (cause) {
        throw new InboxError(0, "token", `getToken failed: ${String((cause as Error)?.message ?? cause)}`, null, null, { cause });
      }
    })();
    const mine = { refresh, promise };
    this.#asking = mine;
    try {
      const t = await promise;
      this.#token = t;
      return t;
    } finally {
      if (this.#asking === mine) this.#asking = null;
    }
  }

  /** The backoff before retry `attempt` (0-based): full jitter. */
  backoff(attempt: number, baseMs = this.#retry.baseMs, maxMs = this.#retry.maxMs): number {
    return Math.floor(this.#random() * Math.min(maxMs, baseMs * 2 ** attempt));
  }

  /** The retry policy in force (defaults merged with the options). */
  get retry(): Readonly<RetryPolicy> { return this.#retry; }

  /**
   * Sends one request and parses the JSON answer. A transient failure is retried `attempts`
   * times, after `Retry-After` when given (one longer than `maxWaitMs` fails at once), else
   * after the backoff; a 401 gets one fresh token and an immediate resend (not a retry).
   */
  async request<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        const used = await this.token(false);
        res = await this.#send(method, path, o, used);
        if (res.status === 401 && this.#getToken && !refreshed) {
          // The token expired (or was revoked) while in use: one fresh token (unless another
          // request refreshed it meanwhile), one immediate resend.
          refreshed = true;
          await res.body?.cancel();
          const fresh = this.#token !== null && this.#token !== used ? this.#token : await this.token(true);
          res = await this.#send(method, path, o, fresh);
        }
      } catch (cause) {
        const err = cause instanceof InboxError ? cause : new InboxError(0, "network", String((cause as Error)?.message ?? cause), null, null, { cause });
        if (!err.retryable || attempt >= this.#retry.attempts) throw err;
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
      const err = await errorOf(res, this.#now());
      if (!err.retryable || attempt >= this.#retry.attempts) throw err;
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

async function errorOf(res: Response, now: number): Promise<InboxError> {
  const requestId = res.headers.get("x-request-id");
  const retryAfter = parseRetryAfter(res.headers.get("retry-after"), now);
  const text = await res.text().catch(() => "");
  let body: Partial<ErrorBody> | null = null;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    // not the error shape: reported with an HTTP code below
  }
  const e = body?.error;
  const fallback = res.status === 401 ? "unauthorized" : `http_${res.status}`;
  return new InboxError(res.status, e?.code ?? fallback, e?.message ?? text.slice(0, 200), requestId, retryAfter);
}

/** A random Idempotency-Key (visible ASCII, as the server requires). */
export function newKey(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  // React Native without a crypto polyfill: not secret, only unique enough per device.
  return `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}-${Math.random().toString(36).slice(2)}`;
}
