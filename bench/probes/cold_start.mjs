// Cold start of the geo path: a fresh workerd (Miniflare) per sample; times the first
// /v1/geo/country answer (open sea, no tile needed) after a trivial request has brought the
// isolate up, then the first answer that needs a tile (Büsingen, Europe tile).
// Usage: node cold_start.mjs [SAMPLES=7] [BUILD_DIR] [ASSETS_DIR] [QUERY]   (prints JSON; QUERY
// is appended to each geo request, e.g. "&fields=country"; without it each answer has its zone)
import path from "node:path";
import { Miniflare } from "miniflare";
import { ROOT } from "../../tests/js/harness.mjs";
import { BENCH_BUILD } from "./bench_build.mjs";

const arg = (i, fallback) => process.argv[2 + i] || fallback;
const [samples, buildDir, assetsDir, query] = [arg(0, 7), arg(1, BENCH_BUILD), arg(2, path.join(ROOT, "assets")), arg(3, "")];
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
    const [c, s] = await timed(base + "/v1/geo/country?lat=0&lon=-150" + query);
    if (s !== 200) throw new Error(`status ${s}`);
    first.push(c);
    warm.push((await timed(base + "/v1/geo/country?lat=0.1&lon=-150" + query))[0]);
    tile.push((await timed(base + "/v1/geo/country?lat=47.697&lon=8.691" + query))[0]);
    health = await (await fetch(base + "/healthz")).json();
  } finally {
    await mf.dispose();
  }
}
console.log(JSON.stringify({
  first_geo_ms: median(first), warm_geo_ms: median(warm), first_tile_ms: median(tile),
  index_open_ms: health.geo.index_open_ms, index_bytes: health.geo.index_bytes, index_source: health.geo.index_source ?? "ASSETS",
}));
