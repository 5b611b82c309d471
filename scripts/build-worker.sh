#!/usr/bin/env bash
# Builds assets and the worker bundle with tools from the registries only: wasm-bindgen from
# `cargo install`, esbuild and wasm-opt from npm. Skips worker-build when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
export ESBUILD_BIN="${ESBUILD_BIN:-$PWD/node_modules/@esbuild/linux-x64/bin/esbuild}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$PWD/node_modules/binaryen/bin/wasm-opt}"
bash scripts/build-assets.sh
stamp="$( (cat Cargo.toml Cargo.lock; find src -type f | sort | xargs cat) | sha256sum | cut -d' ' -f1)"
if [ -f build/index_bg.wasm ] && [ "$(cat build/.stamp 2>/dev/null)" = "$stamp" ]; then
  echo "[build-worker] up to date"
  exit 0
fi
worker-build --release
echo "$stamp" > build/.stamp
