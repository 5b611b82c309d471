// Bursts on one hot item: 1 000 likes, written directly (one request → one upsert) and through
// the queue (the consumer groups each batch by item). Prints Data API writes (updateOne, from the
// stack's counters) and the time until the owner's list shows all 1 000, for each path in the
// same run. Run: source scripts/env.sh && node bench/probes/queue.mjs [LIKES=1000]
import { startWorker, AUTH, asUser } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const LIKES = Number(process.argv[2] ?? 1000);
const CONCURRENCY = 8;
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };

const stack = await startStack();
const bindings = { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH };
const direct = await startWorker({ bindings });
const queued = await startWorker({ bindings, queue: { maxBatchTimeout: 1 } });
await direct.post("/v1/admin/indexes", {}, SERVICE);

const like = (owner, i) => ({
  owner, itemKey: "post:hot", serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `${owner}-like-${i}`, sender: { id: `fan${i}`, name: `Fan ${i}` },
  createdTimeMsec: Date.now() - 60_000 + i,
});

async function pool(jobs, n) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

async function shown(w, owner) {
  const r = await fetch(`${w.base}/v1/notifications?limit=1&counts=false`, { headers: asUser(owner) });
  const items = (await r.json()).items ?? [];
  return items[0]?.originsCount ?? 0;
}

async function run(label, w, owner, bodies) {
  await stack.until(() => true, "idle", 60_000);
  const before = (await stack.stats()).data.updateOne ?? 0;
  const t0 = performance.now();
  await pool(bodies.map((b) => async () => {
    const r = await fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(b) });
    if (!r.ok) throw new Error(`${label}: ${r.status} ${await r.text()}`);
  }), CONCURRENCY);
  const accepted = performance.now() - t0;
  // Poll the list (reads, not writes) until it shows every like.
  while ((await shown(w, owner)) < LIKES) await new Promise((r) => setTimeout(r, 20));
  const visible = performance.now() - t0;
  await stack.until(() => true, "idle", 60_000);
  const writes = ((await stack.stats()).data.updateOne ?? 0) - before;
  return { label, writes, accepted, visible };
}

const rows = [];
rows.push(await run("direct, 1 event per request", direct, "bench-direct", Array.from({ length: LIKES }, (_, i) => like("bench-direct", i))));
rows.push(await run("queued, 1 event per request", queued, "bench-queued", Array.from({ length: LIKES }, (_, i) => like("bench-queued", i))));
const batched = Array.from({ length: LIKES }, (_, i) => like("bench-batched", i));
rows.push(await run("queued, 100 events per request", queued, "bench-batched",
  Array.from({ length: Math.ceil(LIKES / 100) }, (_, b) => ({ events: batched.slice(b * 100, b * 100 + 100) }))));

const anchor = rows[0].writes;
console.log(`${LIKES} likes on one item (Miniflare + local stack, ${CONCURRENCY} concurrent requests):`);
console.log("| path | Data API writes | fewer than direct | all accepted | list shows all |");
console.log("|---|---:|---:|---:|---:|");
for (const r of rows) {
  console.log(`| ${r.label} | ${r.writes} | ${(anchor / Math.max(1, r.writes)).toFixed(1)}× | ${(r.accepted / 1000).toFixed(2)} s | ${(r.visible / 1000).toFixed(2)} s |`);
}
await direct.stop();
await queued.stop();
await stack.stop();
