// How often a request fails on a keep-alive connection right after an early answer that left
// a small request body unread (a 401, a 405), against a route that reads its body. Needs the
// built worker (bash scripts/build-worker.sh). Run: source scripts/env.sh &&
// N=1000 OPENAPI_VALIDATE=0 node bench/probes/early_answer_resets.mjs
// Measured with the drain commented out of src/edge/mod.rs: 15 and 3 of 1 000; with it: 0 and 0.
import { startWorker } from "../../tests/js/harness.mjs";
const w = await startWorker({ bindings: { SERVICE_TOKEN: "t" } });
const N = Number(process.env.N ?? 1000);
async function trial(name, first) {
  let resets = 0, other = 0;
  for (let i = 0; i < N; i++) {
    try { const r = await first(); await r.arrayBuffer(); } catch (e) { resets++; continue; }
    try { const r = await fetch(w.base + "/healthz"); await r.arrayBuffer(); } catch (e) { other++; if (other < 3) console.log(name, "second failed:", e.cause?.code, e.cause?.message); }
  }
  console.log(`${name}: first failed ${resets}, next request failed ${other} of ${N}`);
}
const body = JSON.stringify({ owner: "x" });
await trial("401 events (body unread)", () => fetch(w.base + "/v1/notifications/events", { method: "POST", body, headers: { "content-type": "application/json" } }));
await trial("geo batch (body read)", () => fetch(w.base + "/v1/geo/country", { method: "POST", body: JSON.stringify({ points: [[1, 1]] }), headers: { "content-type": "application/json" } }));
await trial("405 POST /healthz (body unread)", () => fetch(w.base + "/healthz", { method: "POST", body, headers: { "content-type": "application/json" } }));
await w.stop();
