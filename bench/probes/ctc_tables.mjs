// Peers table and latency chart for BENCHMARKS.md from the JSON files the CTC sections wrote:
// OUT_DIR/ctc_native.json (ours, country-boundaries, oracle), ctc_shapely.json,
// ctc_country_coder.json, ctc_wasm.json (optional). Each: {set: {impl: [ns per lookup of each
// batch]}, _agreement: {impl: percent}}.
// Usage: node ctc_tables.mjs OUT_DIR SVG_PATH   (prints markdown, writes the SVG).
import fs from "node:fs";
import path from "node:path";

const [out, svgPath] = process.argv.slice(2);
const SETS = ["uniform", "near_border_maritime", "near_border_land", "cities"];
const data = {};
const agreement = {};
for (const f of ["ctc_native", "ctc_wasm", "ctc_shapely", "ctc_country_coder"]) {
  const p = path.join(out, `${f}.json`);
  if (!fs.existsSync(p)) continue;
  const j = JSON.parse(fs.readFileSync(p, "utf8"));
  Object.assign(agreement, j._agreement ?? {});
  for (const s of SETS) for (const [k, v] of Object.entries(j[s] ?? {})) ((data[s] ??= {})[k] = v);
}
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const impls = [...new Set(SETS.flatMap((s) => Object.keys(data[s] ?? {})))].filter((k) => data.uniform?.[k]?.length);
const LABEL = {
  ours: "ours (grid point)", ours_from_latlon: "ours (lat/lon)", ours_wasm: "ours in workerd (wasm)",
  ours_batch: "ours, batched", ours_wasm_batch: "ours in workerd, batched",
  country_boundaries: "country-boundaries", geo_oracle: "geo interval trees",
  shapely_prepared: "shapely prepared (bulk)", country_coder: "country-coder (JS)",
};
console.log("| point set | " + impls.map((k) => LABEL[k] ?? k).join(" | ") + " |");
console.log("|---|" + impls.map(() => "---").join("|") + "|");
for (const s of SETS) {
  const ours = q(data[s].ours, 0.5);
  const cells = impls.map((k) => {
    if (!data[s][k]?.length) return "–";
    const m = q(data[s][k], 0.5);
    return k === "ours" ? `**${m.toFixed(0)} ns**` : `${m.toFixed(0)} ns (${(m / ours).toFixed(2)}×)`;
  });
  console.log(`| ${s} | ${cells.join(" | ")} |`);
}
console.log("\nMedian ns per lookup over batches of 1 000 points (× = ratio to ours from a grid point).");
console.log("Agreement with our answers on the cities: " +
  Object.entries(agreement).map(([k, v]) => `${LABEL[k] ?? k} ${v.toFixed(3)}%`).join(", ") + ".\n");

// Chart: one panel per point set, one row per contender; box = p25–p75, whiskers = p5–p95,
// tick = median; log x axis (ns per lookup, over batches).
const W = 900, rowH = 18, panelGap = 34, left = 190, right = 30;
const all = SETS.flatMap((s) => impls.flatMap((k) => data[s][k] ?? []));
const lo = Math.log10(Math.max(1, Math.min(...all.filter((x) => x > 0)) * 0.8));
const hi = Math.log10(Math.max(...all) * 1.2);
const X = (v) => +(left + ((Math.log10(Math.max(v, 1)) - lo) / (hi - lo)) * (W - left - right)).toFixed(1);
let y = 30, body = "";
const COLORS = ["#1b7837", "#5aae61", "#2166ac", "#b2182b", "#762a83", "#e08214", "#8c510a", "#01665e", "#c51b7d"];
for (const s of SETS) {
  body += `<text x="10" y="${y}" font-weight="bold">${s}</text>`;
  y += 8;
  impls.forEach((k, i) => {
    const v = data[s][k];
    y += rowH;
    body += `<text x="${left - 8}" y="${y + 4}" text-anchor="end">${LABEL[k] ?? k}</text>`;
    if (!v?.length) return;
    const [p5, p25, p50, p75, p95] = [0.05, 0.25, 0.5, 0.75, 0.95].map((p) => q(v, p));
    const c = COLORS[i % COLORS.length];
    body += `<line x1="${X(p5)}" x2="${X(p95)}" y1="${y}" y2="${y}" stroke="${c}"/>`;
    body += `<rect x="${X(p25)}" y="${y - 6}" width="${Math.max(1, X(p75) - X(p25))}" height="12" fill="${c}" fill-opacity="0.35" stroke="${c}"/>`;
    body += `<line x1="${X(p50)}" x2="${X(p50)}" y1="${y - 7}" y2="${y + 7}" stroke="${c}" stroke-width="2.5"/>`;
    body += `<text x="${X(p95) + 4}" y="${y + 4}" font-size="10">${p50.toFixed(0)}</text>`;
  });
  y += panelGap;
}
let axis = "";
for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
  for (const m of [1, 2, 5]) {
    const v = m * 10 ** e;
    if (Math.log10(v) < lo || Math.log10(v) > hi) continue;
    axis += `<line x1="${X(v)}" x2="${X(v)}" y1="20" y2="${y - 20}" stroke="#ddd"/>`;
    axis += `<text x="${X(v)}" y="${y - 6}" text-anchor="middle" font-size="10">${v >= 1000 ? v / 1000 + " µs" : v + " ns"}</text>`;
  }
}
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${y + 10}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>${axis}${body}
<text x="${W - right}" y="14" text-anchor="end" font-size="10">ns per lookup over batches of 1 000 points (log); box p25–p75, whiskers p5–p95, tick median</text>
</svg>\n`;
fs.mkdirSync(path.dirname(svgPath), { recursive: true });
fs.writeFileSync(svgPath, svg);
console.log(`![CTC latency distributions per point set](${path.relative(process.cwd(), svgPath)})`);
