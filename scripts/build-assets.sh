#!/usr/bin/env bash
# Builds the runtime assets from the pinned npm data packages (reproducible: same bytes).
# A file is replaced only when its bytes change, through a rename: a worker serving assets/
# while a build runs beside it (every wrangler build runs this script) never reads a
# half-written file, and a rebuild of the same inputs changes nothing on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --profile assets --quiet --bin build-assets -- --node-modules node_modules --out assets "$@"
# install_changed SRC DEST: DEST becomes a copy of SRC, unless it already is one.
install_changed() { cmp -s "$1" "$2" || { cp "$1" "$2.tmp" && mv -f "$2.tmp" "$2"; }; }
# The console: its page and style as they are, its script bundled from www/src by esbuild
# (npm, pinned) into one file, so the page loads no inline script (the worker's CSP forbids it).
mkdir -p assets/www
for f in www/*; do if [ -f "$f" ]; then install_changed "$f" "assets/www/${f#www/}"; fi; done
bundle="$(mktemp -d)"; trap 'rm -rf "$bundle"' EXIT
node_modules/.bin/esbuild www/src/main.js --bundle --minify --format=esm --target=es2022 \
  --outfile="$bundle/app.js" --log-level=warning
install_changed "$bundle/app.js" assets/www/app.js
