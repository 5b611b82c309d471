#!/usr/bin/env bash
# Builds the runtime assets from the pinned npm data packages (reproducible: same bytes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --profile assets --quiet --bin build-assets -- --node-modules node_modules --out assets "$@"
# The console: its page and style as they are, its script bundled from www/src by esbuild
# (npm, pinned) into one file, so the page loads no inline script (the worker's CSP forbids it).
mkdir -p assets/www
find www -maxdepth 1 -type f -exec cp {} assets/www/ \;
node_modules/.bin/esbuild www/src/main.js --bundle --minify --format=esm --target=es2022 \
  --outfile=assets/www/app.js --log-level=warning
