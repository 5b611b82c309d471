// The create fault test again, on the queue path: 10 000 events enqueued as batches and
// fan-outs (202) while both backends inject ~10% faults and retractions run against the items at
// the same time. The consumer retries with backoff; what fails every attempt lands in the
// dead-letter queue, is kept by its consumer and replayed through the admin route. Afterwards
// every event is applied exactly once: no lost sender, no duplicate origin, every count right,
// and no retracted sender back.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker, AUTH } from "./harness.mjs";
import { startStack, countOf } from "./stack.mjs";

const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };
const OWNERS = 50, ITEMS = 10, PER_ITEM = 16, FAN_OUTS = 4, FAN_OWNERS = 500, CONCURRENCY = 8;
const CAP = 100, RETURNING = 200;
let stack, w;

before(async () => {
  stack = await startStack();
  w = await startWorker({
    bindings: {
      ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH, BACKEND_TIMEOUT_MS: "1000",
      NOTIFY_QUEUE_RETRY_SECONDS: "1", NOTIFY_QUEUE_RETRY_MAX_SECONDS: "2",
    },
    // Few attempts on purpose, so some messages do reach the dead-letter queue.
    queue: { maxRetries: 2, maxBatchTimeout: 1, dlqMaxRetries: 20 },
  });
  assert.equal((await w.post("/v1/admin/indexes", {}, SERVICE)).status, 200);
});
after(async () => { await w?.stop(); await stack?.stop(); });

const faultRules = (delayMs, scale = 1) => [
  { match: "*", mode: "fail_before", probability: 0.04 * scale },
  { match: "*", mode: "fail_after", probability: 0.04 * scale },
  { match: "*", mode: "delay", delay_ms: delayMs, probability: 0.02 * scale },
];

async function untilOk(method, path, body, stats) {
  for (let attempt = 1; attempt <= 100; attempt++) {
    let r;
    try {
      r = await fetch(w.base + path, { method, headers: SERVICE, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      stats.transport++;
      continue;
    }
    const json = await r.json();
    if (r.ok) return { status: r.status, body: json };
    assert.ok(r.status === 503 || r.status === 409, `only retryable errors expected, got ${r.status} ${JSON.stringify(json)}`);
    stats.retries++;
  }
  assert.fail(`gave up on ${path}`);
}

async function pool(jobs, n) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

const event = (owner, itemKey, sender, eventId, t) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "comment",
  templateType: "default", eventId, sender: { id: sender, name: sender.toUpperCase() }, createdTimeMsec: t,
});

test("10 000 queued events under ~10% faults on both backends: exactly once", { timeout: 900_000 }, async () => {
  await stack.faults("data", faultRules(1500), 17);
  // Batching leaves ~2 Redis calls per 100 events (~200 in all), so Redis faults are 3× as
  // likely here, or too few would fire to mean anything.
  await stack.faults("redis", faultRules(1500, 3), 19);
  const stats = { retries: 0, transport: 0, replayed: 0 };
  const expected = new Map(); // `${owner}|${item}` -> Set(sender)
  const add = (o, k, s) => { const key = `${o}|${k}`; if (!expected.has(key)) expected.set(key, new Set()); expected.get(key).add(s); };
  const t0 = Date.now() - 60_000;
  const started = Date.now();

  // 8 000 events in bodies of 100; 16 consecutive events share an item (a burst on it), but
  // every 5th goes to one of 4 hot items (400 senders each, past the 100 origins kept). 200 of
  // the hot items' senders come back in the last bodies with new event ids (same senders).
  const events = [];
  for (let i = 0; i < OWNERS * ITEMS * PER_ITEM - RETURNING; i++) {
    const g = Math.floor(i / PER_ITEM);
    const [owner, item] = i % 5 === 0 ? ["hot", `h${(i / 5) % 4}`] : [`o${g % OWNERS}`, `k${Math.floor(g / OWNERS)}`];
    events.push(event(owner, item, `s${i}`, `e${i}`, t0 + i));
    add(owner, item, `s${i}`);
  }
  for (let k = 0; k < RETURNING; k++) {
    const e = events[5 * k + 5];
    events.push({ ...e, eventId: `again${k}` });
  }
  const jobs = [];
  for (let b = 0; b < events.length; b += 100) {
    const chunk = events.slice(b, b + 100);
    jobs.push(async () => {
      const r = await untilOk("POST", "/v1/notifications/events", { events: chunk }, stats);
      assert.deepEqual([r.status, r.body], [202, { status: "queued", accepted: chunk.length }]);
    });
  }
  // 2 000 more as fan-outs: one template for 500 owners each.
  const fanOwners = Array.from({ length: FAN_OWNERS }, (_, i) => `f${i}`);
  for (let j = 0; j < FAN_OUTS; j++) {
    const template = event(undefined, `news:${j}`, `pub${j}`, `n${j}`, t0 + j);
    delete template.owner;
    for (const o of fanOwners) add(o, `news:${j}`, `pub${j}`);
    jobs.push(async () => {
      const r = await untilOk("POST", "/v1/notifications/events", { template, owners: fanOwners }, stats);
      assert.deepEqual([r.status, r.body], [202, { status: "queued", accepted: FAN_OWNERS }]);
    });
  }
  await pool(jobs, CONCURRENCY);
  const enqueuedMs = Date.now() - started;

  // Retract every 8th sender while the consumer is still writing: a retraction that lands
  // before its create leaves the sender on the item's retracted list, and the create is refused.
  const retractions = [];
  const retracted = new Map(); // `${owner}|${item}` -> ["sender:eventId:status"], for the evidence
  for (let i = 0; i < events.length; i += 8) {
    const e = events[i];
    retractions.push(async () => {
      const r = await untilOk("POST", "/v1/notifications/retractions", { owner: e.owner, itemKey: e.itemKey, senderId: e.sender.id }, stats);
      assert.ok(["updated", "deleted", "not_found"].includes(r.body.status), r.body.status);
      const key = `${e.owner}|${e.itemKey}`;
      expected.get(key).delete(e.sender.id);
      if (!retracted.has(key)) retracted.set(key, []);
      retracted.get(key).push(`${e.sender.id}:${e.eventId}:${r.body.status}`);
    });
  }
  await pool(retractions, CONCURRENCY);
  const total = [...expected.values()].reduce((n, s) => n + s.size, 0);
  const isHot = (k) => k.startsWith("hot|");
  const want = { origins: 0, hot: 0 };
  for (const [k, senders] of expected) want[isHot(k) ? "hot" : "origins"] += senders.size;

  // The test's own reads go through the faulty Data API too: read until one succeeds.
  const find = async (body) => {
    for (let i = 0; i < 100; i++) {
      const r = await stack.dataApi("find", { limit: 100000, ...body }).catch(() => ({}));
      if (Array.isArray(r.documents)) return r.documents;
    }
    assert.fail("the Data API never answered a read");
  };
  const live = () => find({ collection: "notifications", filter: { deleted: { $ne: true } } });
  // One small aggregate per poll (reading every document would load the stack it waits on):
  // the origins stored on ordinary items (all of their senders) and the counts of hot ones
  // (past the cap the count is the measure: only the newest 100 origins are stored).
  const counted = async () => {
    for (let i = 0; i < 100; i++) {
      const r = await stack.dataApi("aggregate", { collection: "notifications", pipeline: [
        { $match: { deleted: { $ne: true } } },
        { $group: { _id: { $eq: ["$owner", "hot"] }, o: { $sum: { $size: "$origins" } },
          n: { $sum: { $ifNull: [{ $mod: ["$oc", 2 ** 24] }, "$originsCount"] } } } },
      ] }).catch(() => ({}));
      if (Array.isArray(r.documents)) {
        const of = (hot) => r.documents.find((d) => d._id === hot) ?? { o: 0, n: 0 };
        return { origins: of(false).o, hot: of(true).n };
      }
    }
    assert.fail("the Data API never answered a read");
  };
  const dead = async () => (await find({ collection: "notifications_dead", filter: {} })).length;
  // Wait on the database: every expected origin counted and no dead letter left. Dead letters
  // are replayed through the admin route as they appear.
  const deadline = Date.now() + 600_000;
  let sum = { origins: 0, hot: 0 }, left = 0, prev = "";
  for (;;) {
    const s = await stack.stats();
    sum = await counted();
    left = await dead();
    if (left > 0) {
      const list = await untilOk("GET", "/v1/admin/dead-letters?limit=100", undefined, stats);
      assert.ok(list.body.count > 0 && list.body.items.every((l) => l.event.eventId), JSON.stringify(list.body).slice(0, 300));
      const r = await untilOk("POST", "/v1/admin/dead-letters/replay", { limit: 100 }, stats);
      stats.replayed += r.body.replayed;
      continue;
    }
    // Twice the same, with nothing in flight: a hot item's count can pass through the final
    // value while its last writes and retractions are still landing.
    const now = JSON.stringify(sum);
    if (sum.origins >= want.origins && sum.hot >= want.hot && s.inFlight === 0 && now === prev) break;
    prev = now;
    if (Date.now() > deadline) assert.fail(`queue did not drain: ${JSON.stringify(sum)} of ${JSON.stringify(want)}, ${left} dead letters`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const drainedMs = Date.now() - started;
  const fired = { data: await stack.faultsFired("data"), redis: await stack.faultsFired("redis") };
  await stack.clearFaults();

  const docs = await live();
  let lost = 0, duplicates = 0, countMismatch = 0, stray = 0;
  const byKey = new Map(docs.map((d) => [`${d.owner}|${d.itemKey}`, d]));
  // What differs, item by item, for the failure message (a rare race needs its evidence).
  const evidence = [];
  const note = (what, key, d, extra) => evidence.length < 5 &&
    evidence.push({ what, key, ...extra, doc: d && { origins: d.origins.map((o) => o.s).slice(0, 12), count: countOf(d), x: (d.x ?? []).slice(0, 20), t: d.t, u: d.u } });
  for (const [key, senders] of expected) {
    const d = byKey.get(key);
    if (senders.size === 0) { if (d) { stray++; note("item left with no sender", key, d, {}); } continue; }
    if (!d) { lost += senders.size; note("item missing", key, d, { senders: senders.size }); continue; }
    const got = d.origins.map((o) => o.s);
    duplicates += got.length - new Set(got).size;
    // Past the cap only the newest 100 origins are stored (fewer once retractions pull some).
    const missing = senders.size <= CAP ? [...senders].filter((s) => !got.includes(s)) : got.length === 0 ? [...senders] : [];
    lost += missing.length;
    const strays = got.filter((s) => !senders.has(s));
    stray += strays.length;
    if (missing.length || strays.length) note("senders differ", key, d, { missing: missing.slice(0, 5), strays: d.origins.filter((o) => strays.includes(o.s)), retracted: retracted.get(key) });
    if (countOf(d) !== senders.size) { countMismatch++; note("count differs", key, d, { want: senders.size }); }
  }
  console.log(`queue path: ${events.length + FAN_OUTS * FAN_OWNERS} events enqueued in ${enqueuedMs} ms, drained in ${drainedMs} ms; ` +
    `faults fired (fail_before, fail_after, delay): ${JSON.stringify(fired)}; client retries ${stats.retries}, ` +
    `dead letters replayed ${stats.replayed}; ${docs.length} items, ${total} origins`);
  for (const which of ["data", "redis"]) {
    assert.equal(fired[which].length, 3);
    const min = which === "data" ? 20 : 5;
    for (const n of fired[which]) assert.ok(n >= min, `${which} faults fired: ${fired[which]}`);
  }
  assert.deepEqual({ lost, duplicates, countMismatch, stray }, { lost: 0, duplicates: 0, countMismatch: 0, stray: 0 }, JSON.stringify(evidence));
  const hot = [...expected.values()].filter((s) => s.size > CAP).length;
  assert.equal(hot, 4, "the hot items are past the cap");
  assert.equal(byKey.size, expected.size - [...expected.values()].filter((s) => s.size === 0).length);
});
