// Where the wasm spends its time in `/__bench/ip`: a V8 CPU profile of the worker in workerd
// (Miniflare's inspector), self time per function, top 15. Runs the bench build (built on start).
// Usage: node bench/probes/ip_wasm_profile.mjs
import { startWorker } from "../../tests/js/harness.mjs";
import { benchWorker } from "./bench_build.mjs";
const w = await startWorker(benchWorker({ options: { inspectorPort: 9239 } }));
try {
  const list = await (await fetch("http://127.0.0.1:9239/json")).json();
  const target = list.find((t) => t.webSocketDebuggerUrl) ;
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((r) => ws.addEventListener("open", r));
  let id = 0; const pending = new Map();
  ws.addEventListener("message", (e) => { const m = JSON.parse(e.data); if (m.id && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); } });
  const send = (method, params = {}) => new Promise((r) => { const i = ++id; pending.set(i, r); ws.send(JSON.stringify({ id: i, method, params })); });
  await w.get("/__bench/ip?n=1000000&reps=3&all=1");
  await send("Profiler.enable");
  await send("Profiler.setSamplingInterval", { interval: 100 });
  await send("Profiler.start");
  for (let k = 0; k < 3; k++) await w.get("/__bench/ip?n=1000000&reps=3");
  const { result } = await send("Profiler.stop");
  const self = new Map(); let total = 0;
  for (const n of result.profile.nodes) {
    const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.slice(-40)}`;
    self.set(k, (self.get(k) ?? 0) + (n.hitCount ?? 0)); total += n.hitCount ?? 0;
  }
  [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 15).forEach(([k, v]) => console.log(`${(100 * v / total).toFixed(1)}%  ${k}`));
  ws.close();
} finally { await w.stop(); }
