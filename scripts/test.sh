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
echo "== node --test (compiled worker in workerd via Miniflare)"
node --test --test-concurrency=1 "tests/js/*.test.mjs"
