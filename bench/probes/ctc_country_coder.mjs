// Coordinates -> country with npm @rapideditor/country-coder (iso1A2Code), for BENCHMARKS.md.
// Usage: node ctc_country_coder.mjs OUT_DIR  (reads OUT_DIR/points/*.bin, writes
// OUT_DIR/ctc_country_coder.json, prints "set<TAB>median ns" lines and the cities agreement).
import fs from "node:fs";
import path from "node:path";
import { iso1A2Code } from "@rapideditor/country-coder";

const out = process.argv[2];
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities"];
const BATCH = 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timings = {};
for (const s of SETS) {
  const buf = fs.readFileSync(path.join(out, "points", `${s}.bin`));
  const n = buf.length / 16;
  const lat = new Float64Array(n), lon = new Float64Array(n);
  for (let i = 0; i < n; i++) { lat[i] = buf.readDoubleLE(i * 16); lon[i] = buf.readDoubleLE(i * 16 + 8); }
  const answers = new Array(n);
  for (let i = 0; i < Math.min(n, 20000); i++) iso1A2Code([lon[i], lat[i]]); // JIT warm-up
  const ns = [];
  for (let i = 0; i < n; i += BATCH) {
    const end = Math.min(n, i + BATCH);
    const t = process.hrtime.bigint();
    for (let k = i; k < end; k++) answers[k] = iso1A2Code([lon[k], lat[k]]);
    ns.push(Number(process.hrtime.bigint() - t) / (end - i));
  }
  timings[s] = { country_coder: ns };
  console.log(`${s}\t${median(ns).toFixed(0)}`);
  if (s === "cities") {
    const ours = fs.readFileSync(path.join(out, "points", "cities.ours.txt"), "utf8").split("\n");
    let same = 0;
    for (let i = 0; i < n; i++) if ((answers[i] ?? "-") === ours[i]) same++;
    timings._agreement = { country_coder: (100 * same) / n };
    console.log(`agreement\t${timings._agreement.country_coder.toFixed(3)}`);
  }
}
fs.writeFileSync(path.join(out, "ctc_country_coder.json"), JSON.stringify(timings));
