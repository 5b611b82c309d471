#!/usr/bin/env bash
# Section: the worker over HTTP straight to workerd under wrk (Debian package, installed here when
# missing: benchmarks only, not CI), each endpoint as a ratio to a trivial one in the same run.
# The probe builds and runs the bench build (build-bench/: the trivial endpoint is `/__bench/noop`).
set -euo pipefail
command -v wrk >/dev/null || { apt-get install -y -qq wrk >&2 || { apt-get update -qq >&2 && apt-get install -y -qq wrk >&2; }; }
cat <<'MD'
## The worker over HTTP

`wrk -t1 -c8 --latency`, 3 rounds of 3 s per endpoint (endpoints alternating; medians), against
Miniflare's workerd socket on loopback (no wrangler proxy), the local stack behind it (`bench/probes/http_load.mjs`). The load generator,
workerd and the stack share the VM's 2 cores, so the ratios matter, not the absolute rates.

MD
node bench/probes/http_load.mjs 2>/dev/null | grep -v '^{"rid"'
