// Exact sender counts past the origins cap, in workerd against the local stack: 300 distinct
// senders on one item (the cap keeps 100 origins), 50 returning after the cap dropped their
// origin, retractions interleaved, 8 requests at once. Round 1 sends single events (the create
// path), round 2 sends bodies of events (the batch path the queue consumer runs too). Every time
// is chosen by the test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const SERVICE = { authorization: "Bearer test-service-token", "content-type": "application/json" };
let stack, w;

before(async () => {
  stack = await startStack();
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "test-service-token", ...AUTH } });
  assert.equal((await w.post("/v1/admin/indexes", {}, SERVICE)).status, 200);
});
after(async () => { await w?.stop(); await stack?.stop(); });

const t0 = Date.now() - 1_000_000;
const event = (i, eventId, t) => ({
  owner: "ana", itemKey: "post:1", serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId, sender: { id: `s${i}`, name: `S${i}` }, createdTimeMsec: t,
});

async function ok(path, body) {
  const r = await w.post(path, body, SERVICE);
  assert.ok(r.status === 200 || r.status === 201, `${path}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

async function pool(jobs, n = 8) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

async function item() {
  const r = await fetch(`${w.base}/v1/notifications`, { headers: asUser("ana") });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  const it = body.items.find((n) => n.itemKey === "post:1");
  assert.ok(it, "the item is listed");
  return it;
}

test("300 senders, 50 returning after the cap dropped them, retractions interleaved: the count is exact", { timeout: 300_000 }, async () => {
  const on = new Set();
  const retract = (i) => ok("/v1/notifications/retractions", { owner: "ana", itemKey: "post:1", senderId: `s${i}` });
  // Round 1: single events; every 6th sender is retracted right behind its create.
  const round1 = [];
  for (let i = 0; i < 300; i++) {
    if (i % 6 !== 0) on.add(i);
    round1.push(async () => {
      await ok("/v1/notifications/events", event(i, `a${i}`, t0 + 10 * i));
      if (i % 6 === 0) await retract(i);
    });
  }
  await pool(round1);
  let it = await item();
  assert.deepEqual([it.originsCount, it.originsCountExact], [on.size, true]);

  // Round 2, in bodies of 10 events run at once, with retractions among them: 50 dropped
  // senders return with new event ids (old times: dropped again at once; retracted ones stay
  // refused), 20 retracted senders come back after their retraction, 17 dropped senders are
  // retracted.
  const events = [];
  for (let i = 0; i < 50; i++) events.push(event(i, `b${i}`, t0 + 10 * i + 5));
  for (let i = 0; i < 120; i += 6) { events.push(event(i, `c${i}`, Date.now() + 1)); on.add(i); }
  const round2 = [];
  for (let b = 0; b < events.length; b += 10) {
    const chunk = events.slice(b, b + 10);
    round2.push(async () => {
      const r = await ok("/v1/notifications/events", { events: chunk });
      assert.ok(r.results.every((x) => ["merged", "already_applied"].includes(x.status)), JSON.stringify(r));
    });
  }
  for (let i = 101; i < 200; i += 6) { round2.push(() => retract(i)); on.delete(i); }
  await pool(round2);
  it = await item();
  // The list shows the newest few origins of the 100 stored.
  const shown = it.origins.map((o) => o.senderId);
  assert.equal(new Set(shown).size, shown.length, "no sender twice");
  assert.ok(shown.every((s) => on.has(Number(s.slice(1)))), "only senders on the item are shown");
  assert.deepEqual([it.originsCount, it.originsCountExact], [on.size, true]);
  assert.match(it.summary, new RegExp(`and ${on.size - 1} others`));
});
