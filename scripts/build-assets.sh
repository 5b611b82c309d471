#!/usr/bin/env bash
# Builds the runtime assets from the pinned npm data packages (reproducible: same bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release --quiet --bin build-assets -- --node-modules node_modules --out assets "$@"
mkdir -p assets/www
cp -R www/. assets/www/
