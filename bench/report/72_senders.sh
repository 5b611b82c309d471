#!/usr/bin/env bash
# Section: exact sender counts at 10, 1 000 and 100 000 distinct senders on one item: the count
# shown, create latency, roster bytes per sender in Redis and the document's size
# (bench/probes/senders.mjs); then 100 000 senders through the queue under faults on both
# backends (bench/probes/senders_faults.mjs). Needs the worker built. ~5 min on the 2-core VM.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/senders.md"
mkdir -p "$(dirname "$out")"
node bench/probes/senders.mjs --out "$out" >/dev/null
node bench/probes/senders_faults.mjs --out "$out.faults" >/dev/null
echo "## Sender counts"
echo
echo '`node bench/probes/senders.mjs` (design: [architecture.md](docs/architecture.md#notifications)):'
echo
cat "$out"
echo
cat "$out.faults"
