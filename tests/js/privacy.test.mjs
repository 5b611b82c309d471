// Erasing and exporting an owner in workerd, against the local stack (Data API emulator, real
// redis-server behind the REST bridge), with the queue and the badge hub bound: an inbox in every
// state (live, read, archived, tombstoned, queued, dead-lettered, preferences, idempotency
// records, an open badge socket) is erased by one DELETE; then every Data API collection and
// every Redis key is scanned; a late event behind the fence is dropped and counted, a new one
// starts a new inbox. The final sweep runs a minute after the fence (the queue's delayed
// continuation); the native test (tests/privacy.rs) drives it with an explicit clock.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startStack } from "./stack.mjs";
import { BadgeSocket } from "./badge.mjs";

const KEYS = {
  // Key names and scopes, not a secret; joined so that no one literal looks like a secret
  // value (tests/published_values.rs checks every such literal in the repository).
  SERVICE_KEYS: ["ingest:notify:write", "forget:privacy", "ops:admin"].join(","),
  SERVICE_KEY_INGEST: "ingest-key-value-privacy-test-1",
  SERVICE_KEY_FORGET: "forget-key-value-privacy-test-1",
  SERVICE_KEY_OPS: "ops-key-value-privacy-test-1",
};
const as = (key) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
const INGEST = as(KEYS.SERVICE_KEY_INGEST);
const FORGET = as(KEYS.SERVICE_KEY_FORGET);
const OPS = as(KEYS.SERVICE_KEY_OPS);
const COLLECTIONS = ["notifications", "notifications_dead", "notifications_preferences", "notifications_erasures", "notifications_senders"];

let stack, w;
before(async () => {
  stack = await startStack();
  w = await startWorker({ bindings: { ...stack.bindings, ...AUTH, ...KEYS }, queue: {} });
});
after(async () => { await w?.stop(); await stack?.stop(); });

let seq = 0;
const event = (owner, itemKey, sender, over = {}) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `pv-${++seq}`, sender: { id: sender, name: `Name-${sender}` },
  createdTimeMsec: Date.now(), ...over,
});
const call = async (method, p, headers, body) => {
  const r = await fetch(`${w.base}${p}`, { method, headers, body: body && JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};
const items = async (owner) =>
  (await stack.dataApi("find", { collection: "notifications", filter: { owner } })).documents;

async function fill(owner) {
  for (const [k, s] of [["live", "bo"], ["read", "bo"], ["archived", "bo"], ["gone", "bo"], ["merged", "bo"], ["merged", "cy"]]) {
    // Written at once (201/200), or queued when the item is hot (202).
    assert.ok([200, 201, 202].includes((await call("POST", "/v1/notifications/events", INGEST, event(owner, k, s))).status));
  }
  const deadline = Date.now() + 20_000;
  while ((await items(owner)).length < 5) {
    if (Date.now() > deadline) throw new Error(`${owner}'s items were not written`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const user = { ...asUser(owner), "Idempotency-Key": `mark-${owner}` };
  assert.equal((await call("POST", "/v1/notifications/mark", user, { itemKey: "read", flag: "read" })).status, 200);
  assert.equal((await call("POST", "/v1/notifications/mark", asUser(owner), { itemKey: "archived", flag: "archived" })).status, 200);
  assert.equal((await call("DELETE", "/v1/notifications/items/gone", asUser(owner))).status, 200);
  assert.equal((await call("PUT", "/v1/notifications/preferences", asUser(owner), { mutedTypes: ["follow"] })).status, 200);
  // A dead letter addressed to the owner (as the dead-letter consumer stores it).
  await stack.dataApi("insertOne", {
    collection: "notifications_dead",
    document: { _id: `dl-${owner}`, owner, body: JSON.stringify(event(owner, "dead", "dy")), queue: "notify-events-dlq" },
  });
}

test("a privacy key erases an owner everywhere; their badge socket is closed; others keep theirs", async () => {
  await fill("zoe");
  await fill("kai");
  const socket = await BadgeSocket.open(w.base, "zoe").opened;
  await socket.next(() => true, "the first badge");

  const denied = await call("DELETE", "/v1/admin/owners/zoe", INGEST);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.error.code, "insufficient_scope");

  const r = await call("DELETE", "/v1/admin/owners/zoe", FORGET);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.equal(r.body.step, "sweep", "everything but the delayed sweep ran in one request");
  assert.equal(r.body.removed.items + r.body.removed.tombstones, 5);
  assert.equal(r.body.removed.tombstones, 1);
  assert.equal(r.body.removed.deadLetters, 1);
  assert.equal(r.body.removed.badgeSockets, 1);
  assert.ok(r.body.removed.idempotencyRecords >= 1);
  const closed = await socket.closed;
  assert.equal(closed.code, 4003);

  for (const collection of COLLECTIONS) {
    const docs = (await stack.dataApi("find", { collection, filter: {} })).documents;
    for (const d of docs) {
      // The running job alone holds the owner, until its last step (then it forgets it).
      const { owner, ...rest } = d._id === r.body.id ? d : { ...d, owner: undefined };
      if (d._id === r.body.id) assert.equal(owner, "zoe");
      assert.ok(!JSON.stringify(d._id === r.body.id ? rest : d).includes("zoe"), `${collection}: ${JSON.stringify(d)}`);
    }
    if (collection !== "notifications_erasures") assert.ok(docs.some((d) => JSON.stringify(d).includes("kai")), `kai keeps ${collection}`);
  }
  const keys = await stack.redis(["KEYS", "*"]);
  assert.ok(!keys.some((k) => k.includes("zoe")), keys.join(" "));
  assert.ok(keys.some((k) => k.includes(":kai:")), "kai's idempotency record stays");

  const progress = await call("GET", `/v1/admin/erasures/${encodeURIComponent(r.body.id)}`, OPS);
  assert.equal(progress.status, 200);
  assert.equal(progress.body.state, "running");
  assert.equal((await call("GET", "/v1/admin/erasures/owner:nope", OPS)).status, 404);
});

test("behind the fence: a late event is dropped and counted; a new one is a new inbox", async () => {
  const t = Date.now();
  await call("POST", "/v1/notifications/events", INGEST, event("liv", "old", "bo", { createdTimeMsec: t - 1000 }));
  const erased = await call("DELETE", "/v1/admin/owners/liv", OPS);
  assert.ok([200, 202].includes(erased.status));
  const before = (await call("GET", `/v1/admin/erasures/${erased.body.id}`, FORGET)).body.lateEventsDropped;
  // The queued create (and a retry of it) lands after the erasure: dropped.
  await call("POST", "/v1/notifications/events", INGEST, event("liv", "old", "cy", { createdTimeMsec: t - 500 }));
  const deadline = Date.now() + 20_000;
  let dropped = before;
  while (dropped < before + 1) {
    if (Date.now() > deadline) throw new Error("the late event was not counted");
    await new Promise((r) => setTimeout(r, 20));
    dropped = (await call("GET", `/v1/admin/erasures/${erased.body.id}`, FORGET)).body.lateEventsDropped;
  }
  assert.deepEqual(await items("liv"), []);
  await call("POST", "/v1/notifications/events", INGEST, event("liv", "new", "bo", { createdTimeMsec: Date.now() + 10 }));
  while ((await items("liv")).length < 1) {
    if (Date.now() > deadline) throw new Error("the new inbox was not written");
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual((await items("liv")).map((d) => d.itemKey), ["new"]);
});

test("exports: the user's own and the privacy key's, paged, in the contract", async () => {
  await fill("eve");
  const first = await call("GET", "/v1/notifications/export?limit=2", asUser("eve"));
  assert.equal(first.status, 200);
  assert.equal(first.body.owner, "eve");
  assert.equal(first.body.items.length, 2);
  assert.deepEqual(first.body.preferences.mutedTypes, ["follow"]);
  assert.equal(first.body.deadLetters.length, 1);
  const keys = first.body.items.map((d) => d.itemKey);
  let cursor = first.body.nextCursor;
  while (cursor) {
    const page = await call("GET", `/v1/admin/owners/eve/export?limit=2&cursor=${cursor}`, FORGET);
    assert.equal(page.status, 200);
    keys.push(...page.body.items.map((d) => d.itemKey));
    cursor = page.body.nextCursor;
  }
  assert.deepEqual(keys.sort(), ["archived", "gone", "live", "merged", "read"]);
  assert.equal((await call("GET", "/v1/admin/owners/eve/export", INGEST)).status, 403);
  assert.equal((await call("GET", "/v1/notifications/export?limit=0", asUser("eve"))).status, 400);
});

test("a privacy key erases a sender from everyone's items; its late event is dropped and counted", async () => {
  const t = Date.now() - 1000;
  const sent = [["ria", "post", "max"], ["ria", "post", "bo"], ["ria", "solo", "max"], ["ned", "post", "max"], ["ned", "post", "cy"], ["ned", "post", "di"]];
  for (const [o, k, s] of sent) {
    assert.ok([200, 201, 202].includes((await call("POST", "/v1/notifications/events", INGEST, event(o, k, s, { createdTimeMsec: t }))).status));
  }
  const deadline = Date.now() + 20_000;
  while ((await items("ria")).length < 2 || (await items("ned")).length < 1) {
    if (Date.now() > deadline) throw new Error("the items were not written");
    await new Promise((r) => setTimeout(r, 20));
  }
  const denied = await call("POST", "/v1/admin/senders/max/erasure", INGEST);
  assert.equal(denied.status, 403);

  const r = await call("POST", "/v1/admin/senders/max/erasure", FORGET);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.ok(r.body.id.startsWith("sender:") && !r.body.id.includes("max"));
  assert.equal(r.body.step, "sweep", "everything but the delayed sweep ran in one request");
  assert.deepEqual(
    { items: r.body.scrubbed.items, itemsRemoved: r.body.scrubbed.itemsRemoved, countsDropped: r.body.scrubbed.countsDropped },
    { items: 2, itemsRemoved: 1, countsDropped: 3 },
  );
  for (const d of [...(await items("ria")), ...(await items("ned"))]) {
    assert.ok(!JSON.stringify(d).includes("Name-max"), JSON.stringify(d));
  }
  // Bo alone on ria's post; max's solo item is gone from the list; ned's post counts cy and di.
  const list = await call("GET", "/v1/notifications", asUser("ria"));
  assert.deepEqual(list.body.items.map((i) => [i.itemKey, i.originsCount, i.summary]), [["post", 1, "Name-bo liked your post"]]);
  const ned = await call("GET", "/v1/notifications", asUser("ned"));
  assert.equal(ned.body.items[0].originsCount, 2);
  assert.ok(!ned.body.items[0].summary.includes("max"), ned.body.items[0].summary);

  // Same sender, same job; a late event of max (created before the erasure) is dropped.
  const again = await call("POST", "/v1/admin/senders/max/erasure", OPS);
  assert.equal(again.body.id, r.body.id);
  await call("POST", "/v1/notifications/events", INGEST, event("ria", "post", "max", { createdTimeMsec: t + 1 }));
  let progress;
  while (!progress || progress.body.lateEventsDropped < 1) {
    if (Date.now() > deadline) throw new Error("the late event was not counted");
    await new Promise((res) => setTimeout(res, 20));
    progress = await call("GET", `/v1/admin/erasures/${encodeURIComponent(r.body.id)}`, FORGET);
  }
  assert.equal(progress.status, 200);
  assert.equal(progress.body.state, "running");
  assert.ok(!JSON.stringify(await items("ria")).includes("Name-max"));
  assert.equal((await call("POST", "/v1/admin/senders/%FF/erasure", FORGET)).status, 400);
});
