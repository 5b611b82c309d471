// Erasing a sender (POST /v1/admin/senders/{senderId}/erasure) present in N items across M
// owners, a tenth of the items past the origins cap, in workerd against the local stack (Redis
// bound, no queue: each POST is one invocation). Prints the wall time up to the sweep, the Data
// API and Redis calls and the invocations; then the steady-state cost of the senders' index on
// the create path: the bytes of one entry (BSON) and the create latency of a sender new to an
// item (reservation, index entry, upsert) against a returning one (reservation, upsert), both
// on items past the cap, interleaved on the same worker.
// The origins cap is lowered to 3 (NOTIFY_ORIGINS_CAP) so that "past the cap" costs 5 events an
// item instead of 101. Items are written first, 100 events a request.
// Run: source scripts/env.sh && node bench/probes/sender_erasure.mjs [--items 2000] [--owners 200] [--out FILE]
import { writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import os from "node:os";
import { startWorker, AUTH } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg("--items", "2000"));
const M = Number(arg("--owners", "200"));
const SAMPLES = Number(arg("--samples", "300"));
const OUT = arg("--out", null);
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };
const CAP = 3;

const stack = await startStack();
const w = await startWorker({
  bindings: { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH, NOTIFY_ORIGINS_CAP: String(CAP) },
});
const pct = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
try {
  await w.post("/v1/admin/indexes", {}, SERVICE);
  const t0 = Date.now() - 3_600_000;
  let seq = 0;
  const like = (owner, itemKey, sender, t) => ({
    owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like",
    templateType: "default", eventId: `e-${++seq}`, sender: { id: sender, name: `Name ${sender}` },
    createdTimeMsec: t,
  });
  // Item i of owner i % M: ana and one other sender; every tenth, ana then four more (past the
  // cap of 3, ana is then only in the roster).
  let pending = [];
  let past = 0;
  const flush = async () => {
    if (!pending.length) return;
    const r = await w.post("/v1/notifications/events", { events: pending }, SERVICE);
    if (r.status !== 200) throw new Error(`fill: ${r.status} ${JSON.stringify(r.body)}`);
    pending = [];
  };
  // Two rounds: ana and one other sender on every item, then four more on every tenth item, so
  // their rosters exist and the capped writes drop ana from the document (a new roster's first
  // writes keep every origin until it is complete).
  for (let i = 0; i < N; i++) {
    const owner = `o${i % M}`, item = `post:${i}`;
    pending.push(like(owner, item, "ana", t0 + i), like(owner, item, `b${i % 7}`, t0 + i + 1));
    if (pending.length >= 98) await flush();
  }
  await flush();
  await stack.until(() => true, "the first round's deferred work");
  for (let i = 0; i < N; i += 10) {
    const owner = `o${i % M}`, item = `post:${i}`;
    past++;
    for (const k of [1, 2, 3, 4]) pending.push(like(owner, item, `c${k}`, t0 + i + 1 + k));
    if (pending.length >= 96) await flush();
  }
  await flush();
  await stack.until(() => true, "the fill's deferred work");
  const entries = (await stack.dataApi("find", { collection: "notifications_senders", filter: {}, limit: 1 })).documents;
  const indexed = (await stack.dataApi("aggregate", { collection: "notifications_senders", pipeline: [{ $count: "n" }] })).documents[0].n;

  await stack.reset();
  const load = os.loadavg()[0].toFixed(1);
  const started = performance.now();
  let invocations = 0, body;
  for (;;) {
    const r = await fetch(`${w.base}/v1/admin/senders/ana/erasure`, { method: "POST", headers: SERVICE });
    body = await r.json();
    invocations++;
    if (body.state === "done" || body.step === "sweep") break;
    if (invocations > 100_000) throw new Error(`no progress: ${JSON.stringify(body)}`);
  }
  const ms = performance.now() - started;
  const s = await stack.stats();
  const sc = body.scrubbed;
  const rows = [
    `| items with the sender | owners | past the cap (${CAP}) | items scrubbed / removed | counts dropped | wall time to the sweep | invocations | Data API calls | Redis calls | load |`,
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    `| ${N} | ${M} | ${past} | ${sc.items} / ${sc.itemsRemoved} | ${sc.countsDropped} | ${(ms / 1000).toFixed(2)} s | ${invocations} (+ the sweep after 60 s: as many again) | ${s.dataTotal} | ${s.redisTotal} | ${load} |`,
  ];

  // Bytes of one index entry as MongoDB stores it (BSON, from the stored document).
  const entry = entries[0];
  const bsonBytes = Number(execFileSync(".venv/bin/python", ["-c",
    "import bson,json,sys,datetime; d=json.loads(sys.argv[1]); d['checkAt']=datetime.datetime.now(); print(len(bson.encode(d)))",
    JSON.stringify({ ...entry, checkAt: null })]).toString().trim());

  // Create latency on items past the cap: a new sender (index entry written) against a
  // returning one the cap had dropped (roster has it: no entry), interleaved.
  const item = (k) => `lat:${k}`;
  for (const k of ["new", "back"]) {
    const warm = Array.from({ length: 10 }, (_, j) => like("lat", item(k), `r${j}`, t0 + j));
    await w.post("/v1/notifications/events", { events: warm }, SERVICE);
    await stack.until(() => true, "the latency items");
    // A capped write trims the origins the new roster's first batch kept whole to the cap.
    await w.post("/v1/notifications/events", like("lat", item(k), "trim", t0 + 50), SERVICE);
  }
  await stack.until(() => true, "the latency items");
  const lat = { new: [], back: [] };
  const calls = { new: 0, back: 0 };
  let t = t0 + 100;
  for (let i = 0; i < SAMPLES; i++) {
    for (const k of ["new", "back"]) {
      // "back": r0..r9 in turn, each the oldest, so never among the 3 stored origins.
      const sender = k === "new" ? `n${i}` : `r${i % 10}`;
      const before = await stack.stats();
      const a = performance.now();
      const r = await w.post("/v1/notifications/events", like("lat", item(k), sender, ++t), SERVICE);
      lat[k].push(performance.now() - a);
      if (![200, 201].includes(r.status)) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
      const after = await stack.until(() => true, "the create's deferred work");
      calls[k] += after.dataTotal - before.dataTotal;
    }
  }
  const ms2 = (x) => `${x.toFixed(2)} ms`;
  rows.push(
    "",
    `Steady-state cost of the index: one entry is ${bsonBytes} bytes of BSON (plus its keys in the \`_id\`, \`o\` and \`checkAt\` indexes), written once per new (sender, item) pair. Create latency on items past the cap, ${SAMPLES} creates each, interleaved (load ${os.loadavg()[0].toFixed(1)}):`,
    "",
    "| create | Data API calls each | p50 | p95 |",
    "|---|---:|---:|---:|",
    `| a returning sender (no entry: as every create before the index) | ${(calls.back / SAMPLES).toFixed(2)} | ${ms2(pct(lat.back, 0.5))} | ${ms2(pct(lat.back, 0.95))} |`,
    `| a new sender (its entry, then the item) | ${(calls.new / SAMPLES).toFixed(2)} | ${ms2(pct(lat.new, 0.5))} | ${ms2(pct(lat.new, 0.95))} |`,
    "",
    `Index entries after the fill: ${indexed} (one per sender and item).`,
  );
  console.log(rows.join("\n"));
  if (OUT) writeFileSync(OUT, rows.join("\n") + "\n");
} finally {
  await w.stop();
  await stack.stop();
}
