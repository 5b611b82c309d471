#!/usr/bin/env bash
# Section: the cost model (bench/probes/cost.mjs): per operation, the requests, queue messages,
# Redis commands, Data API calls and Durable Object requests measured on the local stack, priced
# with bench/prices.toml, and the scenario's month beside the hosted peers. Needs the worker built.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/cost.md"
mkdir -p "$(dirname "$out")"
node bench/probes/cost.mjs --out "$out" >/dev/null
cat "$out"
