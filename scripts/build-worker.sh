#!/usr/bin/env bash
# Builds assets and the worker bundle with tools from the registries only: wasm-bindgen from
# `cargo install`, esbuild and wasm-opt from npm. Skips worker-build when nothing changed.
#   bash scripts/build-worker.sh           # build/: what wrangler deploys (no /__bench code)
#   bash scripts/build-worker.sh --bench   # build-bench/: with the cargo feature `bench`, for
#                                          # the probes in bench/ only; never deploy it
# For scripts/setup.sh, which overlaps the steps of a first run:
#   --compile-only   only the wasm compile (the cargo command worker-build runs), so it can run
#                    while worker-build itself is still being installed; worker-build then finds
#                    it built
#   --no-assets      skip scripts/build-assets.sh (setup has just run it)
#   --check          build nothing and take no cargo lock: exit 0 if build/ is up to date for
#                    the sources and the assets as they are, 3 if not (scripts/node-tests.sh
#                    uses it to start a lane beside a running cargo command)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out=build features="" wasm_target_dir="" compile_only=0 assets=1 check=0
for arg in "$@"; do
  case "$arg" in
    --bench)
      out=build-bench features="--features bench"
      # Its own target dir for the wasm: cargo writes a cdylib to one unhashed path per target
      # dir, so the two builds there would overwrite each other's .wasm and rebuild the crate on
      # every switch. (The asset build below stays in the usual one.)
      wasm_target_dir="${CARGO_TARGET_DIR:-$PWD/target}/bench-wasm" ;;
    --compile-only) compile_only=1 ;;
    --no-assets) assets=0 ;;
    --check) check=1 assets=0 ;;
    *) echo "usage: bash scripts/build-worker.sh [--bench] [--compile-only] [--no-assets] [--check]" >&2; exit 2 ;;
  esac
done
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$HOME/.cargo/bin/wasm-bindgen}"
# esbuild's binary for this platform (scripts/env.sh picks the package: linux/darwin, x64/arm64).
export ESBUILD_BIN="${ESBUILD_BIN:-$PWD/node_modules/$EGN_ESBUILD_PKG/bin/esbuild}"
export WASM_OPT_BIN="${WASM_OPT_BIN:-$PWD/node_modules/binaryen/bin/wasm-opt}"
[ "$assets" = 0 ] || bash scripts/build-assets.sh
# sha256sum (GNU coreutils) or shasum (macOS).
sha256() { if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi; }
# The stamp covers every input of build/ (or build-bench/): the workspace's sources and lockfile,
# this script, the npm lockfile (esbuild, binaryen), the tool versions, the cargo features,
# assets/geo/index.bin, assets/tz/index.bin and assets/ip/country/dir.bin, which the wasm embeds (src/edge/geo.rs,
# src/edge/ip/mod.rs). The rest of assets/ and www/ are not inputs of the bundle:
# build-assets.sh above rebuilds and checks them on every run.
stamp="$( (cat Cargo.toml Cargo.lock package-lock.json "$0" assets/geo/index.bin assets/tz/index.bin assets/ip/country/dir.bin;
  find src crates -type f -not -path "crates/*/target/*" | sort | xargs cat;
  # The files whose published values crates/core/build.rs compiles in.
  sed -n '/PUBLISHED_FILES: /,/^];/p' crates/core/src/config/secrets/extract.rs | grep -o '"[^"]*"' | tr -d '"' | xargs cat;
  "$WASM_BINDGEN_BIN" --version 2>/dev/null; worker-build --version 2>/dev/null; echo "$features") | sha256 | cut -d' ' -f1)"
if [ -f "$out/index_bg.wasm" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "[build-worker] $out/ up to date"
  exit 0
fi
[ "$check" = 0 ] || { echo "[build-worker] $out/ is not up to date"; exit 3; }
if [ "$compile_only" = 1 ]; then
  # Exactly worker-build's compile (worker-build 0.8: src/build/target.rs cargo_build_wasm), so
  # its own run is then a no-op for cargo.
  # shellcheck disable=SC2086 # empty, or two words
  env ${wasm_target_dir:+"CARGO_TARGET_DIR=$wasm_target_dir"} WASM_BINDGEN_USE_JS_SYS=1 \
    cargo build --lib --release --target wasm32-unknown-unknown $features
  exit 0
fi
# worker-build passes what follows its own options to `cargo build`.
# shellcheck disable=SC2086 # empty, or two words
env ${wasm_target_dir:+"CARGO_TARGET_DIR=$wasm_target_dir"} worker-build --release --out-dir "$out" $features
echo "$stamp" > "$out/.stamp"
