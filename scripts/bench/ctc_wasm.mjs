// Coordinates -> country inside workerd (the compiled worker in Miniflare, ENABLE_BENCH):
// ns per lookup on the four point sets through /__bench/geo, which runs `repeat` passes in the
// isolate; the repeat=0 request (parse + transfer) is subtracted.
// Usage: node ctc_wasm.mjs OUT_DIR  (reads OUT_DIR/points/*.bin, writes OUT_DIR/ctc_wasm.json).
import fs from "node:fs";
import path from "node:path";
import { startWorker } from "../../tests/js/harness.mjs";

const out = process.argv[2];
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities"];
const N = 10_000, REPEAT = 20, SAMPLES = 9;
const now = () => performance.now();
const w = await startWorker();
const result = {};
try {
  for (const s of SETS) {
    const all = fs.readFileSync(path.join(out, "points", `${s}.bin`));
    const ns = [];
    for (let k = 0; k < SAMPLES; k++) {
      const body = all.subarray(k * N * 16, (k + 1) * N * 16);
      await w.post("/__bench/geo?repeat=1", body); // loads the tiles these points need
      let t = now();
      await w.post("/__bench/geo?repeat=0", body);
      const base = now() - t;
      t = now();
      await w.post(`/__bench/geo?repeat=${REPEAT}`, body);
      ns.push(((now() - t - base) * 1e6) / (N * REPEAT));
    }
    result[s] = { ours_wasm: ns };
    console.error(`wasm ${s}: ${[...ns].sort((a, b) => a - b)[SAMPLES >> 1].toFixed(1)} ns/lookup`);
  }
} finally {
  await w.stop();
}
fs.writeFileSync(path.join(out, "ctc_wasm.json"), JSON.stringify(result));
