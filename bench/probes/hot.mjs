// Burst-only queueing, measured in one run against the compiled worker in workerd (Miniflare) and
// the local stack, with the queue bound as wrangler.toml binds it (batches of up to 100 messages,
// a 2 s batch timeout) for three configurations:
//   default       single creates written at once unless their item is hot (NOTIFY_HOT_EVENTS=4)
//   all queued    every single create queued (NOTIFY_HOT_EVENTS=0, the default before)
//   no queue      the producer binding removed: everything written at once
// 1. Ordinary traffic: create → badge latency, from the create's answer to the badge message on
//    the owner's socket (one create at a time, each on its own item, spaced past the push debounce).
// 2. A burst: 1 000 likes on one item, 8 requests at a time: Data API writes (the stack's
//    updateOne counter), how many answers were 202, and the time until the list shows all of them.
// Run: source scripts/env.sh && node bench/probes/hot.mjs [--n 100] [--likes 1000] [--out FILE]
import { writeFileSync } from "node:fs";
import os from "node:os";
import { startWorker, AUTH, asUser } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";
import { BadgeSocket } from "../../tests/js/badge.mjs";

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const N = Number(arg("--n", 100));
const N_QUEUED = Math.min(N, 30); // each takes the batch timeout: fewer samples, same p50
const LIKES = Number(arg("--likes", 1000));
const OUT = arg("--out", null);
const CONCURRENCY = 8;
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };
const QUEUE = { maxBatchTimeout: 2 }; // wrangler.toml's max_batch_timeout; batch sizes as there
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };

const stack = await startStack();
const bindings = { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH };
const configs = [
  { label: "default (hot items queued)", w: await startWorker({ bindings, queue: QUEUE }), n: N },
  { label: "all single creates queued (before)", w: await startWorker({ bindings: { ...bindings, NOTIFY_HOT_EVENTS: "0" }, queue: QUEUE }), n: N_QUEUED },
  { label: "no queue bound", w: await startWorker({ bindings }), n: N },
];
await configs[0].w.post("/v1/admin/indexes", {}, SERVICE);
const load = os.loadavg()[0].toFixed(1);

let seq = 0;
const event = (owner, itemKey, sender = `s${++seq}`) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `hot-${++seq}`, sender: { id: sender, name: "S" }, createdTimeMsec: Date.now() - 1_000,
});
const post = (w, body) => fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(body) });

async function latency({ w, n }, owner) {
  const socket = await BadgeSocket.open(w.base, owner).opened;
  await socket.next(() => true, "the connect badge");
  const ms = [], statuses = new Set();
  for (let i = 1; i <= n; i++) {
    const r = await post(w, event(owner, `item-${i}`));
    const answered = performance.now();
    if (!r.ok) throw new Error(`create ${r.status} ${await r.text()}`);
    statuses.add(r.status);
    const m = await socket.next((x) => x.unread === i, `unread ${i}`);
    ms.push(Math.max(0, m.at - answered));
    await new Promise((res) => setTimeout(res, 260)); // benchmark pacing past the debounce, not a test wait
  }
  await socket.close();
  return { ms, statuses: [...statuses].sort().join("/") };
}

async function pool(jobs, n) {
  let i = 0;
  await Promise.all(Array.from({ length: n }, async () => { while (i < jobs.length) await jobs[i++](); }));
}
async function burst({ w }, owner) {
  await stack.until(() => true, "idle", 60_000);
  const before = (await stack.stats()).data.updateOne ?? 0;
  const t0 = performance.now();
  let queued = 0;
  await pool(Array.from({ length: LIKES }, (_, i) => async () => {
    const r = await post(w, event(owner, "post:hot", `fan${i}`));
    if (!r.ok) throw new Error(`like ${r.status} ${await r.text()}`);
    if (r.status === 202) queued++;
    await r.arrayBuffer();
  }), CONCURRENCY);
  const accepted = performance.now() - t0;
  const shown = async () => {
    const r = await fetch(`${w.base}/v1/notifications?limit=1&counts=false`, { headers: asUser(owner) });
    return (await r.json()).items?.[0]?.originsCount ?? 0;
  };
  while ((await shown()) < LIKES) await new Promise((r) => setTimeout(r, 20)); // polls the list itself
  const visible = performance.now() - t0;
  const count = await shown();
  await stack.until(() => true, "idle", 60_000);
  const writes = ((await stack.stats()).data.updateOne ?? 0) - before;
  return { writes, queued, accepted, visible, count };
}

const lat = [], bursts = [];
for (const [i, c] of configs.entries()) lat.push({ ...c, ...(await latency(c, `lat-${i}`)) });
for (const [i, c] of configs.entries()) bursts.push({ ...c, ...(await burst(c, `burst-${i}`)) });
for (const c of configs) await c.w.stop();
await stack.stop();

const out = [];
const f = (x) => `${x.toFixed(0)} ms`;
out.push(`Ordinary traffic: one create at a time, each on its own item, the owner's socket open; from the create's answer to the badge on the socket. Queue bound as in wrangler.toml (batch timeout 2 s). Miniflare on this machine, load average at the start ${load}, ${os.cpus().length} cpus.`);
out.push("");
out.push("| configuration | creates | answered | p50 | p95 | p99 |");
out.push("|---|---:|---|---:|---:|---:|");
for (const r of lat) out.push(`| ${r.label} | ${r.n} | ${r.statuses} | ${f(pct(r.ms, 0.5))} | ${f(pct(r.ms, 0.95))} | ${f(pct(r.ms, 0.99))} |`);
out.push("");
const anchor = bursts.find((b) => b.label.startsWith("no queue")).writes;
out.push(`A burst: ${LIKES} likes on one item, ${CONCURRENCY} requests at a time, same run and configurations:`);
out.push("");
out.push("| configuration | Data API writes | fewer than one per like | answered 202 | all answered | list shows all | count shown |");
out.push("|---|---:|---:|---:|---:|---:|---:|");
for (const b of bursts) out.push(`| ${b.label} | ${b.writes} | ${(anchor / Math.max(1, b.writes)).toFixed(1)}× | ${b.queued} | ${(b.accepted / 1000).toFixed(2)} s | ${(b.visible / 1000).toFixed(2)} s | ${b.count} |`);
const text = out.join("\n") + "\n";
if (OUT) writeFileSync(OUT, text);
process.stdout.write(text);
