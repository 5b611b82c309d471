// Burst-only queueing in workerd, queue bound as in wrangler.toml: an ordinary single create is
// written at once (201) and moves the owner's badge without waiting for the queue; the creates of
// a hot item are answered 202, written by the consumer a batch to an upsert, and counted exactly.
// The hot windows are a minute long here, so a slow machine cannot split the burst (the window
// rules themselves are tested natively in tests/queue_batch.rs). The same burst under ~10 % faults
// on both backends is counted exactly once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH, asUser } from "./harness.mjs";
import { startStack } from "./stack.mjs";
import { BadgeSocket } from "./badge.mjs";

const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };
const LIMIT = 4; // NOTIFY_HOT_EVENTS's default
let stack, w;
before(async () => {
  stack = await startStack();
  w = await startWorker({
    bindings: {
      ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH, NOTIFY_HOT_WINDOW_MS: "60000", NOTIFY_HOT_COOLDOWN_MS: "60000",
      NOTIFY_QUEUE_RETRY_SECONDS: "1", NOTIFY_QUEUE_RETRY_MAX_SECONDS: "2",
    },
    queue: { maxBatchTimeout: 1, maxRetries: 3 },
  });
  await w.post("/v1/admin/indexes", {}, SERVICE);
});
after(async () => {
  await w?.stop();
  await stack?.stop();
});

const like = (owner, itemKey, sender, t) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `${owner}:${itemKey}:${sender}`, sender: { id: sender, name: sender }, createdTimeMsec: t,
});
const post = (body) => fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(body) });
async function firstItem(owner) {
  const r = await fetch(`${w.base}/v1/notifications?limit=1&counts=false`, { headers: asUser(owner) });
  return (await r.json()).items?.[0];
}

test("an ordinary create is written at once and its badge moves before any queue batch", async () => {
  const socket = await BadgeSocket.open(w.base, "calm").opened;
  await socket.next((m) => m.unread === 0, "the connect badge");
  const r = await post(like("calm", "post:1", "ana", Date.now() - 1_000));
  assert.equal(r.status, 201, await r.clone().text());
  assert.equal((await r.json()).status, "created");
  // Written before the answer: the list has it now, without waiting on the consumer.
  assert.equal((await firstItem("calm"))?.originsCount, 1);
  await socket.next((m) => m.unread === 1, "the badge after the create");
  await socket.close();
});

test("a hot item's creates are queued, coalesced into a few upserts and counted exactly", { timeout: 120_000 }, async () => {
  const FANS = 200;
  const t0 = Date.now() - 10_000;
  await stack.until(() => true, "idle");
  const before = (await stack.stats()).data.updateOne ?? 0;
  const answers = { 201: 0, 200: 0, 202: 0 };
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < FANS) {
      const i = next++;
      const r = await post(like("star", "post:viral", `fan${i}`, t0 + i));
      assert.ok(r.status in answers, `${r.status} ${await r.text()}`);
      answers[r.status]++;
      await r.arrayBuffer().catch(() => {});
    }
  }));
  // The counter is one atomic INCR in the reservation: exactly the first LIMIT were written
  // (one created the item, unless the consumer's first batch beat it there).
  assert.deepEqual([answers[201] + answers[200], answers[202]], [LIMIT, FANS - LIMIT], JSON.stringify(answers));
  let item;
  for (;;) {
    item = await firstItem("star");
    if (item?.originsCount === FANS) break;
    assert.ok((item?.originsCount ?? 0) <= FANS, `counted ${item?.originsCount} of ${FANS}`);
    await new Promise((r) => setTimeout(r, 50)); // polls the list: the condition itself
  }
  assert.equal(item.originsCountExact, true);
  await stack.until(() => true, "idle");
  const writes = ((await stack.stats()).data.updateOne ?? 0) - before;
  // One write per like would be FANS; coalesced, the queued ones share an upsert per batch.
  assert.ok(writes < FANS / 5, `${writes} Data API writes for ${FANS} likes`);
});

test("a hot burst under ~10% faults on both backends: every like counted once", { timeout: 300_000 }, async () => {
  const FANS = 200;
  const t0 = Date.now() - 10_000;
  // Fail before applying, and apply then fail (the reply lost): retried by the clients (503),
  // by the queue (redelivery) and, past its retries, through the dead-letter replay.
  const rules = [
    { match: "*", mode: "fail_before", probability: 0.05 },
    { match: "*", mode: "fail_after", probability: 0.05 },
  ];
  await stack.faults("redis", rules, 31);
  await stack.faults("data", rules, 32);
  const retried = { 503: 0 };
  const answers = { 201: 0, 200: 0, 202: 0 };
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < FANS) {
      const body = like("storm", "post:faulty", `fan${next}`, t0 + next);
      next++;
      for (;;) {
        const r = await post(body);
        const text = await r.text();
        if (r.status === 503) { retried[503]++; continue; }
        assert.ok(r.status in answers, `${r.status} ${text}`);
        answers[r.status]++;
        break;
      }
    }
  }));
  assert.ok(answers[202] > 0, `the item was hot: ${JSON.stringify(answers)}`);
  // Wait on the list: every like counted; dead letters replayed as they appear.
  const admin = (path, init = {}) => fetch(`${w.base}${path}`, { headers: SERVICE, ...init });
  let item;
  for (;;) {
    item = await firstItem("storm").catch(() => undefined);
    if (item?.originsCount === FANS) break;
    assert.ok((item?.originsCount ?? 0) <= FANS, `counted ${item?.originsCount} of ${FANS}`);
    const dead = await admin("/v1/admin/dead-letters?limit=100").then((r) => (r.ok ? r.json() : { count: 0 }));
    if (dead.count > 0) await admin("/v1/admin/dead-letters/replay", { method: "POST", body: JSON.stringify({ limit: 100 }) });
    await new Promise((r) => setTimeout(r, 200)); // polls the list: the condition itself
  }
  const fired = [...(await stack.faultsFired("redis")), ...(await stack.faultsFired("data"))];
  assert.ok(fired.every((n) => n > 0), `every kind of fault fired on both backends: ${fired}`);
  await stack.clearFaults();
  // Nothing left to land that could move it again.
  await stack.until(() => true, "idle");
  item = await firstItem("storm");
  assert.equal(item.originsCount, FANS, JSON.stringify({ answers, retried }));
  assert.equal(item.originsCountExact, true);
});
