// Coordinates -> time zone with npm geo-tz/all (the same source data as our zone layer, all quads
// preloaded) and @photostructure/tz-lookup (a coarse grid), for BENCHMARKS.md.
// Usage: node tz_peers.mjs OUT_DIR  (reads OUT_DIR/points/*.bin and points/cities.tz.ours.txt
// written by bench/rust/examples/tz_report.rs, writes OUT_DIR/tz_peers.json and
// OUT_DIR/points/cities.tz.geo-tz.txt, prints markdown rows).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const geoTz = require("geo-tz/all");
const tzLookup = require("@photostructure/tz-lookup");

const out = process.argv[2];
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities", "near_zone_border"];
const BATCH = 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let t = process.hrtime.bigint();
geoTz.setCache({ preload: true });
const geoTzLoadMs = Number(process.hrtime.bigint() - t) / 1e6;
const peers = {
  // geo-tz names every zone containing the point (Xinjiang: Urumqi and Shanghai): its first.
  "geo-tz/all": (lat, lon) => geoTz.find(lat, lon)[0] ?? "-",
  "@photostructure/tz-lookup": (lat, lon) => tzLookup(lat, lon),
};
const result = { geo_tz_preload_ms: geoTzLoadMs };
console.log(`geo-tz/all preloads every quad in ${geoTzLoadMs.toFixed(0)} ms.\n`);
console.log("| point set | `geo-tz/all` | `@photostructure/tz-lookup` |");
console.log("|---|---|---|");
const ours = fs.readFileSync(path.join(out, "points", "cities.tz.ours.txt"), "utf8").split("\n");
const agreement = {};
for (const s of SETS) {
  const buf = fs.readFileSync(path.join(out, "points", `${s}.bin`));
  const n = buf.length / 16;
  const lat = new Float64Array(n), lon = new Float64Array(n);
  for (let i = 0; i < n; i++) { lat[i] = buf.readDoubleLE(i * 16); lon[i] = buf.readDoubleLE(i * 16 + 8); }
  const row = {};
  for (const [name, f] of Object.entries(peers)) {
    const answers = new Array(n);
    for (let i = 0; i < Math.min(n, 20000); i++) f(lat[i], lon[i]); // JIT warm-up
    const ns = [];
    for (let i = 0; i < n; i += BATCH) {
      const end = Math.min(n, i + BATCH);
      const t0 = process.hrtime.bigint();
      for (let k = i; k < end; k++) answers[k] = f(lat[k], lon[k]);
      ns.push(Number(process.hrtime.bigint() - t0) / (end - i));
    }
    row[name] = median(ns);
    if (s === "cities") {
      let same = 0;
      for (let i = 0; i < n; i++) if (answers[i] === ours[i]) same++;
      agreement[name] = { same, n };
      if (name === "geo-tz/all") {
        // Where zones overlap geo-tz names them all, in no fixed order: ours is then one of
        // them, the one whose name sorts first (our overlap rule, and tzf-rs's answer).
        const all = Array.from(lat, (la, i) => geoTz.find(la, lon[i]));
        let among = 0;
        let first = 0;
        for (let i = 0; i < n; i++) {
          if (all[i].includes(ours[i])) among++;
          if ([...all[i]].sort()[0] === ours[i]) first++;
        }
        agreement["geo-tz/all, ours among the zones it names"] = { same: among, n };
        agreement["geo-tz/all, the name that sorts first among them"] = { same: first, n };
        fs.writeFileSync(path.join(out, "points", "cities.tz.geo-tz.txt"), all.map((z) => z.join("|")).join("\n") + "\n");
      }
    }
  }
  result[s] = row;
  console.log(`| ${s} | ${row["geo-tz/all"].toFixed(0)} ns | ${row["@photostructure/tz-lookup"].toFixed(0)} ns |`);
}
result.agreement = agreement;
console.log("\nAgreement with our zones on the cities:\n\n| peer | same zone |\n|---|---|");
for (const [name, { same, n }] of Object.entries(agreement)) {
  console.log(`| \`${name}\` | ${((100 * same) / n).toFixed(3)}% (${n - same} of ${n} differ) |`);
}
fs.writeFileSync(path.join(out, "tz_peers.json"), JSON.stringify(result));
