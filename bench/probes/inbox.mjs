// Inbox list latency with and without the badge counts ($facet aggregate vs plain find), in the
// same run against the local stack, through the compiled worker in workerd (Miniflare).
// Usage: node bench/probes/inbox.mjs [items=100] [requests=300]   (after scripts/setup.sh)
import { startWorker, AUTH, asUser } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const ITEMS = Number(process.argv[2] ?? 100), N = Number(process.argv[3] ?? 300);
const SERVICE = { authorization: "Bearer b", "content-type": "application/json" };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };

const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "b", ...AUTH } });
try {
  await w.post("/v1/admin/indexes", {}, SERVICE);
  const t0 = Date.now();
  for (let i = 0; i < ITEMS; i++) {
    await w.post("/v1/notifications/events", {
      owner: "bench", itemKey: `i${i}`, serviceType: "feed", categoryType: "social", notificationType: "like",
      templateType: "default", eventId: `e${i}`, sender: { id: `s${i}`, name: `S${i}` }, createdTimeMsec: t0 + i,
    }, SERVICE);
  }
  const headers = asUser("bench");
  const time = async (q) => {
    const t = performance.now();
    const r = await fetch(`${w.base}/v1/notifications?limit=20${q}`, { headers });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    return performance.now() - t;
  };
  for (let i = 0; i < 20; i++) { await time(""); await time("&counts=false"); } // warm-up
  const withCounts = [], without = [];
  // Interleaved, so drift on a shared machine hits both alike.
  for (let i = 0; i < N; i++) { withCounts.push(await time("")); without.push(await time("&counts=false")); }
  const fmt = (xs) => `p50 ${pct(xs, 0.5).toFixed(2)} ms, p99 ${pct(xs, 0.99).toFixed(2)} ms`;
  console.log(`| list page (20 of ${ITEMS} items) | latency | ratio of p50 |`);
  console.log("|---|---|---|");
  console.log(`| with counts (1 aggregate, $facet) | ${fmt(withCounts)} | ${(pct(withCounts, 0.5) / pct(without, 0.5)).toFixed(2)}× |`);
  console.log(`| without counts (1 find) | ${fmt(without)} | 1.00× |`);
} finally {
  await w.stop();
  await stack.stop();
}
