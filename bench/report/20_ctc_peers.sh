#!/usr/bin/env bash
# Section: coordinates -> country, every contender side by side (native Rust from section 10,
# shapely from PyPI, @rapideditor/country-coder from npm), their agreement with us on the
# cities, and the latency chart docs/ctc-latency.svg. shapely is a bench-only dependency
# (requirements-dev.txt, installed here into .venv; never in CI).
set -euo pipefail
[ -f "$BENCH_OUT/ctc_native.json" ] || bash bench/report/10_ctc_native.sh > /dev/null
.venv/bin/python -c "import shapely" 2>/dev/null || .venv/bin/pip install -q "$(grep "^shapely==" requirements-dev.txt)" >&2
.venv/bin/python bench/probes/ctc_shapely.py "$BENCH_OUT" >&2
node bench/probes/ctc_country_coder.mjs "$BENCH_OUT" >&2
cat <<'MD'
## Coordinates → country, all contenders

Same point sets and batches as above (each peer in its own run); shapely 2 (GEOS) answers 1 000 points per call through an
STRtree of prepared parts with our overlap rule; country-coder (`iso1A2Code`, Node 22) is its
own data (borders of the RapiD editor), so it disagrees where its polygons differ from ours.
`ours in workerd` is the wasm of the section above.

MD
node bench/probes/ctc_tables.mjs "$BENCH_OUT" docs/ctc-latency.svg
