// The notification center in workerd against the production Data API gateway (stack/gateway.py in
// production mode; pymongo.MongoClient patched by mongomock since no MongoDB server runs here) and
// the real redis-server behind the REST bridge. The gateway has no /__stats or /__faults, so round
// trips are not counted here (notify_worker.test.mjs does that against the dev emulator); this runs a
// representative flow end to end and checks what reached the gateway from its JSON log.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startGatewayStack, GATEWAY_KEYS, GATEWAY_COLLECTIONS } from "./gateway.mjs";

const SERVICE = { authorization: "Bearer test-service-token", "content-type": "application/json" };
let gw, w;

before(async () => {
  gw = await startGatewayStack();
  w = await startWorker({ bindings: { ...gw.bindings, SERVICE_TOKEN: "test-service-token", ...AUTH } });
});
after(async () => { await w?.stop(); await gw?.stop(); });

let seq = 0;
const event = (over = {}) => ({
  owner: "gia",
  itemKey: "post:1",
  serviceType: "feed",
  categoryType: "social",
  notificationType: "like",
  templateType: "default",
  eventId: `gw-ev-${++seq}`,
  sender: { id: "bo", name: "Bo" },
  landing: "app://post/1",
  createdTimeMsec: Date.now(),
  ...over,
});
const create = (ev) => w.post("/v1/notifications/events", ev, SERVICE);
const get = async (p, user) => {
  const r = await fetch(`${w.base}${p}`, { headers: asUser(user) });
  return { status: r.status, body: await r.json() };
};

test("admin indexes through the gateway: unique + TTL indexes exist, idempotent", async () => {
  for (let i = 0; i < 2; i++) {
    const r = await w.post("/v1/admin/indexes", {}, SERVICE);
    assert.equal(r.status, 200, JSON.stringify(r.body));
  }
  const { status, body } = await gw.dataApi("listIndexes", { collection: "notifications" });
  assert.equal(status, 200);
  const byName = Object.fromEntries(body.indexes.map((i) => [i.name, i]));
  assert.equal(byName.owner_itemKey.unique, true);
  assert.equal(byName.purgeAt_ttl.expireAfterSeconds, 0);
  assert.ok(byName.owner_revision && byName.owner_category_revision && byName.owner_sync);
});

test("create, duplicate, merge, list, unread, mark, retract, delete", async () => {
  const first = event();
  const before = await gw.dev.stats();
  let r = await create(first);
  assert.equal(r.status, 201, JSON.stringify(r.body));
  assert.equal(r.body.status, "created");
  // The event id is marked done after the response (waitUntil). Until then a resend finds it
  // in flight and is written again, idempotently ("already_applied"): wait for the commit.
  await gw.dev.scriptsDone(before, 2, "the first event's reservation and commit");
  assert.equal((await create(first)).body.status, "duplicate");
  r = await create(event({ sender: { id: "cy", name: "Cy" } }));
  assert.equal(r.body.status, "merged");
  await create(event({ itemKey: "post:2", sender: { id: "di", name: "Di" } }));

  let page = await get("/v1/notifications", "gia");
  assert.equal(page.status, 200);
  assert.deepEqual(page.body.items.map((i) => i.itemKey).sort(), ["post:1", "post:2"]);
  const item = page.body.items.find((i) => i.itemKey === "post:1");
  assert.equal(item.originsCount, 2);
  assert.match(item.summary, /^(Bo|Cy) and (Bo|Cy) liked your post$/);
  assert.equal((await get("/v1/notifications/unread-count", "gia")).body.unread, 2);

  const mark = await fetch(`${w.base}/v1/notifications/mark`, {
    method: "POST", headers: asUser("gia"), body: JSON.stringify({ itemKey: "post:1", flag: "read" }),
  });
  assert.equal(mark.status, 200);
  assert.equal((await get("/v1/notifications/unread-count", "gia")).body.unread, 1);

  r = await w.post("/v1/notifications/retractions", { owner: "gia", itemKey: "post:1", senderId: "cy" }, SERVICE);
  assert.equal(r.body.status, "updated");
  page = await get("/v1/notifications", "gia");
  assert.equal(page.body.items.find((i) => i.itemKey === "post:1").originsCount, 1);
  r = await w.post("/v1/notifications/retractions", { owner: "gia", itemKey: "post:1", senderId: "bo" }, SERVICE);
  assert.equal(r.body.status, "deleted");

  const del = await fetch(`${w.base}/v1/notifications/items/post:2`, { method: "DELETE", headers: asUser("gia") });
  assert.equal(del.status, 200);
  assert.equal((await get("/v1/notifications", "gia")).body.items.length, 0);
});

test("preferences through the documented production gateway: stored, read back, enforced", async () => {
  const put = await fetch(`${w.base}/v1/notifications/preferences`, {
    method: "PUT", headers: asUser("pref"), body: JSON.stringify({ mutedTypes: ["like"] }),
  });
  assert.equal(put.status, 200, await put.clone().text());
  const got = await get("/v1/notifications/preferences", "pref");
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.mutedTypes, ["like"]);
  const r = await create(event({ owner: "pref", itemKey: "muted:1" }));
  assert.equal(r.body.status, "muted");
  // The gateway's allowlist is the documented one, and the document reached it.
  const { status, body } = await gw.dataApi("find", { collection: "notifications_preferences", filter: { _id: "pref" } });
  assert.equal(status, 200);
  assert.deepEqual(body.documents.map((d) => d.mutedTypes), [["like"]]);
});

test("export and erasure through the documented production gateway: every collection reached", async () => {
  const t = Date.now();
  assert.equal((await create(event({ owner: "gone", itemKey: "g:1", createdTimeMsec: t - 10 }))).status, 201);
  const put = await fetch(`${w.base}/v1/notifications/preferences`, {
    method: "PUT", headers: asUser("gone"), body: JSON.stringify({ mutedTypes: ["follow"] }),
  });
  assert.equal(put.status, 200);
  const exported = await get("/v1/notifications/export", "gone");
  assert.equal(exported.status, 200, JSON.stringify(exported.body));
  assert.deepEqual(exported.body.items.map((d) => d.itemKey), ["g:1"]);
  assert.deepEqual(exported.body.preferences.mutedTypes, ["follow"]);

  const erased = await fetch(`${w.base}/v1/admin/owners/gone`, { method: "DELETE", headers: SERVICE });
  const job = await erased.json();
  assert.equal(erased.status, 202, JSON.stringify(job));
  assert.equal(job.removed.items, 1);
  assert.equal(job.removed.preferences, 2);
  for (const collection of GATEWAY_COLLECTIONS.split(",")) {
    const { status, body } = await gw.dataApi("find", { collection, filter: {} });
    assert.equal(status, 200, `${collection} is served`);
    for (const d of body.documents) {
      if (d._id === job.id) continue; // the running job holds the owner until its last step
      assert.ok(!JSON.stringify(d).includes('"gone"'), `${collection}: ${JSON.stringify(d)}`);
    }
  }
  const late = await create(event({ owner: "gone", itemKey: "g:2", createdTimeMsec: t - 5 }));
  assert.equal(late.body.status, "erased");
  const progress = await fetch(`${w.base}/v1/admin/erasures/${job.id}`, { headers: SERVICE });
  assert.equal((await progress.json()).lateEventsDropped, 1);

  // A sender's erasure reaches the senders' index (written by the create) through it too.
  const own = { owner: "stays", itemKey: "s:1", sender: { id: "leaver", name: "Leaver" }, createdTimeMsec: t - 10 };
  assert.equal((await create(event(own))).status, 201);
  const s = await fetch(`${w.base}/v1/admin/senders/leaver/erasure`, { method: "POST", headers: SERVICE });
  const sj = await s.json();
  assert.equal(s.status, 202, JSON.stringify(sj));
  assert.equal(sj.scrubbed.itemsRemoved, 1, "its only sender: the item is removed");
  const { body } = await gw.dataApi("find", { collection: "notifications", filter: { owner: "stays" } });
  assert.ok(!JSON.stringify(body.documents).includes("Leaver"), JSON.stringify(body.documents));
});

test("cursor paging: every item once, new arrivals do not shift later pages", async () => {
  const base = Date.now();
  for (let i = 0; i < 12; i++) {
    const r = await create(event({ owner: "pia", itemKey: `item:${i}`, sender: { id: `u${i}`, name: `U${i}` }, createdTimeMsec: base + i }));
    assert.equal(r.status, 201);
  }
  const seen = new Set();
  let cursor = null;
  let pages = 0;
  do {
    const page = await get(`/v1/notifications?limit=5${cursor ? `&cursor=${cursor}` : ""}`, "pia");
    for (const it of page.body.items) {
      assert.ok(!seen.has(it.itemKey), `no duplicates across pages (${it.itemKey})`);
      seen.add(it.itemKey);
    }
    if (pages === 0) await create(event({ owner: "pia", itemKey: "new:0", sender: { id: "n0", name: "N" } }));
    cursor = page.body.nextCursor;
    pages++;
  } while (cursor && pages < 10);
  for (let i = 0; i < 12; i++) assert.ok(seen.has(`item:${i}`), `item:${i} listed`);
  assert.equal(pages, 3);
});

test("cron housekeeping trims an owner to the cap through the gateway", async () => {
  const w2 = await startWorker({
    bindings: { ...gw.bindings, SERVICE_TOKEN: "test-service-token", ...AUTH, NOTIFY_MAX_PER_OWNER: "3" },
  });
  try {
    const base = Date.now();
    for (let i = 0; i < 6; i++) {
      await w2.post("/v1/notifications/events", event({ owner: "hk", itemKey: `h${i}`, sender: { id: `q${i}`, name: "Q" }, createdTimeMsec: base + i }), SERVICE);
    }
    await (await w2.mf.getWorker()).scheduled({ cron: "17 3 * * *" });
    assert.deepEqual((await get("/v1/notifications", "hk")).body.items.map((i) => i.itemKey), ["h5", "h4", "h3"]);
  } finally {
    await w2.stop();
  }
});

test("the unique index holds through the gateway: duplicate key is 409 DuplicateKey", async () => {
  const doc = { owner: "uniq", itemKey: "k", revision: 1 };
  assert.equal((await gw.dataApi("insertOne", { collection: "notifications", document: doc })).status, 201);
  const dup = await gw.dataApi("insertOne", { collection: "notifications", document: doc });
  assert.equal(dup.status, 409);
  assert.equal(dup.body.error_code, "DuplicateKey");
});

test("everything went to the gateway (not the dev emulator), logged without keys; no dev endpoints", async () => {
  assert.equal((await gw.dev.stats()).dataTotal, 0, "the dev emulator's Data API was not used");
  for (const p of ["/__stats", "/__faults"]) {
    assert.equal((await fetch(gw.info.data_api_url + p)).status, 404);
  }
  assert.equal((await fetch(gw.info.data_api_url + "/healthz")).status, 200);
  const requests = gw.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
  const byAction = {};
  for (const l of requests) if (l.key === "key0") byAction[l.action] = (byAction[l.action] ?? 0) + 1;
  for (const a of ["createIndexes", "updateOne", "find", "aggregate", "updateMany"]) {
    assert.ok(byAction[a] > 0, `worker sent ${a} with key0: ${JSON.stringify(byAction)}`);
  }
  const text = gw.logs.join("\n");
  for (const k of GATEWAY_KEYS) assert.ok(!text.includes(k), "no key value in the logs");
});

test("SIGTERM: the gateway stops gracefully with exit code 0", async () => {
  await w.stop();
  w = null;
  await gw.stop();
  assert.deepEqual(gw.exit, { code: 0, signal: null });
  gw = null;
});
