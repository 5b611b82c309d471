// The client's live-badge and start-up logic with a scripted WebSocket and fetch on a fake clock
// (the transport vectors cover the lane, answer classes, tokens and polling; the real worker is
// exercised by tests/js/sdk_inbox.test.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { InboxClient } from "../src/client.ts";
import { MemoryPersistence } from "../src/persistence.ts";
import { FakeClock, ScriptedSocket, settle } from "./support/fake.ts";

const T0 = 1_796_083_200_000;
const pos = (ms: number) => Buffer.from(JSON.stringify([ms, ""])).toString("base64url");

/** A server that answers at once: an empty first page, an empty feed, zero counts. */
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

test("stale badges are dropped without a pull; a newer one is applied and pulls; resume asks the open socket for a refresh", async () => {
  ScriptedSocket.made = [];
  ScriptedSocket.throws = false;
  const clock = new FakeClock(T0);
  const s = server();
  let tokens = 0;
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => `t${++tokens}`, user: "u", fetch: s.fetch, WebSocket: ScriptedSocket, watchVisibility: false, random: () => 0.5, clock });
  await c.start();
  await settle();
  assert.equal(ScriptedSocket.made.length, 1);
  const ws = ScriptedSocket.made[0];
  assert.equal(ws.url, "wss://api.test/v1/notifications/stream");
  assert.deepEqual(ws.protocols, ["inbox.v1", "auth.t1"], "the token HTTP uses");
  ws.open();
  await settle();
  assert.equal(c.status, "live");
  const before = s.calls.length;
  ws.message({ type: "badge", unread: 9, unseen: 9, sync: pos(500) });
  await settle();
  assert.deepEqual(c.snapshot.counts, { unread: 0, unseen: 0 }, "older than the store: dropped");
  assert.equal(s.calls.length, before, "and no pull");
  ws.message({ type: "badge", unread: 3, unseen: 2, sync: pos(3000) });
  await settle();
  assert.deepEqual(c.snapshot.counts, { unread: 3, unseen: 2 });
  assert.deepEqual(s.calls.slice(before), ["/v1/notifications/changes"], "a newer badge pulls (an empty feed: no counts call)");
  c.resume();
  assert.deepEqual(ws.sent, ["refresh"]);
  await settle();
  await c.stop();
  assert.equal(tokens, 1, "one getToken call for everything");
});

test("reconnects use the server's hints with full jitter and the cached token, and reset after a connect", async () => {
  ScriptedSocket.made = [];
  ScriptedSocket.throws = false;
  const clock = new FakeClock(T0);
  const s = server();
  let tokens = 0;
  const c = new InboxClient({ baseUrl: "http://api.test", getToken: () => `t${++tokens}`, user: "u", fetch: s.fetch, WebSocket: ScriptedSocket, watchVisibility: false, random: () => 0.5, pollMs: 3_600_000, clock });
  await c.start();
  await settle();
  ScriptedSocket.made[0].open();
  ScriptedSocket.made[0].message({ type: "badge", unread: 0, unseen: 0, sync: pos(3000), reconnect: { baseMs: 100, maxMs: 300, jitter: "full" } });
  await settle();
  const delays: number[] = [];
  for (let i = 0; i < 4; i++) {
    const n = ScriptedSocket.made.length;
    ScriptedSocket.made[n - 1].closeWith(1006);
    await settle();
    assert.equal(c.status, "polling");
    const from = clock.t;
    await clock.runNext();
    assert.equal(ScriptedSocket.made.length, n + 1, `reconnect ${i + 1}`);
    delays.push(clock.t - from);
  }
  assert.deepEqual(delays, [50, 100, 150, 150], "0.5 · min(300, 100 · 2^n)");
  assert.deepEqual(ScriptedSocket.made.map((w) => w.protocols[1]), ["auth.t1", "auth.t1", "auth.t1", "auth.t1", "auth.t1"]);
  ScriptedSocket.made.at(-1)!.open();
  await settle();
  assert.equal(c.status, "live");
  ScriptedSocket.made.at(-1)!.closeWith(1006);
  await settle();
  const from = clock.t;
  await clock.runNext();
  assert.equal(clock.t - from, 50, "a connect resets the backoff");
  await c.stop();
});

test("offline cold start: the persisted inbox shows, start resolves, the failure is lastError and an error event, queued marks stay", async () => {
  const p = new MemoryPersistence();
  const item = { notificationId: "n1", itemKey: "a", serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision: 5, originsCount: 1, origins: [], read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: "x" };
  await p.save("u", { version: 1, items: [item], counts: { unread: 1, unseen: 1 }, countsSync: pos(T0), sync: pos(T0), nextCursor: null, pending: [{ id: "q", kind: "mark", itemKey: "a", flag: "read", value: true, idempotencyKey: "k" }] });
  const offline = (async () => { throw new TypeError("fetch failed"); }) as typeof globalThis.fetch;
  const errors: string[] = [];
  const clock = new FakeClock(T0);
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: offline, live: false, pollMs: 3_600_000, watchVisibility: false, retry: { attempts: 0 }, clock });
  c.on("error", (e, where) => errors.push(`${where}: ${e.code}`));
  await c.start();
  assert.deepEqual(c.snapshot.items.map((i) => [i.itemKey, i.read]), [["a", true]], "shown, with the queued mark on top");
  assert.deepEqual(c.snapshot.counts, { unread: 0, unseen: 1 });
  assert.deepEqual(errors, ["sync: network"]);
  assert.equal(c.lastError?.code, "network");
  assert.equal(c.snapshot.pending.length, 1);
  await c.stop();
  // Without a persisted inbox there is nothing to show: the failure is thrown.
  const bare = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "v", fetch: offline, live: false, watchVisibility: false, retry: { attempts: 0 }, clock });
  await assert.rejects(bare.start(), (e: { code?: string }) => e.code === "network");
  assert.equal(bare.status, "polling", "still started: it catches up when the network is back");
  await bare.stop();
});

test("a persisted inbox older than the tombstones' lifetime is reloaded, not pulled; an unreadable position reloads too", async () => {
  const p = new MemoryPersistence();
  const clock = new FakeClock(T0);
  await p.save("u", { version: 1, items: [], counts: { unread: 0, unseen: 0 }, countsSync: null, sync: pos(T0 - 8 * 86_400_000), nextCursor: null, pending: [] });
  const s = server();
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: s.fetch, live: false, pollMs: 3_600_000, watchVisibility: false, clock });
  await c.start();
  assert.deepEqual(s.calls, ["/v1/notifications"]);
  await c.stop();

  await p.save("u", { version: 1, items: [], counts: { unread: 0, unseen: 0 }, countsSync: null, sync: pos(T0), nextCursor: null, pending: [] });
  const calls: string[] = [];
  const refusing = (async (url: string | URL | Request) => {
    const path = new URL(String(url)).pathname;
    calls.push(path);
    if (path.endsWith("/changes")) return new Response(JSON.stringify({ error: { code: "invalid_cursor", message: "bad" } }), { status: 400, headers: { "content-type": "application/json" } });
    return s.fetch(url);
  }) as typeof globalThis.fetch;
  const c2 = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", persistence: p, fetch: refusing, live: false, pollMs: 3_600_000, watchVisibility: false, clock });
  await c2.start();
  assert.deepEqual(calls, ["/v1/notifications/changes", "/v1/notifications"]);
  assert.equal(c2.snapshot.sync, pos(1000));
  await c2.stop();
});

test("loadMore runs in the lane after the queued operations and appends the next page", async () => {
  const clock = new FakeClock(T0);
  const item = (k: string, rev: number) => ({ notificationId: `n${k}`, itemKey: k, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision: rev, originsCount: 1, origins: [], read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: "x" });
  const order: string[] = [];
  const fetch = (async (url: string | URL | Request, init?: RequestInit) => {
    const u = new URL(String(url));
    order.push(`${init?.method ?? "GET"} ${u.pathname}${u.searchParams.has("cursor") ? " (more)" : ""}`);
    const body = u.pathname === "/v1/notifications" && !u.searchParams.has("cursor")
      ? { items: [item("b", 20)], nextCursor: "c1", counts: { unread: 2, unseen: 2 }, sync: pos(1000) }
      : u.pathname === "/v1/notifications" ? { items: [item("a", 10)], nextCursor: null, sync: pos(1000) }
      : { updated: 1 };
    return new Response(JSON.stringify(body), { status: 200 });
  }) as typeof globalThis.fetch;
  const c = new InboxClient({ baseUrl: "https://api.test", getToken: () => "t", user: "u", fetch, live: false, pollMs: 3_600_000, watchVisibility: false, clock });
  await c.start();
  const marked = c.mark("b", "read");
  const more = c.loadMore();
  assert.equal(await more, false, "that was the last page");
  assert.deepEqual(await marked, { outcome: "applied" });
  assert.deepEqual(order, ["GET /v1/notifications", "POST /v1/notifications/mark", "GET /v1/notifications (more)"]);
  assert.deepEqual(c.snapshot.items.map((i) => i.itemKey), ["b", "a"]);
  await c.stop();
});
