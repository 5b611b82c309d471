// What a fresh isolate pays for tiles (not a report section; the numbers behind the 11.25° tile
// size): for points whose tiles differ in size, the first answer after the embedded index is
// open (one tile fetched and verified), and a 10 000-point uniform batch that needs nearly every
// tile; each on a fresh workerd (Miniflare), with the zone and with fields=country. The tile
// sizes are the files under assets/geo and assets/tz (format::tile_of names them).
// Usage: node bench/probes/cold_tiles.mjs [SAMPLES=5]   (prints JSON, medians in ms)
import path from "node:path";
import { Miniflare } from "miniflare";
import { ROOT } from "../../tests/js/harness.mjs";
import { BENCH_BUILD } from "./bench_build.mjs";

const samples = Number(process.argv[2] || 5);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const points = { busingen: [47.697, 8.691], kamchatka: [53.0, 158.65], open_pacific: [0.5, -150] };
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const world = Array.from({ length: 10000 }, () => [(Math.asin(2 * rnd() - 1) * 180) / Math.PI, rnd() * 360 - 180]);

async function fresh(run) {
  const mf = new Miniflare({
    name: "cold", modules: true, scriptPath: path.join(BENCH_BUILD, "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }], compatibilityDate: "2026-07-01",
    assets: { directory: path.join(ROOT, "assets"), binding: "ASSETS", routerConfig: { invoke_user_worker_ahead_of_assets: true, has_user_worker: true } },
    bindings: { ENABLE_BENCH: "true", IPDB_KV_KEY: "ipdb/current" }, kvNamespaces: ["IPDB_CONFIG"], r2Buckets: ["IPDB_BUCKET"],
    host: "127.0.0.1", port: 0,
  });
  const base = (await mf.ready).href.replace(/\/$/, "");
  const timed = async (p, init) => {
    const t = performance.now();
    const r = await fetch(base + p, init);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`${p}: ${r.status}`);
    return performance.now() - t;
  };
  try {
    await timed("/__bench/noop");
    return await run(timed);
  } finally {
    await mf.dispose();
  }
}

const out = {};
for (const [label, q] of [["zone", ""], ["country", "&fields=country"]]) {
  for (const [name, [lat, lon]] of Object.entries(points)) {
    const ms = [];
    for (let k = 0; k < samples; k++) {
      ms.push(await fresh(async (timed) => {
        await timed(`/v1/geo/country?lat=0&lon=-150${q}`); // opens the embedded index
        return timed(`/v1/geo/country?lat=${lat}&lon=${lon}${q}`);
      }));
    }
    out[`${label}: first answer at ${name}`] = +median(ms).toFixed(1);
  }
  const ms = [];
  const body = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ points: world }) };
  for (let k = 0; k < samples; k++) ms.push(await fresh((timed) => timed(`/v1/geo/country?${q.slice(1)}`, body)));
  out[`${label}: first 10 000-point world batch`] = +median(ms).toFixed(0);
}
console.log(JSON.stringify(out));
