#!/usr/bin/env bash
# Section: coordinates -> country inside workerd (the release wasm in Miniflare), same point sets.
# The probe builds and runs the bench build (build-bench/: `/__bench/geo`).
set -euo pipefail
[ -d "$BENCH_OUT/points" ] || bash bench/report/10_ctc_native.sh > /dev/null
node bench/probes/ctc_wasm.mjs "$BENCH_OUT" | { grep -v '^{"rid"' || true; } >&2
MD_WASM=$(node -e '
const fs = require("fs"), d = process.argv[1];
const j = JSON.parse(fs.readFileSync(d + "/ctc_wasm.json", "utf8"));
const n = JSON.parse(fs.readFileSync(d + "/ctc_native.json", "utf8"));
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const s of Object.keys(j)) {
  const w = med(j[s].ours_wasm), o = med(n[s].ours);
  console.log(`| ${s} | ${w.toFixed(0)} ns | ${o.toFixed(0)} ns | ${(w / o).toFixed(2)}× |`);
}' "$BENCH_OUT")
cat <<MD
## Coordinates → country in workerd

The release wasm in Miniflare's workerd (\`bench/probes/ctc_wasm.mjs\`: \`/__bench/geo\` runs 20
passes over 10 000 points in the isolate, minus the pass-free request; 9 samples per set):

| point set | ours, wasm in workerd | ours, native (section above) | wasm / native |
|---|---|---|---|
$MD_WASM
MD
