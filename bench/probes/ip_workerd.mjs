// IP in workerd (Miniflare, loopback), all timed from outside in the same run:
// - the first IP answer of a fresh isolate in a running runtime (as in production, where a new
//   isolate starts next to KV and the asset service that are already up): one Miniflare runs
//   several copies of the worker, each its own isolate, reached by host name; one copy warms
//   the services first. Per fresh isolate: the IP answer after one /healthz (so the wasm is
//   instantiated; directory embedded, one page read through ASSETS, the KV record read at the
//   same time) against the whole-table load it replaces (every page read and validated,
//   `/__bench/ip?all=1`, same preparation), with the asset bytes each read first; and the
//   isolate's very first request being the IP lookup. Also the same first answer in a fresh
//   runtime process, where KV and the asset service start with it;
// - table ns/lookup in wasm (`/__bench/ip?n=1000000&reps=R` minus `reps=0`: the same 1 M
//   addresses and the same pass as native) against native on the same built table
//   (`bench/rust/examples/ip_bench.rs --table-ns`), interleaved.
// Prints markdown rows. Usage: node bench/probes/ip_workerd.mjs [fresh isolates, default 5]
import { execFileSync } from "node:child_process";
import http from "node:http";
import { Miniflare } from "miniflare";
import { startWorker, workerOptions, RUNTIME, ROOT } from "../../tests/js/harness.mjs";
import { benchWorker } from "./bench_build.mjs";

const now = () => Number(process.hrtime.bigint()) / 1e6;
const median = (v) => [...v].sort((a, b) => a - b)[v.length >> 1];
// One GET on a fresh connection (as curl makes it), timed to the last body byte. Node's fetch
// (and the harness's contract check on it) adds ~3 ms per request here, about as much as the
// worker's own work, so the timed requests use this.
const get = (url, host) => new Promise((resolve, reject) => {
  const t = now();
  http.get(url, { agent: false, headers: host ? { host } : {} }, (res) => {
    const chunks = [];
    res.on("data", (c) => chunks.push(c));
    res.on("end", () => {
      if (res.statusCode !== 200) return reject(new Error(`${url}: status ${res.statusCode}`));
      resolve({ ms: now() - t, body: JSON.parse(Buffer.concat(chunks)) });
    });
  }).on("error", reject);
});

const runs = Number(process.argv[2] ?? 5);
const cold = [], lazy = [], inWorker = [], whole = [], second = [], floor = [], lazyBytes = [], wholeBytes = [];
let dirBytes = 0;
const names = ["warm", ...Array.from({ length: 3 * runs }, (_, i) => `fresh${i}`)];
const mf = new Miniflare({
  ...RUNTIME,
  workers: names.map((n) => ({ ...workerOptions(benchWorker()), name: n, routes: [`${n}.test/*`] })),
});
try {
  const base = (await mf.ready).href.replace(/\/$/, "");
  const on = (n) => (p) => get(base + p, `${n}.test`);
  const warm = on("warm");
  for (let k = 0; k < 3; k++) { await warm("/v1/geo/ip?ip=81.2.69.160"); await warm("/healthz"); }
  for (let i = 0; i < runs; i++) {
    // Alternate the kinds of fresh isolate so drift hits all alike.
    const [c, l, w] = [on(`fresh${3 * i}`), on(`fresh${3 * i + 1}`), on(`fresh${3 * i + 2}`)];
    cold.push((await c("/v1/geo/ip?ip=81.2.69.160")).ms);
    await l("/healthz");
    const a = await l("/v1/geo/ip?ip=81.2.69.160");
    const h = (await l("/healthz")).body.ipdb;
    const b = await l("/v1/geo/ip?ip=81.2.69.161");
    const f = [];
    for (let k = 0; k < 5; k++) f.push((await l("/healthz")).ms);
    lazy.push(a.ms); second.push(b.ms); floor.push(median(f));
    inWorker.push(h.load_ms + h.table.page_load_ms);
    lazyBytes.push(h.table.loaded_page_bytes); dirBytes = h.table.dir_bytes;
    await w("/healthz");
    const r = await w("/__bench/ip?n=0&reps=0&all=1");
    whole.push(r.ms); wholeBytes.push(r.body.loaded_page_bytes);
  }
} finally {
  await mf.dispose();
}
const process1 = [];
for (let i = 0; i < runs; i++) {
  const w = await startWorker(benchWorker());
  try {
    await get(`${w.base}/healthz`);
    process1.push((await get(`${w.base}/v1/geo/ip?ip=81.2.69.160`)).ms);
  } finally {
    await w.stop();
  }
}

const N = 1_000_000, REPS = 3;
const nativeNs = () => Number(execFileSync("cargo", ["run", "-q", "--release", "-p", "edge-geo-notify-benches", "--example", "ip_bench", "--",
  "--table-ns", `${ROOT}/assets/ip/country`], { cwd: ROOT, encoding: "utf8" }).trim());
const native = [], wasm = [];
const w = await startWorker(benchWorker());
try {
  await w.get(`/__bench/ip?n=${N}&reps=1&all=1`);
  for (let k = 0; k < 5; k++) {
    native.push(nativeNs());
    const base = [], full = [];
    for (let j = 0; j < 3; j++) {
      base.push((await get(`${w.base}/__bench/ip?n=${N}&reps=0`)).ms);
      full.push((await get(`${w.base}/__bench/ip?n=${N}&reps=${REPS}`)).ms);
    }
    wasm.push(((median(full) - median(base)) * 1e6) / (N * REPS));
  }
} finally {
  await w.stop();
}
const [nat, was] = [median(native), median(wasm)];
console.log("| workerd (Miniflare, loopback), same run | value |");
console.log("|---|---:|");
console.log(`| first IP answer of a fresh, instantiated isolate in a running runtime, lazy pages, median of ${runs} (ms) | **${median(lazy).toFixed(1)}** |`);
console.log(`| … of which directory open + page fetch and validation (KV record read at the same time), in-worker (ms) | ${median(inWorker).toFixed(1)} |`);
console.log(`| … against a warm \`/healthz\` of the same isolate, same client (the loopback floor) (ms) | ${median(floor).toFixed(1)} |`);
console.log(`| … asset bytes read before it (directory embedded in the wasm: ${dirBytes} B) | ${median(lazyBytes)} |`);
console.log(`| whole-table load in a fresh, instantiated isolate (every page read + validated), median of ${runs} (ms) | ${median(whole).toFixed(1)} |`);
console.log(`| … asset bytes read before it | ${median(wholeBytes)} |`);
console.log(`| first request of a fresh isolate being an IP lookup (wasm instantiation included) (ms) | ${median(cold).toFixed(1)} |`);
console.log(`| second IP answer, same page (ms) | ${median(second).toFixed(1)} |`);
console.log(`| first IP answer of an instantiated isolate in a fresh runtime process (KV and assets services starting too) (ms) | ${median(process1).toFixed(1)} |`);
console.log(`| table ns/lookup, native (same built table, same 1 M addresses, same pass) | ${nat.toFixed(1)} |`);
console.log(`| table ns/lookup, wasm in workerd | ${was.toFixed(1)} |`);
console.log(`| wasm / native | ${(was / nat).toFixed(2)}× |`);
const ratios = wasm.map((x, k) => x / native[k]);
console.log(`| … per round (${ratios.length} interleaved rounds), lowest – highest | ${Math.min(...ratios).toFixed(2)}× – ${Math.max(...ratios).toFixed(2)}× |`);
