#!/usr/bin/env bash
# Runs every test: native core (cargo test), local stack (pytest), and the compiled worker in
# workerd via Miniflare (node --test). Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
echo "== cargo fmt --check / clippy"
cargo fmt --check
cargo clippy --all-targets -- -D warnings
cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
echo "== cargo test (native core, exactness vs oracle)"
cargo test
echo "== pytest (local backend stack)"
.venv/bin/python -m pytest -q stack/tests
echo "== Kotlin SDK (kotlinc + JUnit: conformance vectors, /openapi.json contract, integration in workerd)"
bash clients/kotlin/build.sh
echo "== node --test (compiled worker in workerd via Miniflare)"
# The TAP log is long and CI keeps only its tail, so a failure is repeated at the end: each
# failing test's name and its YAML block (error, expected/actual, stack).
mkdir -p target
if ! node --test --test-concurrency=1 "tests/js/*.test.mjs" | tee target/node-tests.tap; then
  echo "== failed node tests (from target/node-tests.tap)"
  awk '/^not ok /{on=1} on{print} on&&/^  \.\.\.$/{on=0}' target/node-tests.tap
  exit 1
fi
