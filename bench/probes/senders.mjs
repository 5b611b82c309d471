// Exact sender counts at scale: one item per size (10, 1 000, 100 000 distinct senders), each
// sender once plus 10 % returning with a new event id after the cap dropped their origin, sent to
// the worker (Miniflare, Redis bound, no queue). Prints per size: the count the API shows against
// the truth, single-create latency (p50/p95 of the last 1 000 creates), the roster's Redis bytes
// per sender (MEMORY USAGE) and the document's BSON bytes.
// Run: source scripts/env.sh && node bench/probes/senders.mjs [--sizes 10,1000,100000] [--out FILE]
import { writeFileSync } from "node:fs";
import os from "node:os";
import { startWorker, AUTH, asUser } from "../../tests/js/harness.mjs";
import { startStack, notificationId } from "../../tests/js/stack.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const SIZES = arg("--sizes", "10,1000,100000").split(",").map(Number);
const OUT = arg("--out", null);
const CONCURRENCY = 4;
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };

const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH } });
await w.post("/v1/admin/indexes", {}, SERVICE);
// Warm the worker (isolate, script cache, indexes) so the smallest size is not a cold start.
for (let i = 0; i < 50; i++) {
  await fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify({
    owner: "warm", itemKey: `w${i % 5}`, serviceType: "feed", categoryType: "social", notificationType: "like",
    templateType: "default", eventId: `warm-${i}`, sender: { id: `w${i}`, name: "W" }, createdTimeMsec: Date.now(),
  }) }).then((r) => r.arrayBuffer());
}
const load = os.loadavg()[0].toFixed(1);

async function pool(jobs, n) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}

// BSON size of a relaxed-EJSON document as the Data API returns it (the encoding rules of
// bsonspec.org: int32 when it fits, else a double or int64, 8 bytes either way).
function bsonSize(v) {
  const doc = (entries) => 4 + entries.reduce((n, [k, x]) => n + 1 + Buffer.byteLength(k) + 1 + value(x), 0) + 1;
  const value = (x) => {
    if (x === null || x === undefined) return 0;
    if (typeof x === "boolean") return 1;
    if (typeof x === "number") return Number.isInteger(x) && Math.abs(x) < 2 ** 31 ? 4 : 8;
    if (typeof x === "string") return 4 + Buffer.byteLength(x) + 1;
    if (Array.isArray(x)) return doc(x.map((e, i) => [String(i), e]));
    if (x.$date !== undefined || x.$numberLong !== undefined || x.$numberDouble !== undefined) return 8;
    if (x.$numberInt !== undefined) return 4;
    return doc(Object.entries(x));
  };
  return value(v);
}

const rows = [];
for (const n of SIZES) {
  const owner = `bench-${n}`, itemKey = "post:1";
  const t0 = Date.now() - 3_600_000;
  const ev = (i, id) => ({
    owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default",
    eventId: `${owner}:${id}`, sender: { id: `fan${i}`, name: `Fan ${i}` }, createdTimeMsec: t0 + i,
  });
  const returning = Math.floor(n / 10);
  const bodies = [];
  for (let i = 0; i < n; i++) {
    bodies.push(ev(i, `a${i}`));
    // The oldest senders come back once 200 newer ones have pushed them out of the cap.
    if (i >= 200 && i - 200 < returning) bodies.push(ev(i - 200, `b${i - 200}`));
  }
  // Sizes under 200: the returning senders come at the end (their origin is still stored).
  for (let j = Math.max(0, n - 200); j < returning; j++) bodies.push(ev(j, `b${j}`));
  // All but the last 1 000 go in bodies of 100 (the batch path: one upsert per body), the last
  // 1 000 one per request, timed: the single create's latency with the item at its largest.
  const lat = [];
  const bulk = Math.max(0, bodies.length - 1000);
  const post = async (body) => {
    const r = await fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
    await r.arrayBuffer();
  };
  const started = performance.now();
  const batches = [];
  for (let b = 0; b < bulk; b += 100) batches.push(() => post({ events: bodies.slice(b, Math.min(b + 100, bulk)) }));
  await pool(batches, 4);
  await pool(bodies.slice(bulk).map((b) => async () => {
    const t = performance.now();
    await post(b);
    lat.push(performance.now() - t);
  }), CONCURRENCY);
  const seconds = (performance.now() - started) / 1000;
  const r = await fetch(`${w.base}/v1/notifications?limit=5&counts=false`, { headers: asUser(owner) });
  const item = (await r.json()).items.find((x) => x.itemKey === itemKey);
  const docs = (await stack.dataApi("find", { collection: "notifications", filter: { owner, itemKey }, limit: 1 })).documents;
  const rosterBytes = await stack.redis(["MEMORY", "USAGE", `rs:${notificationId(owner, itemKey)}`, "SAMPLES", "0"]);
  const encoding = await stack.redis(["OBJECT", "ENCODING", `rs:${notificationId(owner, itemKey)}`]);
  lat.sort((a, b) => a - b);
  const q = (p) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))].toFixed(1);
  rows.push({
    n, sent: bodies.length, shown: item.originsCount, exact: item.originsCountExact, stored: item.origins.length,
    p50: q(0.5), p95: q(0.95), seconds: seconds.toFixed(0),
    redisPerSender: (rosterBytes / n).toFixed(1), encoding, docBytes: bsonSize(docs[0]),
  });
  console.error(JSON.stringify(rows.at(-1)));
}
// What every item pays: 1 000 items with one sender each, the mean roster bytes per item.
const small = Array.from({ length: 1000 }, (_, i) => ({
  owner: `solo-${i}`, itemKey: "post:1", serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `solo-${i}`, sender: { id: `fan${i}`, name: "Fan" }, createdTimeMsec: Date.now() - 60_000,
}));
await pool(Array.from({ length: 10 }, (_, b) => async () => {
  const r = await fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify({ events: small.slice(b * 100, b * 100 + 100) }) });
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  await r.arrayBuffer();
}), 4);
let soloBytes = 0;
for (const e of small) soloBytes += await stack.redis(["MEMORY", "USAGE", `rs:${notificationId(e.owner, e.itemKey)}`, "SAMPLES", "0"]);
await w.stop();
await stack.stop();

const md = [
  `Distinct senders on one item, each once plus 10 % returning with a new event id after the cap dropped them; direct creates to the worker (Miniflare, local stack, Redis bound), ${CONCURRENCY} at a time. Load average at the start: ${load}, cpus: ${os.cpus().length}.`,
  "",
  "| distinct senders | events sent | `originsCount` shown | exact | create p50 ms | create p95 ms | run s | roster B/sender (Redis, encoding) | document BSON bytes |",
  "| ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: |",
  ...rows.map((r) => `| ${r.n.toLocaleString("en")} | ${r.sent.toLocaleString("en")} | ${r.shown.toLocaleString("en")} | ${r.shown === r.n && r.exact ? "yes" : "**no**"} | ${r.p50} | ${r.p95} | ${r.seconds} | ${r.redisPerSender} (${r.encoding}) | ${r.docBytes.toLocaleString("en")} |`),
  "",
  `An item with one sender: ${(soloBytes / small.length).toFixed(0)} B of roster in Redis (\`MEMORY USAGE\`, mean over 1 000 such items); every item written while Redis is configured has one, kept a day after its last change while it has at most the origins cap of senders (the document can rebuild it), else for the item's lifetime and its tombstone's.`,
  "",
  "All but the last 1 000 events go in bodies of 100 (the batch path); the last 1 000 are single creates, 4 at a time, and their latency is the one shown (the item at its largest; the local Data API emulator, one Python process, is most of it). The document's size stops growing at the origins cap; the roster's bytes per sender are Redis `MEMORY USAGE` over the distinct senders (a hash past `hash-max-listpack-entries` fields, 512 by default, leaves the compact listpack encoding).",
].join("\n");
if (OUT) writeFileSync(OUT, md + "\n");
console.log(md);
