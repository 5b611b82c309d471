// IP in workerd (Miniflare, loopback): the first IP answer of a fresh isolate (table fetched
// through ASSETS + opened + answer), the next one, and ns/lookup inside the isolate from the
// /__bench/ip endpoint timed against n=0 in the same isolate. Prints markdown rows.
// Usage: node scripts/bench/ip-workerd.mjs [fresh isolates, default 5]
import { startWorker } from "../../tests/js/harness.mjs";

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
const timed = async (fn) => { const t = now(); const r = await fn(); return [now() - t, r]; };

const runs = Number(process.argv[2] ?? 5);
const first = [], second = [], load = [], bytes = [];
for (let i = 0; i < runs; i++) {
  const w = await startWorker();
  try {
    const [a, r] = await timed(() => w.get("/v1/geo/ip?ip=81.2.69.160"));
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    const [b] = await timed(() => w.get("/v1/geo/ip?ip=8.8.8.8"));
    const h = (await w.get("/healthz")).body.ipdb;
    first.push(a); second.push(b); load.push(h.load_ms); bytes.push(h.table_bytes);
  } finally {
    await w.stop();
  }
}
const w = await startWorker();
let nsPerLookup;
try {
  await w.get("/__bench/ip?n=1000");
  const n = 1_000_000;
  const base = [], full = [];
  for (let k = 0; k < 5; k++) {
    base.push((await timed(() => w.get("/__bench/ip?n=0")))[0]);
    full.push((await timed(() => w.get(`/__bench/ip?n=${n}`)))[0]);
  }
  nsPerLookup = ((median(full) - median(base)) * 1e6) / n;
} finally {
  await w.stop();
}
console.log("| workerd (Miniflare, loopback) | value |");
console.log("|---|---:|");
console.log(`| first IP answer of a fresh isolate, median of ${runs} (ms) | ${median(first).toFixed(1)} |`);
console.log(`| of which table fetch through ASSETS + open, in-worker (ms) | ${median(load).toFixed(1)} |`);
console.log(`| second IP answer (ms) | ${median(second).toFixed(1)} |`);
console.log(`| asset bytes read before the first IP answer | ${bytes[0]} |`);
console.log(`| table ns/lookup inside the isolate (wasm) | ${nsPerLookup.toFixed(0)} |`);
