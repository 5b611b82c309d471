// Cold start of the geo path: a fresh workerd (Miniflare) per sample; times the first
// /v1/geo/country answer (open sea, no tile needed) after a trivial request has brought the
// isolate up, then the first answer that needs a tile (Büsingen, Europe tile).
// Usage: node cold_start.mjs [SAMPLES=7] [BUILD_DIR] [ASSETS_DIR]   (prints JSON)
import path from "node:path";
import { Miniflare } from "miniflare";
import { ROOT } from "../../tests/js/harness.mjs";
import { BENCH_BUILD } from "./bench_build.mjs";

const [samples = 7, buildDir = BENCH_BUILD, assetsDir = path.join(ROOT, "assets")] = process.argv.slice(2);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const timed = async (url) => { const t = performance.now(); const r = await fetch(url); await r.arrayBuffer(); return [performance.now() - t, r.status]; };
const first = [], warm = [], tile = [];
let health;
for (let k = 0; k < Number(samples); k++) {
  const mf = new Miniflare({
    name: "cold", modules: true, scriptPath: path.join(buildDir, "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }], compatibilityDate: "2026-07-01",
    assets: { directory: assetsDir, binding: "ASSETS", routerConfig: { invoke_user_worker_ahead_of_assets: true, has_user_worker: true } },
    bindings: { ENABLE_BENCH: "true", IPDB_KV_KEY: "ipdb/current" }, kvNamespaces: ["IPDB_CONFIG"], r2Buckets: ["IPDB_BUCKET"],
    cf: { country: "GB", colo: "LHR", asn: 64512 }, host: "127.0.0.1", port: 0,
  });
  const base = (await mf.ready).href.replace(/\/$/, "");
  try {
    await timed(base + "/__bench/noop");
    const [c, s] = await timed(base + "/v1/geo/country?lat=0&lon=-150");
    if (s !== 200) throw new Error(`status ${s}`);
    first.push(c);
    warm.push((await timed(base + "/v1/geo/country?lat=0.1&lon=-150"))[0]);
    tile.push((await timed(base + "/v1/geo/country?lat=47.697&lon=8.691"))[0]);
    health = await (await fetch(base + "/healthz")).json();
  } finally {
    await mf.dispose();
  }
}
console.log(JSON.stringify({
  first_geo_ms: median(first), warm_geo_ms: median(warm), first_tile_ms: median(tile),
  index_open_ms: health.geo.index_open_ms, index_bytes: health.geo.index_bytes, index_source: health.geo.index_source ?? "ASSETS",
}));
