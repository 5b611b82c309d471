// Coordinates -> country and time zone inside workerd (the compiled worker in Miniflare,
// ENABLE_BENCH): ns per point on the zone section's point sets through /__bench/geo, country only
// (zones=0: the country layer) against country + zone (zones=1: one walk of the combined
// layer), one point at a time and batched; each contender's repeat=0 request (parse, transfer
// and the untimed pass that loads its tiles) is subtracted. Contenders alternate within each sample.
// Usage: node tz_wasm.mjs OUT_DIR  (reads OUT_DIR/points/*.bin, writes OUT_DIR/tz_wasm.json,
// prints markdown rows).
import fs from "node:fs";
import path from "node:path";
import { startWorker } from "../../tests/js/harness.mjs";
import { benchWorker } from "./bench_build.mjs";

const out = process.argv[2];
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities", "near_zone_border"];
const N = 10_000, REPEAT = 20, SAMPLES = 9;
const now = () => performance.now();
const w = await startWorker(benchWorker());
const result = {};
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log("| point set | country only | country + zone, one walk | ratio | batched: country only | batched: one walk | ratio |");
console.log("|---|---|---|---|---|---|---|");
try {
  for (const s of SETS) {
    const all = fs.readFileSync(path.join(out, "points", `${s}.bin`));
    const ns = { country: [], country_zone: [], country_batch: [], country_zone_batch: [] };
    for (let k = 0; k < SAMPLES; k++) {
      const body = all.subarray(k * N * 16, (k + 1) * N * 16);
      await w.post("/__bench/geo?repeat=1&zones=1", body); // loads the tiles of both layers
      // Each contender's repeat=0 request is its own baseline: with zones=1 the route also
      // makes the untimed pass that loads the combined layer's tiles, which a zones=0 baseline
      // would leave in the zone contenders' time.
      const base = {};
      for (const zones of [0, 1]) {
        const t = now();
        await w.post(`/__bench/geo?repeat=0&zones=${zones}`, body);
        base[zones] = now() - t;
      }
      for (const [key, batch, zones] of [["country", 0, 0], ["country_zone", 0, 1], ["country_batch", 1, 0], ["country_zone_batch", 1, 1]]) {
        const t = now();
        await w.post(`/__bench/geo?repeat=${REPEAT}&batch=${batch}&zones=${zones}`, body);
        ns[key].push(((now() - t - base[zones]) * 1e6) / (N * REPEAT));
      }
    }
    result[s] = ns;
    const [c, cz, cb, czb] = [ns.country, ns.country_zone, ns.country_batch, ns.country_zone_batch].map(med);
    console.log(`| ${s} | ${c.toFixed(0)} ns | **${cz.toFixed(0)} ns** | **${(cz / c).toFixed(2)}×** | ${cb.toFixed(0)} ns | ${czb.toFixed(0)} ns | ${(czb / cb).toFixed(2)}× |`);
  }
} finally {
  await w.stop();
}
fs.writeFileSync(path.join(out, "tz_wasm.json"), JSON.stringify(result));
