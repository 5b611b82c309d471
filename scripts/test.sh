#!/usr/bin/env bash
# Runs every test: native core (cargo test), local stack (pytest), and the compiled worker in
# workerd via Miniflare (node --test). Exits non-zero on any failure. Each stage's wall time is
# printed at the end and kept in target/suite-times.tsv (bench/report/95_suite_times.sh reports
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
stage "cargo fmt --check / clippy (native; the wasm clippy starts beside it)"
cargo fmt --check
# The wasm lint runs in the background, in its own target dir (one cargo holds a target dir's
# lock), beside the native clippy and then beside cargo test's compile: alone, each of these
# leaves a core idle for much of its run (long serial chains through syn, web-sys, worker).
# Then the bench build's code (feature `bench`, compiled out of the default build) in the same
# target dir, where only the crate itself is checked again.
( CARGO_TARGET_DIR=target/clippy-wasm cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings &&
  CARGO_TARGET_DIR=target/clippy-wasm cargo clippy --lib --target wasm32-unknown-unknown --features bench -- -D warnings
) > target/clippy-wasm.log 2>&1 &
wasm_lint=$!
# (Tried: one native compile for both, clippy-driver as the workspace wrapper while cargo test
# builds, the benches' crate built for real. Two clean-clone runs on one day: 472 s for this and
# the next stage against 515 s. Not kept for now: a plain `cargo test` after it recompiles the
# workspace crates (the wrapper is in their fingerprint), the worker crate's unhashed lib is
# relinked on every later run, and egn-http's bench-only tests went unlinted.)
cargo clippy --workspace --all-targets -- -D warnings || { kill "$wasm_lint" 2>/dev/null; exit 1; }
stage "cargo test (native core, exactness vs oracle; the wasm clippy finishing beside it)"
cargo test || { kill "$wasm_lint" 2>/dev/null; exit 1; }
wasm_ok=0; wait "$wasm_lint" || wasm_ok=$?
cat target/clippy-wasm.log
[ "$wasm_ok" = 0 ] || { echo "clippy (wasm32) failed"; exit 1; }
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
if ! bash scripts/node-tests.sh target/node-tests.tap; then
  echo "== failed node tests (from target/node-tests.tap)"
  awk '/^not ok /{on=1} on{print} on&&/^  \.\.\.$/{on=0}' target/node-tests.tap
  exit 1
fi
