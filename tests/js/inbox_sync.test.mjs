// An inbox that never lies, end to end in workerd against the local stack: two devices converge
// through the change feed, counts come with every page, bulk actions, preferences (muting).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const SERVICE = { authorization: "Bearer svc", "content-type": "application/json" };
let stack, w;

before(async () => {
  stack = await startStack();
  // One clock for worker and database here, so the feed's settle window can be 0 (the worker
  // still holds back the current millisecond) and the "exactly these changes" assertions are
  // exact (production holds positions 2 s back).
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH, NOTIFY_SYNC_SETTLE_MS: "0" } });
  assert.equal((await w.post("/v1/admin/indexes", {}, SERVICE)).status, 200);
});
after(async () => { await w?.stop(); await stack?.stop(); });

let seq = 0;
const create = (owner, itemKey, over = {}) => w.post("/v1/notifications/events", {
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default",
  eventId: `ev-${++seq}`, sender: { id: `s${seq}`, name: `S${seq}` }, createdTimeMsec: Date.now(), ...over,
}, SERVICE);
const call = async (user, method, path, body) => {
  const r = await fetch(w.base + path, { method, headers: { ...asUser(user), "content-type": "application/json" }, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};

/** Waits until the wall clock is past `ms` (the clock is the condition; no fixed sleep). */
const clockPast = async (ms) => { while (Date.now() <= ms) await new Promise((r) => setTimeout(r, 1)); };

/** A device's cache: itemKey → item, seeded by a list, kept current by `changes`. */
class Device {
  constructor(user) { this.user = user; this.items = new Map(); this.sync = null; }
  async list() {
    const r = await call(this.user, "GET", "/v1/notifications?limit=100");
    assert.equal(r.status, 200);
    assert.equal(r.body.nextCursor, null);
    this.items = new Map(r.body.items.map((i) => [i.itemKey, i]));
    this.sync = r.body.sync;
    return r.body;
  }
  async pull() {
    const applied = [];
    let pages = 0;
    for (;;) {
      const r = await call(this.user, "GET", `/v1/notifications/changes?limit=2&since=${encodeURIComponent(this.sync)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      pages++;
      for (const e of r.body.items) {
        if (e.deleted) this.items.delete(e.itemKey); else this.items.set(e.itemKey, e);
        applied.push(e);
      }
      this.sync = r.body.sync;
      if (!r.body.hasMore) return { applied, pages };
    }
  }
  inbox() {
    return [...this.items.values()].filter((i) => !i.archived).sort((a, b) => b.revision - a.revision);
  }
}

test("device B's next sync returns exactly what device A changed, and replays to a fresh list", async () => {
  for (let i = 0; i < 5; i++) assert.equal((await create("dev", `p${i}`)).status, 201);
  // A list's feed position is "now - settle", at least one millisecond back, so writes stamped
  // within it come again as repeats: let the clock pass the creates first.
  await clockPast(Date.now() + 1);
  const b = new Device("dev");
  await b.list();
  assert.equal(b.items.size, 5);
  // Device A: read, archive, delete.
  assert.equal((await call("dev", "POST", "/v1/notifications/mark", { itemKey: "p0", flag: "read" })).status, 200);
  assert.equal((await call("dev", "POST", "/v1/notifications/mark", { itemKey: "p1", flag: "archived" })).status, 200);
  assert.equal((await call("dev", "DELETE", "/v1/notifications/items/p2")).status, 200);

  // A full page whose last entry is younger than the settle window holds the position and says
  // hasMore: false (the rest comes on the next poll); to drain in one go, let the clock pass.
  await clockPast(Date.now() + 1);
  await stack.reset();
  const { applied, pages } = await b.pull();
  const s = await stack.stats();
  assert.deepEqual(s.data, { find: pages }, "one Data API call per changes page");
  assert.deepEqual(applied.map((e) => e.itemKey).sort(), ["p0", "p1", "p2"], "exactly those changes");
  const byKey = Object.fromEntries(applied.map((e) => [e.itemKey, e]));
  assert.equal(byKey.p0.read, true);
  assert.equal(byKey.p1.archived, true);
  assert.deepEqual(byKey.p2, { itemKey: "p2", deleted: true });

  const fresh = new Device("dev");
  await fresh.list();
  assert.deepEqual(b.inbox(), fresh.inbox(), "B's replayed state equals a fresh list");
  assert.deepEqual(fresh.inbox().map((i) => i.itemKey).sort(), ["p0", "p3", "p4"]);

  // A bulk action from A also reaches B, and another owner's feed never shows these items.
  assert.equal((await call("dev", "POST", "/v1/notifications/bulk", { action: "delete" })).body.updated, 4);
  await clockPast(Date.now() + 1);
  await b.pull();
  assert.equal(b.items.size, 0);
  const other = await call("eve", "GET", "/v1/notifications/changes");
  assert.deepEqual(other.body.items, []);
  assert.equal((await call("dev", "GET", "/v1/notifications/changes?since=%%%")).body.error.code, "invalid_cursor");
});

test("counts come with every page in one call; seen clears the badge, bulk actions are one call", async () => {
  for (let i = 0; i < 4; i++) await create("cnt", `c${i}`, { categoryType: i < 2 ? "social" : "system" });
  await stack.reset();
  const page = await call("cnt", "GET", "/v1/notifications?limit=2");
  assert.deepEqual((await stack.stats()).data, { aggregate: 1 });
  assert.deepEqual(page.body.counts, { unread: 4, unseen: 4 });
  assert.equal(page.body.items.length, 2);

  const bulk = async (body) => {
    await stack.reset();
    const r = await call("cnt", "POST", "/v1/notifications/bulk", body);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual((await stack.stats()).data, { updateMany: 1 }, JSON.stringify(body));
    return r.body.updated;
  };
  assert.equal(await bulk({ action: "seen" }), 4);
  assert.deepEqual((await call("cnt", "GET", "/v1/notifications")).body.counts, { unread: 4, unseen: 0 });
  assert.equal(await bulk({ action: "read", category: "system" }), 2);
  assert.deepEqual((await call("cnt", "GET", "/v1/notifications/unread-count")).body, { unread: 2, unseen: 0 });
  assert.equal(await bulk({ action: "archiveRead" }), 2);
  assert.deepEqual((await call("cnt", "GET", "/v1/notifications?archived=true")).body.items.map((i) => i.itemKey).sort(), ["c2", "c3"]);
  const bad = await call("cnt", "POST", "/v1/notifications/bulk", { action: "explode" });
  assert.deepEqual([bad.status, bad.body.error.code], [400, "invalid_action"]);
});

test("preferences: a muted kind is answered `muted` and not stored; unmuting restores delivery", async () => {
  const empty = await call("mo", "GET", "/v1/notifications/preferences");
  assert.deepEqual(empty.body, { mutedCategories: [], mutedTypes: [], enforced: true });
  const put = await call("mo", "PUT", "/v1/notifications/preferences", { mutedCategories: ["system"], mutedTypes: ["follow"] });
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.deepEqual((await call("mo", "GET", "/v1/notifications/preferences")).body.mutedTypes, ["follow"]);
  // Warm the reservation script's cache, and wait for the warm-up's dedup commit (written after
  // the response, in waitUntil) so it cannot land in the count below.
  const before = await stack.stats();
  assert.equal((await create("warm", "w")).status, 201);
  await stack.scriptsDone(before, 2, "the warm-up's reservation and commit");
  await stack.reset();
  const muted = await create("mo", "m1", { categoryType: "system" });
  assert.deepEqual([muted.status, muted.body.status], [200, "muted"]);
  const s = await stack.stats();
  assert.equal(s.dataTotal, 0, "not stored");
  assert.deepEqual(s.redis, { evalsha: 1 }, "checked inside the reservation's one round trip");
  assert.equal((await create("mo", "m2", { notificationType: "follow" })).body.status, "muted");
  assert.equal((await create("mo", "m3")).status, 201, "other kinds still arrive");
  const bad = await call("mo", "PUT", "/v1/notifications/preferences", { mutedCategories: ["nope"] });
  assert.deepEqual([bad.status, bad.body.error.code], [422, "unknown_category"]);
  assert.deepEqual((await call("mo", "GET", "/v1/notifications/preferences")).body.mutedCategories, ["system"], "a bad PUT changed nothing");
  await call("mo", "PUT", "/v1/notifications/preferences", {});
  assert.equal((await create("mo", "m4", { categoryType: "system" })).status, 201);
});

test("templates: an event missing its template's argument is refused, a sender named like a placeholder stays literal", async () => {
  const r = await create("tpl", "t1", { notificationType: "reply" });
  assert.deepEqual([r.status, r.body.error.code], [422, "missing_field"]);
  assert.match(r.body.error.message, /messageArguments\.excerpt/);
  await create("tpl", "t1", { notificationType: "reply", messageArguments: { excerpt: "{actor}" }, sender: { id: "x", name: "{excerpt}" } });
  const [item] = (await call("tpl", "GET", "/v1/notifications")).body.items;
  assert.equal(item.summary, "{excerpt} replied: {actor}");
});
