#!/usr/bin/env bash
# Builds assets (if missing) and the worker bundle with tools from the registries only:
# wasm-bindgen from `cargo install`, esbuild and wasm-opt from npm.
set -euo pipefail
cd "$(dirname "$0")/.."
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
export ESBUILD_BIN="${ESBUILD_BIN:-$PWD/node_modules/@esbuild/linux-x64/bin/esbuild}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$PWD/node_modules/binaryen/bin/wasm-opt}"
bash scripts/build-assets.sh
worker-build --release
