// Live badges end to end: WebSockets held by the per-owner Durable Object (Hibernation API) in
// workerd, pushes after changes made through the API, against the local stack.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser, userToken, ROOT } from "./harness.mjs";
import { startStack } from "./stack.mjs";
import { BadgeSocket } from "./badge.mjs";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import path from "node:path";
import http from "node:http";
import { DatabaseSync } from "node:sqlite";

const SERVICE = { authorization: "Bearer svc", "content-type": "application/json" };
let stack, w;

before(async () => {
  stack = await startStack();
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH } });
  assert.equal((await w.post("/v1/admin/indexes", {}, SERVICE)).status, 200);
});
after(async () => { await w?.stop(); await stack?.stop(); });

let seq = 0;
const create = (owner, itemKey = `i${seq}`) => w.post("/v1/notifications/events", {
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default",
  eventId: `ev-${++seq}`, sender: { id: `s${seq}`, name: `S${seq}` }, createdTimeMsec: Date.now(),
}, SERVICE);

test("every device of an owner gets the badge on connect and after each change; another owner's never does", async () => {
  await create("ana", "a0");
  const phone = await BadgeSocket.open(w.base, "ana").opened;
  const laptop = await BadgeSocket.open(w.base, "ana").opened;
  const bob = await BadgeSocket.open(w.base, "bob").opened;
  assert.equal(phone.ws.protocol, "inbox.v1");
  for (const s of [phone, laptop]) {
    const m = await s.next(() => true, "the connect badge");
    assert.deepEqual([m.type, m.unread, m.unseen], ["badge", 1, 1]);
    assert.equal(typeof m.sync, "string");
    assert.deepEqual(m.reconnect, { baseMs: 1000, maxMs: 30000, jitter: "full" });
  }
  assert.equal((await bob.next(() => true)).unread, 0);

  // Create → both of Ana's devices.
  assert.equal((await create("ana", "a1")).status, 201);
  await Promise.all([phone, laptop].map((s) => s.next((m) => m.unread === 2, "unread 2")));
  // Mark all seen → the badge (unseen) clears, unread stays.
  await fetch(`${w.base}/v1/notifications/bulk`, { method: "POST", headers: asUser("ana"), body: JSON.stringify({ action: "seen" }) });
  await phone.next((m) => m.unread === 2 && m.unseen === 0, "unseen 0");
  // Delete → the count drops.
  await fetch(`${w.base}/v1/notifications/items/a0`, { method: "DELETE", headers: asUser("ana") });
  await laptop.next((m) => m.unread === 1, "unread 1 after the delete");
  // A retraction of Ana's last sender on a1 → 0.
  const [item] = (await (await fetch(`${w.base}/v1/notifications`, { headers: asUser("ana") })).json()).items;
  await w.post("/v1/notifications/retractions", { owner: "ana", itemKey: "a1", senderId: item.origins[0].senderId }, SERVICE);
  await phone.next((m) => m.unread === 0, "unread 0 after the retraction");

  // Bob's socket only ever carried Bob's badge.
  await create("bob", "b0");
  await bob.next((m) => m.unread === 1, "Bob's own change");
  assert.deepEqual(bob.messages.map((m) => m.unread), [0, 1]);
  await Promise.all([phone, laptop, bob].map((s) => s.close()));
});

test("a burst is coalesced into few pushes whose last one is exact", async () => {
  const s = await BadgeSocket.open(w.base, "burst").opened;
  await s.next(() => true, "the connect badge");
  const before = s.messages.length;
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => create("burst", `x${i}`)));
  assert.ok(results.every((r) => r.status === 201));
  await s.next((m) => m.unread === 30, "the burst's final count");
  const pushes = s.messages.length - before;
  console.log(`30 concurrent creates → ${pushes} pushes`);
  assert.ok(pushes < 30, `coalesced (${pushes} pushes for 30 changes)`);
  // The socket is a hint: "refresh" asks for the badge now.
  const n = s.messages.length;
  s.ws.send("refresh");
  const answer = await s.next((m) => s.messages.indexOf(m) >= n, "the refresh answer");
  assert.equal(answer.unread, 30);
  await s.close();
});

test("the 101 handshake carries X-Request-Id beside the chosen subprotocol, like every other answer", async () => {
  const u = new URL(`${w.base}/v1/notifications/stream`);
  const res = await new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname,
      headers: {
        connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
        "sec-websocket-protocol": `inbox.v1, auth.${userToken("rid")}`,
      },
    });
    req.on("upgrade", (r, socket) => { socket.destroy(); resolve(r); });
    req.on("response", (r) => reject(new Error(`no upgrade: ${r.statusCode}`)));
    req.on("error", reject);
    req.end();
  });
  assert.equal(res.statusCode, 101);
  assert.match(res.headers["x-request-id"] ?? "", /^\S+$/);
  assert.equal(res.headers["sec-websocket-protocol"], "inbox.v1");
});

test("stream refusals: no upgrade → 426, bad token → handshake refused, no binding → 503", async () => {
  const plain = await fetch(`${w.base}/v1/notifications/stream`, { headers: asUser("ana") });
  assert.equal(plain.status, 426);
  assert.equal((await plain.json()).error.code, "upgrade_required");
  const bad = BadgeSocket.open(w.base, "ana", { token: userToken("ana") + "x" });
  await assert.rejects(bad.opened, /refused/);
  const bare = await startWorker({ bindings: { ...stack.bindings, ...AUTH }, options: { durableObjects: {} } });
  try {
    const r = await fetch(`${bare.base}/v1/notifications/stream`, { headers: { ...asUser("ana"), upgrade: "websocket" } }).catch((e) => e);
    // Node's fetch may refuse to send an Upgrade header; then check with a socket instead.
    if (r instanceof Error) {
      await assert.rejects(BadgeSocket.open(bare.base, "ana").opened, /refused/);
    } else {
      assert.equal(r.status, 503);
      assert.equal((await r.json()).error.code, "not_configured");
    }
    // Without the hub every other route behaves as before.
    assert.equal((await bare.get("/healthz")).status, 200);
  } finally {
    await bare.stop();
  }
});

test("a socket ends with its token: closed 4001 token_expired at exp (+ leeway); others on the hub live on", async () => {
  // No leeway, so the short token's socket closes within seconds; the other token is long-lived.
  const w0 = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH, AUTH_LEEWAY_SECONDS: "0" } });
  try {
    const exp = Math.floor(Date.now() / 1000) + 3;
    const short = await BadgeSocket.open(w0.base, "eve", { token: userToken("eve", { claims: { exp } }) }).opened;
    const long = await BadgeSocket.open(w0.base, "eve").opened;
    await Promise.all([short, long].map((s) => s.next(() => true, "the connect badge")));
    const closed = await short.closed;
    assert.deepEqual([closed.code, closed.reason], [4001, "token_expired"]);
    // The token really had expired when the socket closed (the rule, not a timer of its own).
    assert.ok(Date.now() / 1000 >= exp, "closed at or after exp");
    // The long-lived socket still gets the next change.
    const n = long.messages.length;
    const r = await w0.post("/v1/notifications/events", {
      owner: "eve", itemKey: "e1", serviceType: "feed", categoryType: "social", notificationType: "like",
      templateType: "default", eventId: "eve-1", sender: { id: "s", name: "S" }, createdTimeMsec: Date.now(),
    }, SERVICE);
    assert.equal(r.status, 201);
    await long.next((m) => long.messages.indexOf(m) >= n && m.unread === 1, "the push after the create");
    assert.equal(short.messages.length, 1, "the expired socket got nothing after its connect badge");
    await long.close();
  } finally {
    await w0.stop();
  }
});

test("a reconnect costs the hub no storage write: the owner rides in the socket's attachment", async () => {
  // The hub's storage on disk: Miniflare keeps each Durable Object in its own SQLite file, whose
  // key-value table is created by the first put. (The hub put its owner on every connect.)
  // Under the repository: workerd refuses a storage path outside its starting directory.
  mkdirSync(path.join(ROOT, "target"), { recursive: true });
  const dir = mkdtempSync(path.join(ROOT, "target", "egn-hub-"));
  const w0 = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH }, options: { durableObjectsPersist: dir } });
  const stored = () => {
    const files = [];
    const walk = (d) => { for (const e of readdirSync(d, { withFileTypes: true })) { const p = path.join(d, e.name); if (e.isDirectory()) walk(p); else if (e.name.endsWith(".sqlite") && e.name !== "metadata.sqlite") files.push(p); } };
    walk(dir);
    assert.equal(files.length, 1, `one hub database: ${files}`);
    const db = new DatabaseSync(files[0], { readOnly: true });
    try {
      const kv = db.prepare("SELECT name FROM sqlite_master WHERE name = '_cf_KV'").get();
      return kv ? db.prepare("SELECT key FROM _cf_KV").all().map((r) => r.key) : [];
    } finally {
      db.close();
    }
  };
  try {
    const first = await BadgeSocket.open(w0.base, "rita").opened;
    await first.next(() => true, "the first connect badge");
    assert.deepEqual(stored(), [], "nothing stored by a connect");
    // Reconnects, the first socket still open and after it closed; each gets its badge (so the
    // hub ran the whole connect).
    for (let i = 0; i < 3; i++) {
      const s = await BadgeSocket.open(w0.base, "rita").opened;
      await s.next(() => true, `reconnect ${i}'s badge`);
      await s.close();
    }
    await first.close();
    const again = await BadgeSocket.open(w0.base, "rita").opened;
    await again.next(() => true, "the badge after every socket had closed");
    assert.deepEqual(stored(), [], "nothing stored by the reconnects");
    // Pushes still find the owner (a trailing push runs from the alarm, which carries no
    // request: the burst test above depends on it too).
    for (const k of ["r1", "r2"]) {
      const r = await w0.post("/v1/notifications/events", {
        owner: "rita", itemKey: k, serviceType: "feed", categoryType: "social", notificationType: "like",
        templateType: "default", eventId: `rita-${k}`, sender: { id: "s", name: "S" }, createdTimeMsec: Date.now(),
      }, SERVICE);
      assert.equal(r.status, 201);
    }
    await again.next((m) => m.unread === 2, "the pushes after the creates");
    await again.close();
  } finally {
    await w0.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
