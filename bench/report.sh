#!/usr/bin/env bash
# Writes BENCHMARKS.md: one section per script in bench/report/NN_*.sh, in order, each printing
# markdown to stdout (progress goes to stderr). Run after scripts/setup.sh; needs the worker
# built (scripts/build-worker.sh) for the workerd sections. Takes ~15 min on the 2-core VM.
#   bash bench/report.sh            # every section
#   bash bench/report.sh 20 30      # only sections whose number is given (to stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export BENCH_OUT="$PWD/target/bench-report"
mkdir -p "$BENCH_OUT"
sections=(bench/report/[0-9][0-9]_*.sh)
if [ $# -gt 0 ]; then
  for n in "$@"; do bash bench/report/"$n"_*.sh; echo; done
  exit 0
fi
tmp="$(mktemp)"
for s in "${sections[@]}"; do
  echo "[bench-report] $s" >&2
  bash "$s" >> "$tmp"
  echo >> "$tmp"
done
mv "$tmp" BENCHMARKS.md && chmod 644 BENCHMARKS.md
echo "[bench-report] wrote BENCHMARKS.md" >&2
