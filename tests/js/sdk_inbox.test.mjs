// The TypeScript SDK (clients/ts) end to end: its InboxClient against the compiled worker in
// workerd and the local stack; every answer it receives is validated against the served OpenAPI
// document by the harness. No sleeps: tests wait on store changes and stack counters.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, userToken } from "./harness.mjs";
import { startStack } from "./stack.mjs";
import { InboxClient, MemoryPersistence } from "../../clients/ts/src/index.ts";
import { InboxService } from "../../clients/ts/src/service.ts";

let stack, w, svc;

before(async () => {
  stack = await startStack();
  // Settle 0: one clock for worker and database here (inbox_sync.test.mjs does the same); the
  // SDK is indifferent to repeated entries anyway. A cap of 6 items per owner for the trim.
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH, NOTIFY_SYNC_SETTLE_MS: "0", NOTIFY_MAX_PER_OWNER: "6" } });
  svc = new InboxService({ baseUrl: w.base, serviceKey: "svc" });
  const r = await fetch(`${w.base}/v1/admin/indexes`, { method: "POST", headers: { authorization: "Bearer svc" } });
  assert.equal(r.status, 200);
});
after(async () => { await w?.stop(); await stack?.stop(); });

let seq = 0;
const event = (owner, itemKey, over = {}) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default",
  eventId: `sdk-${++seq}`, sender: { id: `s${seq}`, name: `S${seq}` }, createdTimeMsec: Date.now(), ...over,
});
const send = async (...a) => {
  const r = await svc.send(event(...a));
  assert.ok(["created", "merged"].includes(r.status), JSON.stringify(r));
  return r;
};

/** A client of `user` that never reconnects or polls by itself unless asked to. */
const client = (user, o = {}) => new InboxClient({
  baseUrl: w.base, user, getToken: () => userToken(user), live: false, pollMs: 3_600_000, random: () => 0,
  retry: { attempts: 0 }, watchVisibility: false, ...o,
});

/** Resolves with the snapshot once `pred(snapshot)` holds (checked on every store change). */
function until(c, pred, what, ms = 20_000) {
  return new Promise((resolve, reject) => {
    let off = () => {};
    const timer = setTimeout(() => {
      off();
      const s = c.snapshot;
      reject(new Error(`timed out waiting for ${what}: ${JSON.stringify({ keys: s.items.map((i) => i.itemKey), counts: s.counts, status: c.status })}`));
    }, ms);
    const check = () => {
      if (!pred(c.snapshot)) return;
      off();
      clearTimeout(timer);
      resolve(c.snapshot);
    };
    off = c.store.subscribe(check);
    check();
  });
}

function statusIs(c, status, ms = 20_000) {
  if (c.status === status) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { off(); reject(new Error(`timed out waiting for status ${status} (is ${c.status})`)); }, ms);
    const off = c.on("status", (s) => { if (s === status) { off(); clearTimeout(timer); resolve(); } });
  });
}

const keys = (c) => c.snapshot.items.map((i) => i.itemKey);
const view = (c) => ({ items: c.snapshot.items, counts: c.snapshot.counts });

test("two clients of one user converge after creates, merges, retractions, marks on the other device, deletes and trims", async () => {
  const owner = "conv";
  for (const k of ["p1", "p2", "p3", "p4"]) await send(owner, k);
  const a = client(owner), b = client(owner);
  await a.start();
  await b.start();
  assert.deepEqual(keys(a), ["p4", "p3", "p2", "p1"]);
  assert.deepEqual(view(a), view(b));

  // A merge (second sender on p1) and two retractions: p1 keeps a sender, p2 loses its only one.
  const merged = await send(owner, "p1", { sender: { id: "x2", name: "Xo" } });
  assert.equal(merged.status, "merged");
  const p2sender = a.snapshot.items.find((i) => i.itemKey === "p2").origins[0].senderId;
  assert.deepEqual(await svc.retract({ owner, itemKey: "p2", senderId: p2sender }), { status: "deleted" });
  // Device A: marks and a delete.
  await a.mark("p3", "read");
  await a.mark("p1", "seen");
  await a.remove("p4");
  // Creates past the cap (6), then the nightly trim drops the oldest.
  for (const k of ["p5", "p6", "p7", "p8", "p9"]) await send(owner, k);
  await (await w.mf.getWorker()).scheduled({ cron: "17 3 * * *" });

  await b.pull();
  await a.pull();
  const fresh = client(owner);
  await fresh.start();
  assert.equal(fresh.snapshot.items.length, 6, "trimmed to the cap");
  assert.deepEqual(keys(b), keys(fresh));
  assert.deepEqual(view(b), view(fresh), "B's synced state is a fresh load's");
  assert.deepEqual(view(a), view(fresh), "A's synced state is a fresh load's");
  assert.ok(!keys(b).includes("p2") && !keys(b).includes("p4"), "retracted and deleted items are gone");
  const p1 = b.snapshot.items.find((i) => i.itemKey === "p1");
  assert.ok(!p1 || p1.seen, "A's mark reached B (unless p1 was trimmed)");
  assert.equal(new Set(keys(b)).size, keys(b).length, "no duplicates");
  await Promise.all([a.stop(), b.stop(), fresh.stop()]);
});

test("a create reaches the badge over the WebSocket, and the client pulls the item", async () => {
  const c = client("live1", { live: true });
  await c.start();
  await statusIs(c, "live");
  await until(c, (s) => s.counts.unread === 0, "the connect badge");
  await send("live1", "hello");
  const s = await until(c, (x) => x.counts.unread === 1 && x.items.some((i) => i.itemKey === "hello"), "the badge and the item");
  assert.equal(s.items.length, 1);
  await c.stop();
});

test("a dropped socket reconnects with the cached token (no identity-provider round trip) and catches up on what it missed", async () => {
  const sockets = [];
  const protocols = [];
  // While `blocked`, the socket can't be built (a CSP block): the client polls until resume().
  let blocked = false;
  class Recording extends WebSocket {
    constructor(url, p) {
      if (blocked) throw new Error("blocked by CSP");
      super(url, p);
      sockets.push(this);
      protocols.push(p);
    }
  }
  const asked = [];
  const c = client("drop", {
    live: true,
    WebSocket: Recording,
    random: () => 0.5,
    getToken: ({ refresh }) => { asked.push(refresh); return userToken("drop"); },
  });
  await send("drop", "before");
  await c.start();
  await statusIs(c, "live");
  blocked = true;
  sockets[0].close(4000, "network gone");
  await statusIs(c, "polling");
  await send("drop", "missed");
  assert.deepEqual(keys(c), ["before"]);
  blocked = false;
  c.resume(); // back in the foreground: reconnect now
  await statusIs(c, "live");
  await until(c, (s) => s.items.some((i) => i.itemKey === "missed"), "the catch-up pull");
  assert.deepEqual(keys(c), ["missed", "before"]);
  assert.equal(sockets.length, 2);
  assert.equal(protocols[0][0], "inbox.v1");
  assert.equal(protocols[0][1], protocols[1][1], "the reconnect reused the cached token");
  assert.deepEqual(asked, [false], "one getToken call for HTTP and both connects");
  await c.stop();
});

test("while the stream is refused the client polls the change feed", async () => {
  class Refused {
    constructor() {
      this.readyState = 3;
      this.listeners = {};
      queueMicrotask(() => this.listeners.close?.({ code: 1006 }));
    }
    addEventListener(t, f) { this.listeners[t] = f; }
    send() {}
    close() {}
  }
  // Reconnects are pushed far out (random 0.99 of 1 h); polls come every 20 ms.
  const c = client("poll", { live: true, WebSocket: Refused, pollMs: 20, random: () => 0.99 });
  await c.start();
  await statusIs(c, "polling");
  await send("poll", "via-poll");
  const s = await until(c, (x) => x.items.some((i) => i.itemKey === "via-poll") && x.counts.unread === 1, "the polled item and its count");
  assert.deepEqual(s.items.map((i) => i.itemKey), ["via-poll"]);
  await c.stop();
});

test("a revoked token is refreshed once, on the 401, and the socket then uses the refreshed one; a JWT near its exp is asked for again", async () => {
  // Revoked: its exp is fine, so only the server can tell (401), on HTTP and on the upgrade.
  const revoked = userToken("exp", { sign: () => Buffer.from("not the signature") });
  const script = [revoked];
  const asked = [];
  const protocols = [];
  class Recording extends WebSocket {
    constructor(url, p) { super(url, p); protocols.push(p[1]); }
  }
  const c = client("exp", {
    live: true,
    WebSocket: Recording,
    getToken: ({ refresh }) => { asked.push(refresh); return script.shift() ?? userToken("exp"); },
  });
  await send("exp", "e1");
  await c.start(); // load: revoked → 401 → one fresh token → resent
  assert.deepEqual(keys(c), ["e1"]);
  await statusIs(c, "live");
  assert.deepEqual(asked, [false, true], "no refresh but the one the 401 asked for");
  assert.notEqual(protocols.at(-1), `auth.${revoked}`, "the open socket uses the refreshed token");
  await c.stop();

  // A token 20 s from its exp: used once, then asked for again (refresh: false) before the next
  // request instead of being sent until it expires.
  const short = userToken("exp", { claims: { exp: Math.floor(Date.now() / 1000) + 20 } });
  const script2 = [short];
  const asked2 = [];
  const c2 = client("exp", { getToken: ({ refresh }) => { asked2.push(refresh); return script2.shift() ?? userToken("exp"); } });
  await c2.start();
  assert.deepEqual(keys(c2), ["e1"]);
  await c2.pull();
  assert.deepEqual(asked2, [false, false]);
  await c2.stop();
});

test("a refused mark rolls back exactly (outcome rejected, with the server's code and request id); a 503 keeps it queued and it is sent later", async () => {
  for (const k of ["r1", "r2"]) await send("rb", k);
  const c = client("rb", { retry: { attempts: 1, maxWaitMs: 1000 } });
  await c.start();
  const before = view(c);
  assert.deepEqual(before.counts, { unread: 2, unseen: 2 });
  const rollbacks = [];
  c.on("rollback", (op, e) => rollbacks.push({ op, e }));
  // Refused: a flag the server does not know (400).
  const refused = await c.mark("r1", "bogus");
  assert.equal(refused.outcome, "rejected");
  assert.equal(refused.error.status, 400);
  assert.match(refused.error.requestId ?? "", /\S/, "X-Request-Id carried");
  assert.deepEqual(view(c), before, "rolled back exactly");
  assert.equal(rollbacks.length, 1);
  assert.equal(rollbacks[0].e.code, refused.error.code);

  // A backend failure (503) is transient: kept, shown, not rolled back; sent once it recovers.
  await stack.faults("data", [{ match: "updateone", mode: "fail_before", count: 2 }]);
  const p = c.mark("r1", "read");
  assert.equal(c.snapshot.items.find((i) => i.itemKey === "r1").read, true, "shown at once");
  assert.deepEqual(c.snapshot.counts, { unread: 1, unseen: 2 });
  const queued = await p;
  await stack.clearFaults();
  assert.equal(queued.outcome, "queued");
  assert.equal(queued.error.status, 503);
  assert.equal(rollbacks.length, 1, "no rollback for a transient failure");
  assert.equal(c.snapshot.pending.length, 1);
  await c.flush();
  assert.equal(c.snapshot.pending.length, 0, "sent and confirmed");
  const fresh = client("rb");
  await fresh.start();
  assert.equal(fresh.snapshot.items.find((i) => i.itemKey === "r1").read, true, "applied on the server");
  assert.deepEqual(view(fresh), view(c));
  await Promise.all([c.stop(), fresh.stop()]);
});

test("a delete of an item deleted on another device is applied (404 item_not_found), a mark of it is rejected; both reconcile", async () => {
  for (const k of ["g1", "g2"]) await send("gone", k);
  const c = client("gone");
  await c.start();
  const other = client("gone");
  await other.start();
  assert.equal((await other.remove("g1")).outcome, "applied");
  assert.equal((await other.remove("g2")).outcome, "applied");
  await other.stop();
  const rollbacks = [];
  c.on("rollback", (op) => rollbacks.push(op.kind));
  assert.deepEqual(await c.remove("g1"), { outcome: "applied" }, "the intent holds: the item is gone");
  const marked = await c.mark("g2", "read");
  assert.equal(marked.outcome, "rejected");
  assert.equal(marked.error.code, "item_not_found");
  assert.deepEqual(rollbacks, ["mark"]);
  await until(c, (s) => s.items.length === 0 && s.counts.unread === 0, "the pull after the answers");
  await c.stop();
});

test("a mark made offline is queued and sent on reconnect with its Idempotency-Key", async () => {
  await send("off", "o1");
  let offline = false;
  const sent = [];
  const net = (input, init) => {
    if (offline) return Promise.reject(new TypeError("fetch failed"));
    sent.push({ url: String(input), key: init?.headers?.["idempotency-key"] ?? null });
    return fetch(input, init);
  };
  const persistence = new MemoryPersistence();
  const c = client("off", { fetch: net, persistence });
  await c.start();
  offline = true;
  const r = await c.mark("o1", "read");
  assert.deepEqual([r.outcome, r.error?.code], ["queued", "network"]);
  assert.equal(c.snapshot.pending.length, 1, "queued");
  assert.equal(c.snapshot.items[0].read, true, "shown while offline");
  // The app restarts while still offline: the queued mark is persisted with its key.
  await c.stop();
  const saved = await persistence.load("off");
  assert.equal(saved.pending.length, 1);
  const key = saved.pending[0].idempotencyKey;
  offline = false;
  const c2 = client("off", { fetch: net, persistence });
  await c2.start();
  await until(c2, (s) => s.pending.length === 0, "the queued mark confirmed");
  const markCalls = sent.filter((s) => s.url.endsWith("/v1/notifications/mark"));
  assert.deepEqual(markCalls.map((m) => m.key), [key], "sent once, with the key it was queued with");
  const fresh = client("off");
  await fresh.start();
  assert.equal(fresh.snapshot.items[0].read, true, "applied on the server");
  await Promise.all([c2.stop(), fresh.stop()]);
});

test("a cold start from persisted state shows the inbox at once and pulls only the changes since its sync", async () => {
  const owner = "cold";
  const items = Array.from({ length: 30 }, (_, i) => `c${i}`);
  const batch = await svc.sendBatch(items.map((k) => event(owner, k)));
  assert.equal(batch.status, "processed");
  const persistence = new MemoryPersistence();
  const first = client(owner, { persistence, pageSize: 100 });
  await first.start();
  assert.equal(first.snapshot.items.length, 30);
  await first.stop();

  // Meanwhile: a create, a merge, a retraction and a mark from another device.
  await send(owner, "new");
  await send(owner, "c3", { sender: { id: "m2", name: "Mo" } });
  const other = client(owner, { pageSize: 100 });
  await other.start();
  await svc.retract({ owner, itemKey: "c5", senderId: other.snapshot.items.find((i) => i.itemKey === "c5").origins[0].senderId });
  await other.mark("c7", "read");
  await other.stop();

  await stack.until(() => true, "an idle stack");
  await stack.reset();
  const cold = client(owner, { persistence, pageSize: 100 });
  let firstShown = null;
  cold.store.subscribe(() => { firstShown ??= cold.snapshot.items.length; });
  await cold.start();
  assert.equal(firstShown, 30, "the persisted inbox shows before any answer");
  const s = await stack.stats();
  assert.deepEqual(s.data, { find: 1, aggregate: 1 }, "one changes page and one count, no list");
  const fresh = client(owner, { pageSize: 100 });
  await fresh.start();
  assert.deepEqual(view(cold), view(fresh), "the same inbox as a full reload");
  assert.equal(keys(cold)[0], "c3", "the merge moved c3 to the top");
  assert.ok(!keys(cold).includes("c5"));
  await Promise.all([cold.stop(), fresh.stop()]);
});

test("when the feed repeats entries inside its settle window the store still holds each item once", async () => {
  // A 10-minute window (production: 2 s), so every pull below repeats what it already applied,
  // however slow the machine.
  const w2 = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH, NOTIFY_SYNC_SETTLE_MS: "600000" } });
  try {
    const svc2 = new InboxService({ baseUrl: w2.base, serviceKey: "svc" });
    const owner = "settle";
    const c = new InboxClient({ baseUrl: w2.base, user: owner, getToken: () => userToken(owner), live: false, pollMs: 3_600_000, watchVisibility: false, retry: { attempts: 0 } });
    await c.start();
    for (const k of ["s1", "s2", "s3"]) await svc2.send(event(owner, k));
    const first = await c.pull();
    const second = await c.pull();
    assert.equal(first, 3);
    assert.equal(second, 3, "the second pull repeated every entry");
    assert.deepEqual(keys(c), ["s3", "s2", "s1"]);
    const fresh = new InboxClient({ baseUrl: w2.base, user: owner, getToken: () => userToken(owner), live: false, pollMs: 3_600_000, watchVisibility: false });
    await fresh.start();
    assert.deepEqual(view(c), view(fresh));
    await Promise.all([c.stop(), fresh.stop()]);
  } finally {
    await w2.stop();
  }
});
