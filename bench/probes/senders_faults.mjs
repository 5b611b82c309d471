// Exact sender counts at scale under faults, on the queue path: one item, N distinct senders
// (default 100 000) plus 10 % returning with a new event id after the cap dropped them, and 5 %
// retracted while the consumer is still writing, sent in bodies of 100 to a worker with the
// queue bound while both backends inject ~10 % faults (fail before applying, apply then fail,
// delay past the worker's timeout). Clients retry 503s; dead letters are replayed. Prints the
// count the API shows against the truth once it stops moving.
// Run: source scripts/env.sh && node bench/probes/senders_faults.mjs [--senders 100000] [--out FILE]
import { writeFileSync } from "node:fs";
import os from "node:os";
import { startWorker, AUTH, asUser } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg("--senders", "100000"));
const OUT = arg("--out", null);
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };
const load = os.loadavg()[0].toFixed(1);

const stack = await startStack();
const w = await startWorker({
  bindings: {
    ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH, BACKEND_TIMEOUT_MS: "1000",
    NOTIFY_QUEUE_RETRY_SECONDS: "1", NOTIFY_QUEUE_RETRY_MAX_SECONDS: "2",
  },
  queue: { maxRetries: 2, maxBatchTimeout: 1, dlqMaxRetries: 20 },
});
await w.post("/v1/admin/indexes", {}, SERVICE);

const stats = { retries: 0, replayed: 0 };
async function untilOk(method, path, body) {
  for (let attempt = 1; attempt <= 200; attempt++) {
    const r = await fetch(w.base + path, { method, headers: SERVICE, body: body === undefined ? undefined : JSON.stringify(body) }).catch(() => null);
    if (r?.ok) return r.json();
    if (r && r.status !== 503 && r.status !== 409) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    await r?.arrayBuffer();
    stats.retries++;
  }
  throw new Error(`gave up on ${path}`);
}
async function pool(jobs, n) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

const owner = "hot", itemKey = "post:1", t0 = Date.now() - 3_600_000;
const ev = (i, id) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default",
  eventId: id, sender: { id: `fan${i}`, name: `Fan ${i}` }, createdTimeMsec: t0 + i,
});
const events = [];
for (let i = 0; i < N; i++) {
  events.push(ev(i, `a${i}`));
  if (i >= 200 && i - 200 < N / 10) events.push(ev(i - 200, `b${i - 200}`));
}
const retracted = new Set();
for (let i = 7; i < N; i += 20) retracted.add(i);
const truth = N - retracted.size;

const faults = (delay) => [
  { match: "*", mode: "fail_before", probability: 0.04 },
  { match: "*", mode: "fail_after", probability: 0.04 },
  { match: "*", mode: "delay", delay_ms: delay, probability: 0.02 },
];
await stack.faults("data", faults(1500), 23);
await stack.faults("redis", faults(1500), 29);
const started = performance.now();
const jobs = [];
let sent = 0; // first sends a0..a{sent-1} are in the bodies queued so far
for (let b = 0; b < events.length; b += 100) {
  const body = events.slice(b, b + 100);
  jobs.push(() => untilOk("POST", "/v1/notifications/events", { events: body }));
  const before = sent;
  for (const e of body) if (e.eventId.startsWith("a")) sent = Math.max(sent, Number(e.eventId.slice(1)) + 1);
  // Retractions of senders just sent, interleaved with the bodies still to go.
  for (let i = before; i < sent; i++) {
    if (retracted.has(i)) jobs.push(() => untilOk("POST", "/v1/notifications/retractions", { owner, itemKey, senderId: `fan${i}` }));
  }
}
await pool(jobs, 8);

// Wait until the count stops moving with nothing in flight, replaying dead letters as they come.
const shown = async () => {
  const r = await fetch(`${w.base}/v1/notifications?limit=1&counts=false`, { headers: asUser(owner) }).catch(() => null);
  const body = r?.ok ? await r.json() : null;
  return body?.items?.[0];
};
let last = null, stableSince = 0;
for (;;) {
  const dead = await untilOk("GET", "/v1/admin/dead-letters?limit=100");
  if (dead.count > 0) {
    stats.replayed += (await untilOk("POST", "/v1/admin/dead-letters/replay", { limit: 100 })).replayed;
    continue;
  }
  const it = await shown();
  const s = await stack.stats();
  const key = JSON.stringify([it?.originsCount, s.inFlight]);
  if (key !== last) { last = key; stableSince = performance.now(); }
  if (s.inFlight === 0 && it && performance.now() - stableSince > 5000) break;
  await new Promise((r) => setTimeout(r, 500));
}
const fired = { data: await stack.faultsFired("data"), redis: await stack.faultsFired("redis") };
await stack.clearFaults();
const it = await shown();
const seconds = ((performance.now() - started) / 1000).toFixed(0);
await w.stop();
await stack.stop();

const md = `Under faults, queue bound: ${N.toLocaleString("en")} distinct senders on one item (${events.length.toLocaleString("en")} events in bodies of 100, ${retracted.size.toLocaleString("en")} senders retracted while the consumer was writing), ~10 % faults on both backends (fired, fail before / after / delay: Data API ${fired.data.join(" / ")}, Redis ${fired.redis.join(" / ")}), ${stats.retries} client retries, ${stats.replayed} dead letters replayed, ${seconds} s: \`originsCount\` ${it.originsCount.toLocaleString("en")} for ${truth.toLocaleString("en")} senders on the item (${it.originsCount === truth && it.originsCountExact ? "exact" : "**not exact**"}). \`node bench/probes/senders_faults.mjs\`, load average at the start: ${load}.`;
if (OUT) writeFileSync(OUT, md + "\n");
console.log(md);
