// End-to-end: the notification center in workerd against the local stack (real redis-server
// behind the REST bridge, the Data API emulator). Round trips are read from the stack's counters.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startStack, notificationId } from "./stack.mjs";

const SERVICE = { authorization: "Bearer test-service-token", "content-type": "application/json" };
let stack, w;

before(async () => {
  stack = await startStack();
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "test-service-token", ...AUTH } });
  const r = await w.post("/v1/admin/indexes", {}, SERVICE);
  assert.equal(r.status, 200, JSON.stringify(r.body));
});
after(async () => { await w?.stop(); await stack?.stop(); });

let seq = 0;
const event = (over = {}) => ({
  owner: "ana",
  itemKey: "post:1",
  serviceType: "feed",
  categoryType: "social",
  notificationType: "like",
  templateType: "default",
  eventId: `ev-${++seq}`,
  sender: { id: "bo", name: "Bo" },
  landing: "app://post/1",
  createdTimeMsec: Date.now(),
  ...over,
});
const create = (ev) => w.post("/v1/notifications/events", ev, SERVICE);
const retract = (owner, itemKey, senderId) => w.post("/v1/notifications/retractions", { owner, itemKey, senderId }, SERVICE);
async function list(user, q = "") {
  const r = await fetch(`${w.base}/v1/notifications${q}`, { headers: asUser(user) });
  return { status: r.status, body: await r.json() };
}
// Runs `fn` on fresh counters, then waits (on the stack's counters, not a clock) until
// `redisCalls` Redis calls have landed and nothing is in flight: the dedup commit and the
// Idempotency-Key record are written in waitUntil, after the response.
async function delta(fn, redisCalls = 0) {
  await stack.reset();
  const result = await fn();
  const s = await stack.until((s) => s.redisTotal >= redisCalls, `${redisCalls} Redis calls`);
  return { result, ...s };
}
// Creates an event that gets written and waits for its dedup commit, which runs after the
// response (waitUntil): otherwise it can land inside a later step's count. Two script calls:
// the reservation, then the commit.
async function createCommitted(ev) {
  const before = await stack.stats();
  const r = await create(ev);
  assert.ok(["created", "merged", "already_applied"].includes(r.body.status), JSON.stringify(r.body));
  await stack.scriptsDone(before, 2, "the create's dedup commit");
  return r;
}

test("create, merge, duplicate, already-applied — with round trips counted", async () => {
  const first = event({ sender: { id: "bo", name: "Bo" } });
  // The script cache is cold on a fresh stack (EVALSHA → NOSCRIPT → EVAL): warm it first so
  // the counted rows below are the steady state the README describes. The warm-up's commit
  // runs after its response (waitUntil): wait for both scripts' EVALs, or that commit can land
  // inside the first counted row.
  await delta(() => create(event({ owner: "warm", sender: { id: "w", name: "W" } })));
  await stack.until((s) => (s.redis.eval ?? 0) >= 2, "the warm-up's reserve and commit scripts loaded");
  let d = await delta(() => create(first), 2);
  assert.equal(d.result.status, 201);
  assert.equal(d.result.body.status, "created");
  // Bo is new to the item: his entry in the senders' index (docs/privacy.md), then the item.
  assert.deepEqual(d.data, { updateOne: 2 }, "the index entry and one atomic upsert");
  assert.deepEqual(d.redis, { evalsha: 2 }, "reserve on the request path + commit after it");

  d = await delta(() => create(first), 1);
  assert.equal(d.result.body.status, "duplicate");
  assert.deepEqual(d.redis, { evalsha: 1 }, "a duplicate costs one Redis call");
  assert.equal(d.dataTotal, 0, "a duplicate never reaches the Data API");

  d = await delta(() => create(event({ sender: { id: "cy", name: "Cy" } })), 2);
  assert.equal(d.result.body.status, "merged");
  assert.deepEqual(d.data, { updateOne: 2 }, "cy's index entry and the upsert");
  assert.deepEqual(d.redis, { evalsha: 2 });

  // The same sender under a new event id (producer retry with a fresh id): nothing changes.
  d = await delta(() => create(event({ sender: { id: "cy", name: "Cy" } })), 2);
  assert.equal(d.result.body.status, "already_applied");

  const page = await delta(() => list("ana", "?limit=10"));
  assert.deepEqual(page.data, { aggregate: 1 }, "one Data API call per page, counts included");
  assert.equal(page.redisTotal, 0);
  // Batch = limit: the page (plus one look-ahead item for `nextCursor`) comes in that one call.
  const facet = page.dataLast.aggregate.pipeline[1].$facet;
  assert.equal(facet.items.find((st) => st.$limit).$limit, 11);
  assert.deepEqual(page.result.body.counts, { unread: 1, unseen: 1 });
  const bare = await delta(() => list("ana", "?limit=10&counts=false"));
  assert.deepEqual(bare.data, { find: 1 }, "without counts: a plain find");
  assert.equal(bare.dataLast.find.limit, 11);
  assert.deepEqual(bare.result.body.items, page.result.body.items);
  const [item] = page.result.body.items;
  assert.equal(page.result.body.items.length, 1);
  assert.equal(item.originsCount, 2);
  assert.match(item.summary, /^(Bo|Cy) and (Bo|Cy) liked your post$/);
  assert.equal(item.read, false);
});

test("retract re-renders, deletes the item with its last sender", async () => {
  // Load the roster script (a script's first EVALSHA falls back to EVAL once).
  await retract("rae-warm", "post:0", "nobody");
  await createCommitted(event({ owner: "rae", itemKey: "post:9", sender: { id: "s1", name: "Sam" } }));
  await createCommitted(event({ owner: "rae", itemKey: "post:9", sender: { id: "s2", name: "Kim" } }));
  await createCommitted(event({ owner: "rae", itemKey: "post:9", sender: { id: "s3", name: "Lee" } }));
  let d = await delta(() => retract("rae", "post:9", "s2"));
  assert.equal(d.result.body.status, "updated");
  assert.deepEqual(d.data, { updateOne: 1 }, "retract from a merged item: one call");
  assert.deepEqual(d.redis, { evalsha: 1 }, "the sender leaves the item's roster first: one call");
  let items = (await list("rae")).body.items;
  assert.equal(items[0].originsCount, 2);
  assert.ok(!items[0].origins.some((o) => o.senderId === "s2"));
  assert.match(items[0].summary, /^(Sam|Lee) and (Lee|Sam) liked your post$/);
  await retract("rae", "post:9", "s1");
  d = await delta(() => retract("rae", "post:9", "s3"));
  assert.equal(d.result.body.status, "deleted");
  assert.deepEqual(d.data, { updateOne: 2 }, "last sender: the pull misses, the tombstone hits");
  assert.deepEqual(d.redis, { evalsha: 1 });
  assert.equal((await list("rae")).body.items.length, 0);
  d = await delta(() => retract("rae", "post:9", "s3"));
  assert.equal(d.result.body.status, "not_found");
  assert.deepEqual(d.data, { updateOne: 3 }, "not there: both guards miss, the retraction is recorded");
});

test("an idle item's roster expires, and its next event rebuilds it from the document", async () => {
  const item = (owner) => ({ owner, itemKey: "post:idle" });
  const key = (owner) => `rs:${notificationId(owner, "post:idle")}`;
  // Warm the rebuild script (its first EVALSHA falls back to EVAL once).
  await createCommitted(event({ ...item("ivy-warm"), sender: { id: "w1", name: "W" } }));
  await stack.redis(["DEL", key("ivy-warm")]);
  await delta(() => create(event({ ...item("ivy-warm"), sender: { id: "w2", name: "W" } })), 3);
  for (const s of ["i1", "i2", "i3"]) await createCommitted(event({ ...item("ivy"), sender: { id: s, name: s.toUpperCase() } }));
  const ttl = await stack.redis(["PTTL", key("ivy")]);
  assert.ok(ttl > 0 && ttl <= 24 * 3_600_000, `a small item's roster is kept an idle day, not the item's life (${ttl} ms)`);
  assert.equal(await stack.redis(["HEXISTS", key("ivy"), "f"]), 0, "the insert's commit marked it complete");
  assert.equal(await stack.redis(["DEL", key("ivy")]), 1, "what the idle expiry does");
  const d = await delta(() => create(event({ ...item("ivy"), sender: { id: "i4", name: "I4" } })), 3);
  assert.equal(d.result.body.status, "merged");
  assert.deepEqual(d.data, { updateOne: 3, findOne: 1 }, "i4's index entry, the upsert, the document read, the rebuilt tally");
  assert.deepEqual(d.redis, { evalsha: 3 }, "reserve, rebuild, commit");
  const [it] = (await list("ivy")).body.items;
  assert.deepEqual([it.originsCount, it.originsCountExact], [4, true], "the three senders before the expiry and the new one");
  assert.equal(await stack.redis(["HEXISTS", key("ivy"), "f"]), 0);
});

test("cursor paging is one call per page and stable under concurrent inserts", async () => {
  const base = Date.now();
  for (let i = 0; i < 25; i++) {
    const r = await create(event({ owner: "pat", itemKey: `item:${i}`, sender: { id: `u${i}`, name: `U${i}` }, createdTimeMsec: base + i }));
    assert.equal(r.status, 201);
  }
  const seen = new Set();
  let cursor = null;
  let pages = 0;
  do {
    const q = `?limit=10${cursor ? `&cursor=${cursor}` : ""}`;
    const d = await delta(() => list("pat", q));
    assert.deepEqual(d.data, { aggregate: 1 });
    for (const it of d.result.body.items) {
      assert.ok(!seen.has(it.itemKey), `no duplicates across pages (${it.itemKey})`);
      assert.ok(pages === 0 || !it.itemKey.startsWith("new:"), `${it.itemKey} created mid-paging showed up on page ${pages + 1}`);
      seen.add(it.itemKey);
    }
    if (pages === 0) {
      // New items arrive while the client pages: they go on top, not into later pages.
      for (let i = 0; i < 5; i++) await create(event({ owner: "pat", itemKey: `new:${i}`, sender: { id: `n${i}`, name: "N" } }));
    }
    cursor = d.result.body.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  for (let i = 0; i < 25; i++) assert.ok(seen.has(`item:${i}`), `item:${i} listed`);
  assert.equal(seen.size, 25);
  assert.equal(pages, 3);
  // The items created mid-paging are on top of a fresh first page.
  const top = (await list("pat", "?limit=5")).body.items.map((i) => i.itemKey).sort();
  assert.deepEqual(top, ["new:0", "new:1", "new:2", "new:3", "new:4"]);
});

test("unread count, mark read/all, archive, delete", async () => {
  for (let i = 0; i < 3; i++) await createCommitted(event({ owner: "uma", itemKey: `k${i}`, sender: { id: `x${i}`, name: "X" } }));
  const count = async () => (await (await fetch(`${w.base}/v1/notifications/unread-count`, { headers: asUser("uma") })).json()).unread;
  const d = await delta(count);
  assert.equal(d.result, 3);
  assert.deepEqual(d.data, { aggregate: 1 }, "unread count: one Data API call");
  assert.equal(d.redisTotal, 0);
  const mark = (body) => fetch(`${w.base}/v1/notifications/mark`, { method: "POST", headers: asUser("uma"), body: JSON.stringify(body) });
  assert.equal((await mark({ itemKey: "k0", flag: "read" })).status, 200);
  assert.equal(await count(), 2);
  assert.equal((await (await mark({ all: true, flag: "read" })).json()).updated, 2);
  assert.equal(await count(), 0);
  await mark({ itemKey: "k1", flag: "archived" });
  const inbox = (await list("uma")).body.items.map((i) => i.itemKey).sort();
  assert.deepEqual(inbox, ["k0", "k2"]);
  assert.deepEqual((await list("uma", "?archived=true")).body.items.map((i) => i.itemKey), ["k1"]);
  const del = await fetch(`${w.base}/v1/notifications/items/k2`, { method: "DELETE", headers: asUser("uma") });
  assert.equal(del.status, 200);
  const again = await fetch(`${w.base}/v1/notifications/items/k2`, { method: "DELETE", headers: asUser("uma") });
  assert.equal(again.status, 404);
});

test("bad input: clear 4xx JSON and nothing written", async () => {
  const cases = [
    [event({ owner: "" }), 422, "missing_field"],
    [event({ categoryType: "nope" }), 422, "unknown_category"],
    [event({ sender: { id: "", name: "x" } }), 422, "missing_field"],
    [event({ itemKey: "x".repeat(10_000) }), 422, "field_too_long"],
    ["{not json", 400, "invalid_json"],
  ];
  await stack.reset();
  for (const [body, status, code] of cases) {
    const r = await create(body);
    assert.equal(r.status, status, code);
    assert.equal(r.body.error.code, code);
  }
  let r = await w.post("/v1/notifications/events", event(), { "content-type": "application/json" });
  assert.equal(r.status, 401);
  r = await w.post("/v1/notifications/events", event(), { authorization: "Bearer wrong" });
  assert.equal(r.status, 401);
  assert.equal((await list("")).status, 401);
  assert.equal((await list("ana", "?limit=500")).body.error.code, "invalid_parameter");
  assert.equal((await list("ana", "?cursor=%%%")).body.error.code, "invalid_cursor");
  const s = await stack.stats();
  assert.equal(s.dataTotal, 0, "nothing reached the Data API");
  assert.equal(s.redisTotal, 0, "nothing reached Redis");
});

test("backend down: 503 with Retry-After, nothing half-written, the retry succeeds", async () => {
  const ev = event({ owner: "dee", itemKey: "p", sender: { id: "z", name: "Zed" } });
  await stack.faults("data", [{ match: "updateOne", mode: "fail_before", count: 1 }]);
  let r = await create(ev);
  assert.equal(r.status, 503);
  assert.equal(r.body.error.code, "backend_unavailable");
  assert.ok(r.headers.get("retry-after"));
  assert.equal((await list("dee")).body.items.length, 0);
  // The reservation was released, so the same event id is not mistaken for a duplicate.
  r = await create(ev);
  assert.equal(r.body.status, "created");
  // Redis down: the reservation also keeps the item's sender count, so the create answers 503
  // (retryable) and writes nothing; the retry once Redis is back is written.
  const q = event({ owner: "dee", itemKey: "q", sender: { id: "z", name: "Zed" } });
  await stack.faults("redis", [{ match: "*", mode: "fail_before", probability: 1 }]);
  try {
    r = await create(q);
    assert.deepEqual([r.status, r.body.error?.code], [503, "backend_unavailable"]);
    assert.ok(r.headers.get("retry-after"));
  } finally {
    await stack.clearFaults();
  }
  assert.deepEqual((await list("dee")).body.items.map((i) => i.itemKey), ["p"]);
  r = await create(q);
  assert.equal(r.body.status, "created");
});

test("cron housekeeping trims an owner to the cap, newest kept", async () => {
  const w2 = await startWorker({
    bindings: { ...stack.bindings, SERVICE_TOKEN: "test-service-token", ...AUTH, NOTIFY_MAX_PER_OWNER: "5" },
  });
  try {
    const base = Date.now();
    for (let i = 0; i < 8; i++) {
      await w2.post("/v1/notifications/events", event({ owner: "hk", itemKey: `h${i}`, sender: { id: `q${i}`, name: "Q" }, createdTimeMsec: base + i }), SERVICE);
    }
    await (await w2.mf.getWorker()).scheduled({ cron: "17 3 * * *" });
    const keys = (await list("hk")).body.items.map((i) => i.itemKey);
    assert.deepEqual(keys, ["h7", "h6", "h5", "h4", "h3"]);
  } finally {
    await w2.stop();
  }
});

const withKey = (key) => ({ ...SERVICE, "idempotency-key": key });

test("Idempotency-Key: replay flagged, other body 422, bad key 400, one Redis call before and one after", async () => {
  const ev = event({ owner: "ida", itemKey: "i1", sender: { id: "p", name: "Pia" } });
  // Warm the claim script's cache so the counted call is the steady state, and wait for the
  // warm-up's after-response writes (dedup commit, stored result) so none lands in the count.
  // Script calls: claim, reservation, commit.
  const s0 = await stack.stats();
  await w.post("/v1/notifications/events", event({ owner: "ida-warm" }), withKey("warm-1"));
  await stack.scriptsDone(s0, 3, "the warm-up's claim, reservation and commit");
  await stack.until((s) => (s.redis.set ?? 0) > (s0.redis.set ?? 0), "the warm-up's stored result");
  const d = await delta(() => w.post("/v1/notifications/events", ev, withKey("req-123")), 4);
  const first = d.result;
  assert.equal(first.status, 201);
  assert.equal(first.headers.get("idempotent-replayed"), null);
  // evalsha ×3 = claim + dedup reserve + dedup commit; set = the stored result (after the response).
  assert.deepEqual(d.redis, { evalsha: 3, set: 1 }, "claim before, record after");
  assert.deepEqual(d.data, { updateOne: 2 }, "the sender's index entry and the upsert");
  const again = await w.post("/v1/notifications/events", ev, withKey("req-123"));
  assert.equal(again.status, 201);
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(again.body, first.body);
  const other = await w.post("/v1/notifications/events", { ...ev, eventId: "different" }, withKey("req-123"));
  assert.equal(other.status, 422);
  assert.equal(other.body.error.code, "idempotency_key_reused");
  const bad = await w.post("/v1/notifications/events", ev, withKey("has space"));
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, "invalid_idempotency_key");
  assert.equal((await list("ida")).body.items[0].originsCount, 1);
});

test("Idempotency-Key: 409 while the first request runs", async () => {
  const ev = event({ owner: "idb", itemKey: "i1", sender: { id: "p", name: "Pia" } });
  // Hold the first request's upsert in the stack until the second one has been answered.
  await stack.faults("data", [{ match: "updateOne", mode: "delay", delay_ms: 3000, count: 1 }]);
  await stack.reset();
  const firstP = w.post("/v1/notifications/events", ev, withKey("slow-1"));
  await stack.poll((s) => s.dataInFlight === 1 && s.data.updateOne === undefined, "the first upsert to be held");
  const second = await w.post("/v1/notifications/events", ev, withKey("slow-1"));
  assert.equal(second.status, 409);
  assert.equal(second.body.error.code, "idempotency_in_flight");
  assert.equal(second.headers.get("content-type"), "application/json");
  const first = await firstP;
  assert.equal(first.status, 201);
  await stack.until((s) => (s.redis.set ?? 0) >= 1, "the result record");
  await stack.clearFaults();
  const third = await w.post("/v1/notifications/events", ev, withKey("slow-1"));
  assert.equal(third.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(third.body, first.body);
});

test("Idempotency-Key: a 5xx is not kept, so the retry runs", async () => {
  const ev = event({ owner: "idc", itemKey: "i1", sender: { id: "p", name: "Pia" } });
  await stack.faults("data", [{ match: "updateOne", mode: "fail_before", count: 1 }]);
  const d = await delta(() => w.post("/v1/notifications/events", ev, withKey("flaky-1")), 4);
  assert.equal(d.result.status, 503);
  // claim + reserve, then the dedup release and the key's DEL (waitUntil)
  assert.deepEqual(d.redis, { evalsha: 3, del: 1 });
  await stack.clearFaults();
  const retry = await w.post("/v1/notifications/events", ev, withKey("flaky-1"));
  assert.equal(retry.status, 201);
  assert.equal(retry.body.status, "created");
  assert.equal(retry.headers.get("idempotent-replayed"), null, "the retry ran, it was not replayed");
  assert.equal((await list("idc")).body.items[0].originsCount, 1);
});

test("Idempotency-Key on retractions: replay flagged, other body 422", async () => {
  await createCommitted(event({ owner: "idr", itemKey: "i1", sender: { id: "a", name: "A" } }));
  await createCommitted(event({ owner: "idr", itemKey: "i1", sender: { id: "b", name: "B" } }));
  const body = { owner: "idr", itemKey: "i1", senderId: "a" };
  const d = await delta(() => w.post("/v1/notifications/retractions", body, withKey("r-1")), 3);
  assert.deepEqual([d.result.status, d.result.body.status], [200, "updated"]);
  // evalsha ×2 = the claim and the roster (the sender leaves it); set = the stored result.
  assert.deepEqual(d.redis, { evalsha: 2, set: 1 }, "claim before, record after");
  const again = await w.post("/v1/notifications/retractions", body, withKey("r-1"));
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.deepEqual(again.body, { status: "updated" }, "replayed, not re-run (a re-run would say not_found)");
  const other = await w.post("/v1/notifications/retractions", { ...body, senderId: "b" }, withKey("r-1"));
  assert.equal(other.status, 422);
  assert.equal(other.body.error.code, "idempotency_key_reused");
  assert.equal((await list("idr")).body.items[0].originsCount, 1, "b was not retracted");
});

// The user's writes (mark, bulk, delete) with an Idempotency-Key: the same rules, per user.
const userWrite = async (user, method, path, body, key) => {
  const headers = { ...asUser(user), "content-type": "application/json", ...(key ? { "idempotency-key": key } : {}) };
  const r = await fetch(w.base + path, { method, headers, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json(), replayed: r.headers.get("idempotent-replayed") === "true" };
};
// A first write under a key: answered, then its record stored after the response (waitUntil).
async function firstWrite(...args) {
  await stack.reset();
  const r = await userWrite(...args);
  assert.equal(r.replayed, false);
  await stack.until((s) => (s.redis.set ?? 0) >= 1, "the stored answer");
  return r;
}
// A resend: replayed, with no Data API call (nothing applied twice).
async function resend(...args) {
  const d = await delta(() => userWrite(...args), 1);
  assert.equal(d.result.replayed, true, JSON.stringify(d.result));
  assert.equal(d.dataTotal, 0, "a replay never reaches the Data API");
  return d.result;
}

test("user writes with an Idempotency-Key: a resend answers the first answer and applies once", async () => {
  for (const k of ["a", "b", "c"]) await createCommitted(event({ owner: "iw", itemKey: k, sender: { id: k, name: "S" } }));
  const mark = ["POST", "/v1/notifications/mark", { itemKey: "a", flag: "read" }];
  const first = await firstWrite("iw", ...mark, "m-1");
  assert.deepEqual([first.status, first.body], [200, { updated: 1 }]);
  assert.deepEqual(await resend("iw", ...mark, "m-1"), { ...first, replayed: true });

  const bulk = ["POST", "/v1/notifications/bulk", { action: "read" }];
  assert.deepEqual((await firstWrite("iw", ...bulk, "b-1")).body, { updated: 2 });
  await createCommitted(event({ owner: "iw", itemKey: "d", sender: { id: "d", name: "S" } }));
  assert.deepEqual((await resend("iw", ...bulk, "b-1")).body, { updated: 2 }, "the first count");
  const unread = (await list("iw")).body.items.filter((i) => !i.read).map((i) => i.itemKey);
  assert.deepEqual(unread, ["d"], "the resent bulk did not run again");

  const del = ["DELETE", "/v1/notifications/items/c"];
  assert.deepEqual((await firstWrite("iw", ...del, undefined, "d-1")).body, { deleted: true });
  const again = await resend("iw", ...del, undefined, "d-1");
  assert.deepEqual([again.status, again.body], [200, { deleted: true }], "the first 200, not a 404");

  const other = await userWrite("iw", "POST", "/v1/notifications/mark", { itemKey: "b", flag: "read" }, "m-1");
  assert.deepEqual([other.status, other.body.error.code], [422, "idempotency_key_reused"]);
  const bad = await userWrite("iw", ...mark, "has space");
  assert.deepEqual([bad.status, bad.body.error.code], [400, "invalid_idempotency_key"]);
});

test("user writes: two users' equal keys are independent", async () => {
  for (const u of ["iu1", "iu2"]) await createCommitted(event({ owner: u, itemKey: "x", sender: { id: "s", name: "S" } }));
  const del = ["DELETE", "/v1/notifications/items/x", undefined, "same-key"];
  assert.equal((await firstWrite("iu1", ...del)).status, 200);
  const second = await firstWrite("iu2", ...del);
  assert.deepEqual([second.status, second.replayed], [200, false], "iu2's delete ran");
  assert.deepEqual((await list("iu2")).body.items, [], "and applied");
  assert.equal((await resend("iu1", ...del)).status, 200);
});

test("user writes: 409 while the first request with the key runs", async () => {
  await createCommitted(event({ owner: "iwb", itemKey: "x", sender: { id: "s", name: "S" } }));
  const del = ["DELETE", "/v1/notifications/items/x", undefined, "slow-d"];
  // Hold the first delete's updateOne in the stack until the second one has been answered.
  await stack.faults("data", [{ match: "updateOne", mode: "delay", delay_ms: 3000, count: 1 }]);
  await stack.reset();
  const firstP = userWrite("iwb", ...del);
  await stack.poll((s) => s.dataInFlight === 1 && s.data.updateOne === undefined, "the first delete to be held");
  const second = await userWrite("iwb", ...del);
  assert.deepEqual([second.status, second.body.error.code], [409, "idempotency_in_flight"]);
  assert.equal((await firstP).status, 200);
  await stack.until((s) => (s.redis.set ?? 0) >= 1, "the result record");
  await stack.clearFaults();
  assert.deepEqual((await resend("iwb", ...del)).body, { deleted: true });
});

test("mark or delete of an item the user does not have: 404 item_not_found", async () => {
  await createCommitted(event({ owner: "inf", itemKey: "gone", sender: { id: "s", name: "S" } }));
  await createCommitted(event({ owner: "other", itemKey: "theirs", sender: { id: "s", name: "S" } }));
  assert.equal((await userWrite("inf", "DELETE", "/v1/notifications/items/gone")).status, 200);
  for (const key of ["never", "gone", "theirs"]) {
    const m = await userWrite("inf", "POST", "/v1/notifications/mark", { itemKey: key, flag: "read" });
    assert.deepEqual([m.status, m.body.error.code], [404, "item_not_found"], `mark ${key}`);
    const d = await userWrite("inf", "DELETE", `/v1/notifications/items/${key}`);
    assert.deepEqual([d.status, d.body.error.code], [404, "item_not_found"], `delete ${key}`);
  }
  const all = await userWrite("inf", "POST", "/v1/notifications/mark", { all: true, flag: "read" });
  assert.deepEqual([all.status, all.body], [200, { updated: 0 }], "`all` over nothing is no miss");
  assert.equal((await list("other")).body.items[0].read, false, "their item untouched");
});
