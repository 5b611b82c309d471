// Coordinates -> country inside workerd (the compiled worker in Miniflare, ENABLE_BENCH):
// ns per lookup on the four point sets through /__bench/geo, which runs `repeat` passes in the
// isolate, one lookup at a time and through the interleaved batch (batch=1); the repeat=0
// request (parse + transfer) is subtracted.
// Usage: node ctc_wasm.mjs OUT_DIR  (reads OUT_DIR/points/*.bin, writes OUT_DIR/ctc_wasm.json).
import fs from "node:fs";
import path from "node:path";
import { startWorker } from "../../tests/js/harness.mjs";
import { benchWorker } from "./bench_build.mjs";

const out = process.argv[2];
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities"];
const N = 10_000, REPEAT = 20, SAMPLES = 9;
const now = () => performance.now();
const w = await startWorker(benchWorker());
const result = {};
try {
  for (const s of SETS) {
    const all = fs.readFileSync(path.join(out, "points", `${s}.bin`));
    const ns = { ours_wasm: [], ours_wasm_batch: [] };
    for (let k = 0; k < SAMPLES; k++) {
      const body = all.subarray(k * N * 16, (k + 1) * N * 16);
      await w.post("/__bench/geo?repeat=1", body); // loads the tiles these points need
      let t = now();
      await w.post("/__bench/geo?repeat=0", body);
      const base = now() - t;
      for (const [key, batch] of [["ours_wasm", 0], ["ours_wasm_batch", 1]]) {
        t = now();
        await w.post(`/__bench/geo?repeat=${REPEAT}&batch=${batch}`, body);
        ns[key].push(((now() - t - base) * 1e6) / (N * REPEAT));
      }
    }
    result[s] = ns;
    const med = (xs) => [...xs].sort((a, b) => a - b)[SAMPLES >> 1].toFixed(1);
    console.error(`wasm ${s}: ${med(ns.ours_wasm)} ns/lookup, batched ${med(ns.ours_wasm_batch)}`);
  }
} finally {
  await w.stop();
}
fs.writeFileSync(path.join(out, "ctc_wasm.json"), JSON.stringify(result));
