#!/usr/bin/env bash
# Section: the TypeScript SDK (clients/ts): change-page apply time, cold start vs full reload,
# bundle size (bench/probes/sdk.mjs). Needs the worker built.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/sdk.md"
mkdir -p "$(dirname "$out")"
node bench/probes/sdk.mjs --out "$out" >/dev/null
cat "$out"
