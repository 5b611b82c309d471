// For app backends (Node ≥ 22 or any fetch runtime): send events, batches, fan-outs and
// retractions with a service key. Every call carries an Idempotency-Key (derived from the
// content, or yours), so a retry — ours after a 503/409, or yours after a crash — cannot apply
// twice; the key is kept across our own retries.
import { Http } from "./http.ts";
import type { RetryPolicy } from "./http.ts";
import type { NewEvent, RetractionBody } from "./types.ts";

export interface InboxServiceOptions {
  baseUrl: string;
  /** A service key with the `notify:write` scope. Never log it; it is only sent as a header. */
  serviceKey: string;
  fetch?: typeof fetch;
  retry?: Partial<RetryPolicy>;
}

/** One event's outcome. */
export interface SendResult {
  status: "created" | "merged" | "already_applied" | "duplicate" | "muted" | "erased" | "queued" | "processed";
  notificationId?: string;
  accepted?: number;
  results?: Array<{ status: string; notificationId?: string }>;
}

async function digest(text: string): Promise<string> {
  const subtle = (globalThis as { crypto?: Crypto }).crypto?.subtle;
  if (!subtle) throw new Error("crypto.subtle is needed to derive an Idempotency-Key; pass one");
  const h = await subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(h).subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}

export class InboxService {
  readonly #http: Http;
  constructor(o: InboxServiceOptions) {
    this.#http = new Http({ baseUrl: o.baseUrl, getToken: () => o.serviceKey, fetch: o.fetch, retry: o.retry });
  }

  async #post<T>(path: string, body: unknown, key?: string): Promise<T> {
    // Same content → same key: a repeated call replays the first answer instead of applying twice.
    const idempotencyKey = key ?? `sdk-${await digest(`${path}\n${JSON.stringify(body)}`)}`;
    return this.#http.request<T>("POST", path, { body, idempotencyKey });
  }

  /** One event (merged with others of the same owner and itemKey). */
  send(event: NewEvent, opts: { idempotencyKey?: string } = {}): Promise<SendResult> {
    return this.#post("/v1/notifications/events", event, opts.idempotencyKey);
  }

  /** 1–100 events in one request. */
  sendBatch(events: NewEvent[], opts: { idempotencyKey?: string } = {}): Promise<SendResult> {
    return this.#post("/v1/notifications/events", { events }, opts.idempotencyKey);
  }

  /** One event (without `owner`) to many owners (1–10 000; needs the queue beyond 100). */
  fanOut(template: Omit<NewEvent, "owner">, owners: string[], opts: { idempotencyKey?: string } = {}): Promise<SendResult> {
    return this.#post("/v1/notifications/events", { template, owners }, opts.idempotencyKey);
  }

  /** Removes one sender's contribution from an item (the item goes when it was the last). */
  retract(r: RetractionBody, opts: { idempotencyKey?: string } = {}): Promise<{ status: "updated" | "deleted" | "not_found" }> {
    return this.#post("/v1/notifications/retractions", r, opts.idempotencyKey);
  }
}
export { InboxError } from "./http.ts";
