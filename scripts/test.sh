#!/usr/bin/env bash
# Runs every test: native core (cargo test), local stack (pytest), and the compiled worker in
# workerd via Miniflare (node --test). Exits non-zero on any failure. Each stage's wall time is
# printed at the end and kept in target/suite-times.tsv (scripts/bench/95-suite-times.sh reports
# a clean clone's times in BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
times="target/suite-times.tsv"
: > "$times"
stage_start=$(date +%s)
stage_name=""
# Closes the running stage (if any) and opens the next one.
stage() {
  local now; now=$(date +%s)
  [ -n "$stage_name" ] && printf '%s\t%s\n' "$stage_name" "$((now - stage_start))" >> "$times"
  stage_name="$1"; stage_start=$now
  [ -n "$1" ] && echo "== $1"
  return 0
}
report_times() {
  stage ""
  echo "== stage times (s)"
  column -t -s $'\t' "$times" 2>/dev/null || cat "$times"
}
trap report_times EXIT

stage "setup"
bash scripts/setup.sh
source scripts/env.sh
stage "cargo fmt --check / clippy"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
stage "cargo test (native core, exactness vs oracle)"
cargo test
stage "pytest (local backend stack)"
.venv/bin/python -m pytest -q stack/tests
stage "clients/ts (TypeScript SDK: typecheck, store against the conformance vectors, unit tests)"
node_modules/.bin/tsc -p clients/ts --noEmit
node --test --test-concurrency=1 "clients/ts/test/*.test.ts"
stage "clients/kotlin (kotlinc + JUnit: conformance vectors, /openapi.json contract, integration in workerd)"
if [ -f /usr/share/java/okhttp.jar ] || [ "$(uname -s)" = Linux ]; then
  bash clients/kotlin/build.sh
else
  echo "skipped: the Kotlin SDK's tests need Debian's OkHttp/Okio/JUnit jars (scripts/setup.sh installs them on Debian/Ubuntu)"
fi
stage "node --test (compiled worker in workerd via Miniflare)"
# The TAP log is long and CI keeps only its tail, so a failure is repeated at the end: each
# failing test's name and its YAML block (error, expected/actual, stack).
if ! node --test --test-concurrency=1 "tests/js/*.test.mjs" | tee target/node-tests.tap; then
  echo "== failed node tests (from target/node-tests.tap)"
  awk '/^not ok /{on=1} on{print} on&&/^  \.\.\.$/{on=0}' target/node-tests.tap
  exit 1
fi
