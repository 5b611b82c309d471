// The request path with a scripted fetch: token refresh on 401, Retry-After, error fields.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Http, InboxError, parseRetryAfter } from "../src/http.ts";
import { InboxService } from "../src/service.ts";

type Answer = { status: number; body?: unknown; headers?: Record<string, string> } | Error;

/** A fetch that answers from `script` in order and records every request. */
function scripted(script: Answer[]) {
  const calls: Array<{ url: string; method: string; headers: Record<string, string>; body?: string }> = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), method: init?.method ?? "GET", headers: { ...(init?.headers as Record<string, string>) }, body: init?.body as string | undefined });
    const a = script.shift();
    if (!a) throw new Error("script exhausted");
    if (a instanceof Error) throw a;
    return new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status, headers: { "content-type": "application/json", ...a.headers } });
  };
  return { fetch: fetch as typeof globalThis.fetch, calls };
}

const error = (status: number, code: string, headers: Record<string, string> = {}): Answer => ({ status, body: { error: { code, message: code } }, headers: { "x-request-id": `rid-${status}`, ...headers } });

test("a 401 gets one fresh token and one retry; a second 401 surfaces with code and request id", async () => {
  const tokens: boolean[] = [];
  let n = 0;
  const getToken = ({ refresh }: { refresh: boolean }) => { tokens.push(refresh); return `t${++n}`; };
  const s = scripted([error(401, "token_expired"), { status: 200, body: { ok: 1 } }]);
  const http = new Http({ baseUrl: "https://api.test/", getToken, fetch: s.fetch });
  assert.deepEqual(await http.request("GET", "/v1/x"), { ok: 1 });
  assert.deepEqual(tokens, [false, true]);
  assert.deepEqual(s.calls.map((c) => c.headers.authorization), ["Bearer t1", "Bearer t2"]);
  assert.equal(s.calls[0].url, "https://api.test/v1/x");

  const s2 = scripted([error(401, "token_expired"), error(401, "invalid_token")]);
  const http2 = new Http({ baseUrl: "https://api.test", getToken, fetch: s2.fetch });
  const e = await http2.request("GET", "/v1/x").catch((x) => x);
  assert.ok(e instanceof InboxError);
  assert.deepEqual([e.status, e.code, e.requestId], [401, "invalid_token", "rid-401"]);
  assert.equal(s2.calls.length, 2);
});

test("429/503 wait for Retry-After (never less), and one longer than allowed fails at once", async () => {
  const waits: number[] = [];
  const sleep = async (ms: number) => { waits.push(ms); };
  const s = scripted([error(503, "backend_unavailable", { "retry-after": "2" }), error(429, "rate_limited", { "retry-after": "1" }), { status: 200, body: { updated: 1 } }]);
  const http = new Http({ baseUrl: "https://api.test", fetch: s.fetch, sleep, random: () => 0.5 });
  assert.deepEqual(await http.request("POST", "/v1/m", { body: { a: 1 }, idempotencyKey: "k1" }), { updated: 1 });
  assert.deepEqual(waits, [2000, 1000]);
  assert.ok(s.calls.every((c) => c.headers["idempotency-key"] === "k1"), "the same key on every retry");

  const s2 = scripted([error(503, "backend_unavailable", { "retry-after": "120" })]);
  const http2 = new Http({ baseUrl: "https://api.test", fetch: s2.fetch, sleep, retry: { maxWaitMs: 60_000 } });
  const e = await http2.request("GET", "/v1/x").catch((x) => x);
  assert.deepEqual([e.code, e.retryAfterMs, e.requestId], ["backend_unavailable", 120_000, "rid-503"]);
  assert.equal(s2.calls.length, 1);
});

test("other 4xx are not retried; network failures are, then surface as code network", async () => {
  const s = scripted([error(400, "invalid_flag")]);
  const e = await new Http({ baseUrl: "https://a", fetch: s.fetch }).request("POST", "/m").catch((x) => x);
  assert.deepEqual([e.status, e.code, e.retryable], [400, "invalid_flag", false]);
  assert.equal(s.calls.length, 1);

  const waits: number[] = [];
  const s2 = scripted([new TypeError("fetch failed"), new TypeError("fetch failed"), new TypeError("fetch failed")]);
  const http = new Http({ baseUrl: "https://a", fetch: s2.fetch, retry: { attempts: 2, baseMs: 100, maxMs: 1000 }, random: () => 0.999, sleep: async (ms) => { waits.push(ms); } });
  const e2 = await http.request("GET", "/x").catch((x) => x);
  assert.deepEqual([e2.status, e2.code, e2.retryable], [0, "network", true]);
  assert.deepEqual(waits, [99, 199], "full jitter below base·2^attempt");
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  assert.equal(parseRetryAfter("5"), 5000);
  assert.equal(parseRetryAfter(new Date(10_000).toUTCString(), 4_000), 6_000);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});

test("the service helper sends a content-derived Idempotency-Key, the same on its retries, and the key as bearer", async () => {
  const s = scripted([error(409, "idempotency_in_flight", { "retry-after": "0" }), { status: 201, body: { status: "created", notificationId: "n1" } }, { status: 200, body: { status: "deleted" } }]);
  const svc = new InboxService({ baseUrl: "https://api.test", serviceKey: "sk_live", fetch: s.fetch });
  const ev = { owner: "u1", itemKey: "post:1", serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", eventId: "e1", sender: { id: "s1", name: "Ana" }, createdTimeMsec: 1 };
  assert.deepEqual(await svc.send(ev), { status: "created", notificationId: "n1" });
  assert.equal(s.calls[0].headers["idempotency-key"], s.calls[1].headers["idempotency-key"]);
  assert.match(s.calls[0].headers["idempotency-key"], /^sdk-[0-9a-f]{32}$/);
  assert.equal(s.calls[0].headers.authorization, "Bearer sk_live");
  assert.ok(!s.calls[0].url.includes("sk_live"), "the key is never in the URL");
  assert.deepEqual(await svc.retract({ owner: "u1", itemKey: "post:1", senderId: "s1" }, { idempotencyKey: "mine" }), { status: "deleted" });
  assert.equal(s.calls[2].headers["idempotency-key"], "mine");
  // Another content, another key.
  const s3 = scripted([{ status: 201, body: { status: "created" } }]);
  await new InboxService({ baseUrl: "https://api.test", serviceKey: "k", fetch: s3.fetch }).send({ ...ev, eventId: "e2" });
  assert.notEqual(s3.calls[0].headers["idempotency-key"], s.calls[0].headers["idempotency-key"]);
});
