#!/usr/bin/env bash
# Builds assets and the worker bundle with tools from the registries only: wasm-bindgen from
# `cargo install`, esbuild and wasm-opt from npm. Skips worker-build when nothing changed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
# esbuild's binary for this platform (scripts/env.sh picks the package: linux/darwin, x64/arm64).
export ESBUILD_BIN="${ESBUILD_BIN:-$PWD/node_modules/$EGN_ESBUILD_PKG/bin/esbuild}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$PWD/node_modules/binaryen/bin/wasm-opt}"
bash scripts/build-assets.sh
# sha256sum (GNU coreutils) or shasum (macOS).
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
# The stamp covers every input of build/ (the wasm + JS shim): the workspace's sources and lockfile,
# this script, the npm lockfile (esbuild, binaryen), the tool versions, assets/geo/index.bin and
# assets/ip/country/dir.bin, which the wasm embeds (src/edge/geo.rs, src/edge/ip/mod.rs). The rest
# of assets/ and www/ are not inputs of build/: build-assets.sh above rebuilds and checks them
# on every run.
stamp="$( (cat Cargo.toml Cargo.lock package-lock.json "$0" assets/geo/index.bin assets/ip/country/dir.bin;
  find src crates -type f -not -path "crates/*/target/*" | sort | xargs cat;
  "$WASM_BINDGEN_BIN" --version; worker-build --version) | sha256 | cut -d' ' -f1)"
if [ -f build/index_bg.wasm ] && [ "$(cat build/.stamp 2>/dev/null)" = "$stamp" ]; then
  echo "[build-worker] up to date"
  exit 0
fi
worker-build --release
echo "$stamp" > build/.stamp
