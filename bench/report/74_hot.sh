#!/usr/bin/env bash
# Section: burst-only queueing (bench/probes/hot.mjs): create → badge latency for ordinary
# traffic and the Data API writes of 1 000 likes on one item, with the queue bound (default and
# every single create queued) and unbound, in one run. Needs the worker built. ~3 min.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/hot.md"
mkdir -p "$(dirname "$out")"
node bench/probes/hot.mjs --out "$out" >/dev/null
echo "## Burst-only queueing"
echo
echo '`node bench/probes/hot.mjs` (design: [api.md](docs/api.md#creating-notifications)):'
echo
cat "$out"
