#!/usr/bin/env bash
# Runs every test: native core (cargo test), local stack (pytest), and the compiled worker in
# workerd via Miniflare (node --test). Exits non-zero on any failure. Each stage's wall time is
# printed at the end and kept in target/suite-times.tsv with the share of the cores left idle
# (bench/report/95_suite_times.sh reports a clean clone's times in BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
times="target/suite-times.tsv"
: > "$times"
stage_start=$(date +%s)
stage_name=""
# The machine's CPU time so far, busy and idle (jiffies, /proc/stat): each stage's line says how
# much of the cores stayed idle while it ran, which is where a reordering can still gain.
cpu_now() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat 2>/dev/null || echo "0 0"; }
read -r stage_busy stage_idle < <(cpu_now)
# Closes the running stage (if any) and opens the next one.
stage() {
  local now busy idle; now=$(date +%s)
  read -r busy idle < <(cpu_now)
  local db=$((busy - stage_busy)) di=$((idle - stage_idle))
  [ -n "$stage_name" ] && printf '%s\t%s\t%s\n' "$stage_name" "$((now - stage_start))" \
    "$(( (db + di) > 0 ? 100 * di / (db + di) : 0 ))" >> "$times"
  stage_name="$1"; stage_start=$now; stage_busy=$busy; stage_idle=$idle
  [ -n "$1" ] && echo "== $1"
  return 0
}
lane_pids=()
report_times() {
  # A stage that failed leaves node lanes running: they go too (workerd, the stacks).
  for pid in "${lane_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  stage ""
  echo "== stage times (s, then % of the cores idle)"
  column -t -s $'\t' "$times" 2>/dev/null || cat "$times"
}
trap report_times EXIT

stage "setup"
bash scripts/setup.sh
source scripts/env.sh
stage "cargo fmt --check / clippy (wasm, then native; the heavy and workers' node lanes start beside them)"
cargo fmt --check
# Two node lanes run beside the Rust compiles, each in its own process group; their TAP is
# joined to the rest's at the end. The compiles leave about half of the two cores idle (clippy
# and the tests' build wait on long single-crate steps). The heavy lane: the two 10 000-event
# fault tests spend their ~5 minutes waiting on the local stack and the queue's retry delays
# (alone, ~15 % of one core). The workers' lane: the files that only start workers (~95 CPU-s,
# no cargo). Both read only build/ and assets/, which nothing below rewrites (the scripts'
# lane's builds find them up to date).
lane() { setsid bash scripts/node-tests.sh --lane "$1" --built "target/node-$1.tap" > /dev/null 2>&1 & lane_pids+=("$!"); }
lane heavy
lane workers
# The wasm lint in the release profile, in target/: setup's release build of the worker has
# compiled every proc macro and build script it needs (for the host), so only the check itself
# runs. Measured on the 2-core machine: 44 CPU-s, against 268 in a dev-profile target dir of its
# own (which compiled syn, wasm-bindgen's macros and the build scripts again). Then the bench
# build's code (feature `bench`, compiled out of the default build): only the crates checked again.
cargo clippy --release --lib --target wasm32-unknown-unknown -- -D warnings
cargo clippy --release --lib --target wasm32-unknown-unknown --features bench -- -D warnings
# (Tried: one native compile for clippy and the tests, clippy-driver as the workspace wrapper
# while cargo test builds: slower on a clean clone, and a plain `cargo test` after it rebuilt the
# workspace crates; the wrapper is in their fingerprint. Also tried: this clippy in a target dir
# of its own, beside the wasm lint and the tests' compile: on a clean clone the two stages took
# 462 s against 467, the node lanes beside them already fill the cores, and the proc macros and
# build scripts compiled twice.)
cargo clippy --workspace --all-targets -- -D warnings
stage "cargo test --no-run (the native tests' compile)"
cargo test --no-run
# The test binaries run three at a time (scripts/cargo-tests.sh: `cargo test` runs them one
# after another, most of them waiting on a local stack, and about a core stayed idle), beside
# the Python, TypeScript and Kotlin suites and the node scripts' lane (wrangler builds,
# deploy.sh, smoke.sh: it takes the cargo lock, so it starts once the compiles are done); each
# starts its own stacks and workers on free ports. The Rust output follows theirs.
stage "cargo test (native core, exactness vs oracle) beside pytest, clients/ts, clients/kotlin and the node scripts' lane"
lane scripted
bash scripts/cargo-tests.sh 3 > target/cargo-test.log 2>&1 &
cargo_test=$!
cargo_test_done() {
  local ok=0; wait "$cargo_test" || ok=$?
  cat target/cargo-test.log
  [ "$ok" = 0 ] || { echo "cargo test failed (target/cargo-test.log)"; exit 1; }
}
trap 'kill "$cargo_test" 2>/dev/null || true; report_times' EXIT
echo "== pytest (local backend stack)"
.venv/bin/python -m pytest -q stack/tests
echo "== clients/ts (TypeScript SDK: typecheck, store against the conformance vectors, unit tests)"
node_modules/.bin/tsc -p clients/ts --noEmit
node --test --test-concurrency=1 "clients/ts/test/*.test.ts"
echo "== clients/kotlin (kotlinc + JUnit: conformance vectors, /openapi.json contract, integration in workerd)"
if [ -f /usr/share/java/okhttp.jar ] || [ "$(uname -s)" = Linux ]; then
  bash clients/kotlin/build.sh
else
  echo "skipped: the Kotlin SDK's tests need Debian's OkHttp/Okio/JUnit jars (scripts/setup.sh installs them on Debian/Ubuntu)"
fi
cargo_test_done
trap report_times EXIT
stage "node --test (compiled worker in workerd via Miniflare: the lanes started above, finishing)"
# The TAP log is long and CI keeps only its tail, so a failure is repeated at the end: each
# failing test's name and its YAML block (error, expected/actual, stack).
node_ok=0
for pid in "${lane_pids[@]}"; do wait "$pid" || node_ok=1; done
lane_pids=()
cat target/node-workers.tap target/node-scripted.tap target/node-heavy.tap > target/node-tests.tap
cat target/node-tests.tap
if [ "$node_ok" != 0 ]; then
  echo "== failed node tests (from target/node-tests.tap)"
  awk '/^not ok /{on=1} on{print} on&&/^  \.\.\.$/{on=0}' target/node-tests.tap
  exit 1
fi
