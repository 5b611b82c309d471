// The client's live-badge logic with a scripted WebSocket and fetch (no timers waited on: the
// reconnect delays are read from the client's own timer calls). The real worker is exercised by
// tests/js/sdk_inbox.test.mjs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { InboxClient } from "../src/client.ts";

const pos = (ms: number) => Buffer.from(JSON.stringify([ms, ""])).toString("base64url");

class FakeSocket {
  static all: FakeSocket[] = [];
  readyState = 0;
  sent: string[] = [];
  listeners: Record<string, Array<(e: any) => void>> = {};
  url: string;
  protocols: string[];
  constructor(url: string, protocols: string[]) { this.url = url; this.protocols = protocols; FakeSocket.all.push(this); }
  addEventListener(t: string, f: (e: any) => void) { (this.listeners[t] ??= []).push(f); }
  emit(t: string, e: any = {}) { for (const f of this.listeners[t] ?? []) f(e); }
  open() { this.readyState = 1; this.emit("open"); }
  message(m: unknown) { this.emit("message", { data: JSON.stringify(m) }); }
  send(d: string) { this.sent.push(d); }
  close() { this.readyState = 3; }
}

function server() {
  const calls: string[] = [];
  const fetch = async (url: string | URL | Request) => {
    const u = new URL(String(url));
    calls.push(u.pathname);
    const body = u.pathname === "/v1/notifications"
      ? { items: [], nextCursor: null, counts: { unread: 0, unseen: 0 }, sync: pos(1000) }
      : u.pathname === "/v1/notifications/changes" ? { items: [], sync: pos(2000), hasMore: false }
      : { unread: 0, unseen: 0 };
    return new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
  };
  return { calls, fetch: fetch as typeof globalThis.fetch };
}

const flush = () => new Promise<void>((r) => setImmediate(r));
/** Turns the event loop until `cond` holds (bounded: a hang fails instead). */
async function until(cond: () => boolean, what: string) {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise<void>((r) => setImmediate(r));
  assert.ok(cond(), what);
}

test("stale badges are dropped without a pull; a newer one is applied and pulls; resume asks for a refresh", async () => {
  FakeSocket.all = [];
  const s = server();
  let tokens = 0;
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => `t${++tokens}`, user: "u", fetch: s.fetch, WebSocket: FakeSocket, watchVisibility: false, random: () => 0.5 });
  await c.start();
  await until(() => FakeSocket.all.length === 1, "the first connect");
  const ws = FakeSocket.all[0];
  assert.equal(ws.url, "wss://api.test/v1/notifications/stream");
  assert.deepEqual(ws.protocols, ["inbox.v1", "auth.t2"]);
  ws.open();
  await flush();
  assert.equal(c.status, "live");
  const before = s.calls.length;
  ws.message({ type: "badge", unread: 9, unseen: 9, sync: pos(500) });
  await flush();
  assert.deepEqual(c.snapshot.counts, { unread: 0, unseen: 0 }, "older than the store: dropped");
  assert.equal(s.calls.length, before, "and no pull");
  ws.message({ type: "badge", unread: 3, unseen: 2, sync: pos(3000), reconnect: { baseMs: 200, maxMs: 400, jitter: "full" } });
  await until(() => s.calls.length > before, "the pull after a newer badge");
  assert.deepEqual(c.snapshot.counts, { unread: 3, unseen: 2 });
  assert.deepEqual(s.calls.slice(before), ["/v1/notifications/changes"], "a newer badge pulls");
  c.resume();
  assert.deepEqual(ws.sent, ["refresh"]);
  await c.stop();
});

test("reconnects use the server's hints with full jitter, a fresh token each time, and reset after a connect", async () => {
  FakeSocket.all = [];
  const delays: number[] = [];
  const realSetTimeout = globalThis.setTimeout;
  // Record the reconnect delays and run each reconnect at once (the hour-long poll stays put).
  globalThis.setTimeout = ((f: () => void, ms: number) => { delays.push(ms); return realSetTimeout(f, ms === 3_600_000 ? ms : 0); }) as typeof setTimeout;
  try {
    const s = server();
    let tokens = 0;
    const c = new InboxClient({ baseUrl: "http://api.test", getToken: () => `t${++tokens}`, user: "u", fetch: s.fetch, WebSocket: FakeSocket, watchVisibility: false, random: () => 0.5, pollMs: 3_600_000 });
    await c.start();
    await until(() => FakeSocket.all.length === 1, "the first connect");
    FakeSocket.all[0].open();
    FakeSocket.all[0].message({ type: "badge", unread: 0, unseen: 0, sync: pos(3000), reconnect: { baseMs: 100, maxMs: 300, jitter: "full" } });
    for (let i = 0; i < 4; i++) {
      const n = FakeSocket.all.length;
      FakeSocket.all[n - 1].emit("close", { code: 1006 });
      await until(() => FakeSocket.all.length === n + 1, `reconnect ${i + 1}`);
    }
    const reconnects = delays.filter((d) => d !== 3_600_000);
    assert.deepEqual(reconnects, [50, 100, 150, 150], "0.5 · min(300, 100 · 2^n)");
    assert.deepEqual(FakeSocket.all.map((w) => w.protocols[1]), ["auth.t2", "auth.t3", "auth.t4", "auth.t5", "auth.t6"]);
    assert.equal(c.status, "polling");
    FakeSocket.all.at(-1)!.open();
    FakeSocket.all.at(-1)!.emit("close", { code: 1006 });
    await until(() => FakeSocket.all.length === 6, "the reconnect after a connect");
    assert.equal(delays.filter((d) => d !== 3_600_000).at(-1), 50, "a connect resets the backoff");
    await c.stop();
  } finally {
    globalThis.setTimeout = realSetTimeout;
  }
});

test("offline cold start: the persisted inbox shows, start resolves, the failure is an error event, queued marks stay", async () => {
  const { MemoryPersistence } = await import("../src/persistence.ts");
  const p = new MemoryPersistence();
  const item = { notificationId: "n1", itemKey: "a", serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision: 5, originsCount: 1, origins: [], read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: "x" };
  await p.save("u", { version: 1, items: [item], counts: { unread: 1, unseen: 1 }, countsSync: pos(1), sync: pos(1), nextCursor: null, pending: [{ id: "q", kind: "mark", itemKey: "a", flag: "read", value: true, idempotencyKey: "k" }] });
  const offline = (async () => { throw new TypeError("fetch failed"); }) as typeof globalThis.fetch;
  const errors: string[] = [];
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: offline, live: false, pollMs: 3_600_000, watchVisibility: false, retry: { attempts: 0 } });
  c.on("error", (e, where) => errors.push(`${where}: ${e.code}`));
  await c.start();
  assert.deepEqual(c.snapshot.items.map((i) => [i.itemKey, i.read]), [["a", true]], "shown, with the queued mark on top");
  assert.deepEqual(c.snapshot.counts, { unread: 0, unseen: 1 });
  assert.deepEqual(errors, ["catch-up on start: network"]);
  assert.equal(c.snapshot.pending.length, 1);
  await c.stop();
  // Without a persisted inbox there is nothing to show: the failure is thrown.
  const bare = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "v", fetch: offline, live: false, watchVisibility: false, retry: { attempts: 0 } });
  await assert.rejects(bare.start(), (e: { code?: string }) => e.code === "network");
});

test("a persisted inbox older than the tombstones' lifetime is reloaded, not pulled; an unreadable position reloads too", async () => {
  const { MemoryPersistence } = await import("../src/persistence.ts");
  const p = new MemoryPersistence();
  const old = Date.now() - 8 * 86_400_000;
  await p.save("u", { version: 1, items: [], counts: { unread: 0, unseen: 0 }, countsSync: null, sync: pos(old), nextCursor: null, pending: [] });
  const s = server();
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: s.fetch, live: false, pollMs: 3_600_000, watchVisibility: false });
  await c.start();
  assert.deepEqual(s.calls, ["/v1/notifications"]);
  await c.stop();

  await p.save("u", { version: 1, items: [], counts: { unread: 0, unseen: 0 }, countsSync: null, sync: pos(Date.now()), nextCursor: null, pending: [] });
  const calls: string[] = [];
  const refusing = (async (url: string | URL | Request) => {
    const path = new URL(String(url)).pathname;
    calls.push(path);
    if (path.endsWith("/changes")) return new Response(JSON.stringify({ error: { code: "invalid_cursor", message: "bad" } }), { status: 400, headers: { "content-type": "application/json" } });
    return s.fetch(url);
  }) as typeof globalThis.fetch;
  const c2 = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: refusing, live: false, pollMs: 3_600_000, watchVisibility: false });
  await c2.start();
  assert.deepEqual(calls, ["/v1/notifications/changes", "/v1/notifications"]);
  assert.equal(c2.snapshot.sync, pos(1000));
  await c2.stop();
});
