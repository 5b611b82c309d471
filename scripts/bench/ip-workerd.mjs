// IP in workerd (Miniflare, loopback), all timed from outside in the same run:
// - the first IP answer of a fresh isolate (after one /healthz, so the wasm is instantiated;
//   directory embedded, one page read through ASSETS) against the whole-table load it replaces
//   (every page read and validated, `/__bench/ip?all=1`, same preparation), with the asset
//   bytes each read first; and the isolate's very first request being the IP lookup;
// - table ns/lookup in wasm (`/__bench/ip?n=1000000&reps=R` minus `reps=0`: the same 1 M
//   addresses and the same pass as native) against native on the same built table
//   (`examples/ip_bench.rs --table-ns`), interleaved.
// Prints markdown rows. Usage: node scripts/bench/ip-workerd.mjs [fresh isolates, default 5]
import { execFileSync } from "node:child_process";
import { startWorker, ROOT } from "../../tests/js/harness.mjs";

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
const timed = async (fn) => { const t = now(); const r = await fn(); return [now() - t, r]; };
const ok = (r) => { if (r.status !== 200) throw new Error(`status ${r.status}`); return r; };

const runs = Number(process.argv[2] ?? 5);
const cold = [], lazy = [], inWorker = [], whole = [], second = [], lazyBytes = [], wholeBytes = [];
let dirBytes = 0;
for (let i = 0; i < runs; i++) {
  // Alternate the kinds of fresh isolate so drift hits all alike.
  let w = await startWorker();
  try {
    // The isolate's very first request (wasm instantiation included).
    const [a] = await timed(async () => ok(await w.get("/v1/geo/ip?ip=81.2.69.160")));
    cold.push(a);
  } finally {
    await w.stop();
  }
  w = await startWorker();
  try {
    ok(await w.get("/healthz")); // instantiated, no IP table yet
    const [a] = await timed(async () => ok(await w.get("/v1/geo/ip?ip=81.2.69.160")));
    const h = (await w.get("/healthz")).body.ipdb;
    const [b] = await timed(async () => ok(await w.get("/v1/geo/ip?ip=8.8.8.8")));
    lazy.push(a); second.push(b); inWorker.push(h.load_ms + h.table.page_load_ms);
    lazyBytes.push(h.table.loaded_page_bytes); dirBytes = h.table.dir_bytes;
  } finally {
    await w.stop();
  }
  w = await startWorker();
  try {
    ok(await w.get("/healthz"));
    const [a, r] = await timed(async () => ok(await w.get("/__bench/ip?n=0&reps=0&all=1")));
    whole.push(a); wholeBytes.push(r.body.loaded_page_bytes);
  } finally {
    await w.stop();
  }
}

const N = 1_000_000, REPS = 3;
const nativeNs = () => Number(execFileSync("cargo", ["run", "-q", "--release", "--example", "ip_bench", "--",
  "--table-ns", `${ROOT}/assets/ip/country`], { cwd: ROOT, encoding: "utf8" }).trim());
const native = [], wasm = [];
const w = await startWorker();
try {
  await w.get(`/__bench/ip?n=${N}&reps=1&all=1`);
  for (let k = 0; k < 5; k++) {
    native.push(nativeNs());
    const base = [], full = [];
    for (let j = 0; j < 3; j++) {
      base.push((await timed(async () => ok(await w.get(`/__bench/ip?n=${N}&reps=0`))))[0]);
      full.push((await timed(async () => ok(await w.get(`/__bench/ip?n=${N}&reps=${REPS}`))))[0]);
    }
    wasm.push(((median(full) - median(base)) * 1e6) / (N * REPS));
  }
} finally {
  await w.stop();
}
const [nat, was] = [median(native), median(wasm)];
console.log("| workerd (Miniflare, loopback), same run | value |");
console.log("|---|---:|");
console.log(`| first IP answer of a fresh, instantiated isolate, lazy pages, median of ${runs} (ms) | **${median(lazy).toFixed(1)}** |`);
console.log(`| … of which directory open + page fetch and validation, in-worker (ms) | ${median(inWorker).toFixed(1)} |`);
console.log(`| … asset bytes read before it (directory embedded in the wasm: ${dirBytes} B) | ${median(lazyBytes)} |`);
console.log(`| whole-table load in a fresh, instantiated isolate (every page read + validated), median of ${runs} (ms) | ${median(whole).toFixed(1)} |`);
console.log(`| … asset bytes read before it | ${median(wholeBytes)} |`);
console.log(`| first request of a fresh isolate being an IP lookup (wasm instantiation included) (ms) | ${median(cold).toFixed(1)} |`);
console.log(`| second IP answer (ms) | ${median(second).toFixed(1)} |`);
console.log(`| table ns/lookup, native (same built table, same 1 M addresses, same pass) | ${nat.toFixed(1)} |`);
console.log(`| table ns/lookup, wasm in workerd | ${was.toFixed(1)} |`);
console.log(`| wasm / native | ${(was / nat).toFixed(2)}× |`);
