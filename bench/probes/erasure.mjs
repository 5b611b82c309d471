// Erasing an owner with N items (default 10 000), in workerd against the local stack (Redis
// bound, no queue: each DELETE is one invocation, so they are counted as the operator's calls).
// Prints the wall time of the erasure up to its final sweep, the Data API and Redis calls it made
// and the invocations it took; the sweep, which waits a minute after the fence, is one more
// invocation, shown apart (and not waited for). Items are written first, 100 events a request.
// Run: source scripts/env.sh && node bench/probes/erasure.mjs [--items 10000] [--out FILE]
import { writeFileSync } from "node:fs";
import os from "node:os";
import { startWorker, AUTH } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const N = Number(arg("--items", "10000"));
const OUT = arg("--out", null);
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };

const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH } });
try {
  await w.post("/v1/admin/indexes", {}, SERVICE);
  const owner = "bench-erase";
  const t0 = Date.now() - 3_600_000;
  for (let b = 0; b < N; b += 100) {
    const events = Array.from({ length: Math.min(100, N - b) }, (_, k) => ({
      owner, itemKey: `item:${b + k}`, serviceType: "feed", categoryType: "social", notificationType: "like",
      templateType: "default", eventId: `e-${b + k}`, sender: { id: `s${(b + k) % 97}`, name: "S" },
      createdTimeMsec: t0 + b + k,
    }));
    const r = await w.post("/v1/notifications/events", { events }, SERVICE);
    if (r.status !== 200) throw new Error(`fill: ${r.status} ${JSON.stringify(r.body)}`);
  }
  await stack.until(() => true, "the fill's deferred work");
  await stack.reset();
  const load = os.loadavg()[0].toFixed(1);
  const started = performance.now();
  let invocations = 0, body;
  for (;;) {
    const r = await fetch(`${w.base}/v1/admin/owners/${owner}`, { method: "DELETE", headers: SERVICE });
    body = await r.json();
    invocations++;
    if (body.state === "done" || body.step === "sweep") break;
    if (invocations > 1000) throw new Error(`no progress: ${JSON.stringify(body)}`);
  }
  const ms = performance.now() - started;
  const s = await stack.stats();
  const rows = [
    "| items | erased | wall time to the sweep | invocations | Data API calls | Redis calls | load |",
    "|---:|---:|---:|---:|---:|---:|---:|",
    `| ${N} | ${body.removed.items + body.removed.tombstones} | ${(ms / 1000).toFixed(2)} s | ${invocations} (+1 sweep after 60 s) | ${s.dataTotal} | ${s.redisTotal} | ${load} |`,
  ].join("\n");
  console.log(rows);
  if (OUT) writeFileSync(OUT, rows + "\n");
} finally {
  await w.stop();
  await stack.stop();
}
