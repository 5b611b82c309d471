#!/usr/bin/env bash
# Section: erasing an owner with 10 000 items (DELETE /v1/admin/owners/{owner}): wall time,
# invocations, Data API and Redis calls (bench/probes/erasure.mjs). Needs the worker built.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/erasure.md"
mkdir -p "$(dirname "$out")"
node bench/probes/erasure.mjs --items 10000 --out "$out" >/dev/null
echo "## Erasing an owner"
echo
echo '`node bench/probes/erasure.mjs` (design: [privacy.md](docs/privacy.md#erase-an-owner)):'
echo
cat "$out"
