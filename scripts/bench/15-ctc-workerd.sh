#!/usr/bin/env bash
# Section: coordinates -> country inside workerd (the release wasm in Miniflare), same point sets.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
[ -d "$BENCH_OUT/points" ] || bash scripts/bench/10-ctc-native.sh > /dev/null
node scripts/bench/ctc_wasm.mjs "$BENCH_OUT" | { grep -v '^{"rid"' || true; } >&2
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

The release wasm in Miniflare's workerd (\`scripts/bench/ctc_wasm.mjs\`: \`/__bench/geo\` runs 20
passes over 10 000 points in the isolate, minus the pass-free request; 9 samples per set):

| point set | ours, wasm in workerd | ours, native (section above) | wasm / native |
|---|---|---|---|
$MD_WASM
MD
