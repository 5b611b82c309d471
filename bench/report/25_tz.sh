#!/usr/bin/env bash
# Section: coordinates -> country and time zone. Native: country only against country + zone
# (bench/rust/examples/tz_report.rs), the tzf-rs anchor (bench/rust/tz_anchor, a workspace of its
# own so tzf-rs never enters the main build), the Node peers geo-tz/all and
# @photostructure/tz-lookup (bench/probes/tz_peers.mjs), and asset bytes.
set -euo pipefail
cargo build --release --quiet -p edge-geo-notify-benches --example tz_report --example tz_count >&2
(cd bench/rust/tz_anchor && CARGO_TARGET_DIR="$PWD/../../../target/tz-anchor" cargo build --release --quiet) >&2
cat <<'MD'
## Coordinates → country and time zone

Median ns per lookup over batches of 1 000 points, 3 timed passes per contender, each right
after an untimed pass of the same contender (its own data as warm as that traffic leaves it), on the point sets
of the country section plus 100 000 points within 0.01° of a land time-zone border
(`near_zone_border`; geo-tz's quad cuts left out). The zones are timezone-boundary-builder's
full zone set (npm `geo-tz` 8.1.9's `timezones.geojson`, the set `geo-tz/all` answers; the open
sea answers `Etc/GMT±N` of its 15° band, from the longitude), checked against a point-in-polygon
oracle (`tests/tz_exact.rs`). The two designs issue 44 asked to compare, built by the same
builder: **one walk** of the combined layer (`assets/tz`, what the worker ships: one quadtree
whose leaves carry both layers' candidates and whose uniform cells carry (country, zone) pairs)
and **two walks** (the country layer, then a zone layer of its own). `fields=country` walks the
country layer alone. Ratios are against country only in the same run (machine load is noted
below: other sessions share the 2 cores).

MD
echo "Load before the run: $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min)."
echo
"${CARGO_TARGET_DIR:-target}"/release/examples/tz_report "$BENCH_OUT"
echo
# Counted, not timed: the same two lookups under callgrind (bench/rust/examples/tz_count.rs), whose
# instruction counts and simulated cache misses do not move with the neighbours' load.
if command -v valgrind >/dev/null; then
  echo "Counted with \`valgrind --tool=callgrind --cache-sim=yes\` (\`tz_count\`: the first 20 000 points of each set, one at a time, only the lookups' loop collected; the simulated last-level cache is 32 MB, as this machine's L3; the layer's tiles were just read, so what fits stays cached):"
  echo
  echo "| point set | instructions: country only | country + zone | ratio | L1d misses: country only | country + zone | LL misses: country only | country + zone |"
  echo "|---|---|---|---|---|---|---|---|"
  for set in uniform near_border_maritime near_border_land cities near_zone_border; do
    for mode in country pair; do
      valgrind --tool=callgrind --cache-sim=yes --LL=33554432,16,64 --collect-atstart=no \
        --toggle-collect='*tz_count*pass*' --callgrind-out-file="$BENCH_OUT/tz_count.$set.$mode" \
        "${CARGO_TARGET_DIR:-target}"/release/examples/tz_count run "$BENCH_OUT/points" "$set" "$mode" 20000 >/dev/null 2>&1
    done
    python3 - "$BENCH_OUT/tz_count.$set" "$set" <<'PY'
import sys
def counts(path):
    for line in open(path):
        if line.startswith("events:"):
            names = line.split()[1:]
        if line.startswith("totals:"):
            vals = [int(v) for v in line.split()[1:]]
            return dict(zip(names, vals + [0] * (len(names) - len(vals))))
c, z = (counts(f"{sys.argv[1]}.{m}") for m in ("country", "pair"))
n = 20000
miss = lambda v, k: (v[f"{k}mr"] + v[f"{k}mw"]) / n
print(f"| {sys.argv[2]} | {c['Ir'] / n:.0f} | **{z['Ir'] / n:.0f}** | **{z['Ir'] / c['Ir']:.2f}×** | {miss(c, 'D1'):.2f} | {miss(z, 'D1'):.2f} | {miss(c, 'DL'):.2f} | {miss(z, 'DL'):.2f} |")
PY
  done
  echo
fi
# tzf-rs and our one walk timed in one process, contender by contender within each round, so
# the ratio is not two processes' timings taken minutes apart.
target/tz-anchor/release/tz-anchor "$BENCH_OUT"
echo
node bench/probes/tz_peers.mjs "$BENCH_OUT"
echo
echo "In workerd (the release wasm in Miniflare, \`bench/probes/tz_wasm.mjs\`: \`/__bench/geo\` runs 20 passes over 10 000 points in the isolate, minus the same contender's request without timed passes (parse, transfer and the untimed pass that loads its tiles); 9 samples per set):"
echo
node bench/probes/tz_wasm.mjs "$BENCH_OUT" | { grep -v '^{"rid"' || true; }
echo
# Cold start: a fresh workerd per sample (bench/probes/cold_start.mjs on the bench build), with
# the zone (the default) and with fields=country.
zone_cold="$(node bench/probes/cold_start.mjs 5 | { grep '^{"first' || true; })"
country_cold="$(node bench/probes/cold_start.mjs 5 "" "" "&fields=country" | { grep '^{"first' || true; })"
python3 - "$zone_cold" "$country_cold" build-bench/index_bg.wasm assets/tz/index.bin <<'PY'
import json, os, sys
z, c = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("| fresh isolate (workerd), median of 5 | country + zone | `fields=country` |")
print("|---|---|---|")
print(f"| first answer, open Pacific (embedded indexes, no asset read) | {z['first_geo_ms']:.1f} ms | {c['first_geo_ms']:.1f} ms |")
print(f"| next answer, warm | {z['warm_geo_ms']:.1f} ms | {c['warm_geo_ms']:.1f} ms |")
print(f"| first answer needing a tile (Büsingen: one tile fetched and verified) | {z['first_tile_ms']:.1f} ms | {c['first_tile_ms']:.1f} ms |")
print(f"\nThe wasm (bench build) is {os.path.getsize(sys.argv[3])} bytes; the combined layer's embedded `index.bin` adds {os.path.getsize(sys.argv[4])} of them.")
PY
echo
python3 - "$BENCH_OUT" <<'PY'
import json, sys
d = sys.argv[1]
tzf = json.load(open(f"{d}/tz_tzf.json"))
same, n = tzf["cities_agree"], tzf["cities_n"]
print(f"tzf-rs `DefaultFinder` names our zone for {100 * same / n:.3f}% of the {n} cities ({n - same} differ; `points/cities.tz.*.txt` in the bench output list them).")
# Differences where both answers are zones geo-tz names at the point are overlaps (the rule picks
# one); the rest are source versions (tzf-rs's data release against geo-tz's).
ours = open(f"{d}/points/cities.tz.ours.txt").read().split("\n")
tzf_ = open(f"{d}/points/cities.tz.tzf.txt").read().split("\n")
geo = [z.split("|") for z in open(f"{d}/points/cities.tz.geo-tz.txt").read().split("\n")]
overlap, other = {}, {}
for o, t, g in zip(ours, tzf_, geo):
    if o != t:
        bucket = overlap if (o in g and t in g) else other
        bucket[(o, t)] = bucket.get((o, t), 0) + 1
fmt = lambda b: ", ".join(f"{o} vs {t} ×{k}" for (o, t), k in sorted(b.items(), key=lambda x: -x[1])) or "none"
print(f"Of those, overlaps (both zones contain the city in the source; ours is the name that sorts first): {fmt(overlap)}. Other: {fmt(other)}.")
PY
