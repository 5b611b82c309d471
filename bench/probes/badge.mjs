// Live-badge push latency in workerd (Miniflare) against the local stack: from an accepted create
// (its 201 received by the producer) to the badge message on a connected socket, p50/p99.
// Usage: node bench/probes/badge.mjs [n=200]   (after scripts/setup.sh)
import { startWorker, AUTH } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";
import { BadgeSocket } from "../../tests/js/badge.mjs";

const N = Number(process.argv[2] ?? 200);
const SERVICE = { authorization: "Bearer b", "content-type": "application/json" };
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))]; };

const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "b", ...AUTH } });
try {
  await w.post("/v1/admin/indexes", {}, SERVICE);
  const sockets = await Promise.all([0, 1].map(() => BadgeSocket.open(w.base, "lat").opened));
  await Promise.all(sockets.map((s) => s.next(() => true)));
  const fromAccepted = [], fromSent = [];
  for (let i = 1; i <= N; i++) {
    const t0 = performance.now();
    const r = await w.post("/v1/notifications/events", {
      owner: "lat", itemKey: `i${i}`, serviceType: "feed", categoryType: "social", notificationType: "like",
      templateType: "default", eventId: `e${i}`, sender: { id: `s${i}`, name: "S" }, createdTimeMsec: Date.now(),
    }, SERVICE);
    const accepted = performance.now();
    if (r.status !== 201) throw new Error(`create ${r.status}`);
    // Spaced past the coalescing window, so each create is pushed on its own (leading edge).
    const m = await sockets[0].next((x) => x.unread === i, `unread ${i}`);
    await sockets[1].next((x) => x.unread === i, `unread ${i} on the second device`);
    fromAccepted.push(Math.max(0, m.at - accepted));
    fromSent.push(m.at - t0);
    await new Promise((res) => setTimeout(res, 260)); // benchmark pacing, not a test wait
  }
  const f = (xs) => `${pct(xs, 0.5).toFixed(1)} ms / ${pct(xs, 0.99).toFixed(1)} ms`;
  console.log(`| live badge, ${N} creates, 2 sockets | p50 / p99 |`);
  console.log("|---|---|");
  console.log(`| accepted create (201 received) → badge on the socket | ${f(fromAccepted)} |`);
  console.log(`| create sent → badge on the socket | ${f(fromSent)} |`);
  console.log("| memory per idle connection | not exposed by workerd/Miniflare; hibernated sockets are held by the runtime, not the isolate |");
  await Promise.all(sockets.map((s) => s.close()));
} finally {
  await w.stop();
  await stack.stop();
}
