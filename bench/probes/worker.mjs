// Benchmarks of the compiled worker inside workerd (Miniflare), printed as a table.
// Usage: node bench/probes/worker.mjs   (after scripts/setup.sh; loopback only, bounded).
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { startWorker, ROOT } from "../../tests/js/harness.mjs";
import { benchWorker } from "./bench_build.mjs";

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const now = () => performance.now();

async function timed(fn) { const t = now(); const r = await fn(); return [now() - t, r]; }

async function throughput(base, p, n = 4000, conc = 8) {
  let i = 0;
  const t = now();
  await Promise.all(Array.from({ length: conc }, async () => {
    while (i++ < n) { const r = await fetch(base + p); await r.arrayBuffer(); }
  }));
  return n / ((now() - t) / 1000);
}

const rows = [];
const row = (what, value, note = "") => { rows.push([what, value, note]); console.error(`${what}: ${value} ${note}`); };

// Cold starts: fresh workerd each time; the first geo request opens the index embedded in the
// wasm (no asset read); the first border point fetches one tile. The country layer alone
// (`fields=country`, what /healthz's geo figures describe); the zone's cold starts are in the
// time zone section.
const cold = [], warm = [], openMs = [], tileCold = [], tileWarm = [];
for (let k = 0; k < 5; k++) {
  const w = await startWorker(benchWorker());
  await w.get("/__bench/noop");
  const [c] = await timed(() => w.get("/v1/geo/country?lat=0&lon=-150&fields=country"));
  const [h] = await timed(() => w.get("/v1/geo/country?lat=0&lon=-150&fields=country"));
  const [t1] = await timed(() => w.get("/v1/geo/country?lat=47.697&lon=8.691&fields=country"));
  const [t2] = await timed(() => w.get("/v1/geo/country?lat=47.698&lon=8.692&fields=country"));
  const health = (await w.get("/healthz")).body;
  cold.push(c); warm.push(h); openMs.push(health.geo.index_open_ms); tileCold.push(t1); tileWarm.push(t2);
  if (k === 0) row(`index.bin bytes (${health.geo.index_source ?? "ASSETS"}; no asset read before the first answer when embedded)`, health.geo.index_bytes);
  if (k === 0) row("tile bytes after Büsingen lookup (its 11.25° tile)", health.geo.tile_bytes_loaded);
  await w.stop();
}
row("cold first request (index open + answer), median ms", median(cold).toFixed(2));
row("  in-worker index open (Date.now, 1 ms resolution), median ms", median(openMs));
row("warm request, median ms", median(warm).toFixed(2));
row("first request needing a tile (fetch + verify + answer), median ms", median(tileCold).toFixed(2));
row("same tile warm, median ms", median(tileWarm).toFixed(2));

const w = await startWorker(benchWorker());
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "assets/manifest.json")));
row("geo asset total bytes (index + all tiles = max resident)", manifest.geo.total_bytes);
// CTC ns/lookup per point set: bench/probes/ctc_wasm.mjs (four sets, 10 000-point bodies, so
// one request stays far below the isolate's limits near borders).
// IP ns/lookup: passes over the shared 1 M-address mix minus building it (`reps=0`); the
// native comparison in the same run is in bench/probes/ip_workerd.mjs.
{
  const n = 1_000_000, reps = 3;
  await w.get(`/__bench/ip?n=${n}&reps=1&all=1`);
  const t0 = [], ts = [];
  for (let k = 0; k < 3; k++) {
    t0.push((await timed(() => w.get(`/__bench/ip?n=${n}&reps=0`)))[0]);
    ts.push((await timed(() => w.get(`/__bench/ip?n=${n}&reps=${reps}`)))[0]);
  }
  row("wasm ns/lookup, IP country table (75% IPv4)", (((median(ts) - median(t0)) * 1e6) / (n * reps)).toFixed(1));
}
const noop = await throughput(w.base, "/__bench/noop");
const ipRps = await throughput(w.base, "/v1/geo/ip?ip=81.2.69.160");
const geoRps = await throughput(w.base, "/v1/geo/country?lat=47.697&lon=8.691");
row("req/s trivial endpoint (8 concurrent, keep-alive)", noop.toFixed(0));
row("req/s /v1/geo/ip", ipRps.toFixed(0), `ratio ${(ipRps / noop).toFixed(2)}`);
row("req/s /v1/geo/country", geoRps.toFixed(0), `ratio ${(geoRps / noop).toFixed(2)}`);
// IPDB swap: publish the bundled 5 MB database under a new version and time the isolate's swap.
{
  const w2 = await startWorker(benchWorker({ bindings: { IPDB_CHECK_INTERVAL_SECONDS: "0" } }));
  const db = fs.readFileSync(path.join(ROOT, "assets/ip/default.mmdb"));
  await w2.get("/v1/geo/ip?ip=1.1.1.1");
  await (await w2.mf.getR2Bucket("IPDB_BUCKET")).put("ipdb/b.mmdb", db);
  await (await w2.mf.getKVNamespace("IPDB_CONFIG")).put("ipdb/current", JSON.stringify({
    version: "bench-1", sha256: crypto.createHash("sha256").update(db).digest("hex"), object_key: "ipdb/b.mmdb", updated_at: "2026-11-30T00:00:00Z" }));
  let h;
  for (let i = 0; i < 500; i++) {
    await w2.get("/v1/geo/ip?ip=1.1.1.1");
    h = (await w2.get("/healthz")).body.ipdb;
    if (h.version === "bench-1") break;
  }
  row("IPDB swap in isolate of a record naming only an mmdb (R2 read + sha256 + conversion to the table, 5.2 MB), ms", h.last_swap_ms);
  await w2.stop();
}
await w.stop();
console.log("| measurement | value | note |\n|---|---|---|");
for (const [a, b, c] of rows) console.log(`| ${a} | ${b} | ${c} |`);
