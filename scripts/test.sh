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
stage "cargo fmt --check; cargo test, compiled once and linted by clippy as it compiles (the wasm clippy beside it)"
cargo fmt --check
# The wasm lint runs in the background, in its own target dir (one cargo holds a target dir's
# lock), beside the native compile: alone, each leaves a core idle for much of its run (long
# serial chains through syn, web-sys, worker). Then the bench build's code (feature `bench`,
# compiled out of the default build) in the same target dir, where only the crate itself is
# checked again.
( CARGO_TARGET_DIR=target/clippy-wasm cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings &&
  CARGO_TARGET_DIR=target/clippy-wasm cargo clippy --lib --target wasm32-unknown-unknown --features bench -- -D warnings
) > target/clippy-wasm.log 2>&1 &
wasm_lint=$!
# One native compile serves clippy and the tests: clippy-driver is rustc plus clippy's lints, so
# as the workspace wrapper (what `cargo clippy` sets, minus its check-only mode) it lints each
# workspace crate while compiling it for real, and the tests then run from that build. A
# separate `cargo clippy --all-targets` first compiled every crate a second time in check mode
# (2–3 minutes of this stage on 2 cores). CLIPPY_ARGS is how cargo-clippy hands `-D warnings`
# to the driver. The benches' crate (not a default member) is built and linted the same way.
# (A plain `cargo test` afterwards rebuilds only the workspace crates: the wrapper is part of
# their fingerprint. The worker crate's lib has one unhashed output for both feature sets, so a
# later run relinks it and what depends on it, about twenty seconds, not the dependencies.)
clippy_driver="$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver || true)"
[ -n "$clippy_driver" ] || { echo "clippy-driver not found: rustup component add clippy"; kill "$wasm_lint" 2>/dev/null; exit 1; }
export RUSTC_WORKSPACE_WRAPPER="$clippy_driver"
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
lint_fail() { kill "$wasm_lint" 2>/dev/null; exit 1; }
# The benches first: they build the worker crate with its `bench` feature, and its cdylib has
# one unhashed path per target dir, so building them last would relink it before the tests.
cargo test -p edge-geo-notify-benches --all-targets --no-run || lint_fail
cargo test --all-targets --no-run || lint_fail
cargo test || lint_fail
unset RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS
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
