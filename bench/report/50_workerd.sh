#!/usr/bin/env bash
# Section: the compiled worker inside workerd (Miniflare): bundle size of the deployed build
# (build/), then cold start, tiles, IP, IPDB swap of the bench build (build-bench/, the same
# worker with `/__bench/*`; bench/probes/worker.mjs builds it).
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
cat <<MD
## In workerd

The release wasm in Miniflare's workerd on loopback (\`node bench/probes/worker.mjs\`). Bundle:
$(wc -c < build/index_bg.wasm) bytes of wasm, $(cat build/index_bg.wasm build/index.js | gzip -9 | wc -c) bytes gzipped
with its JS shim (Workers free plan limit: 3 MiB gzip); it embeds \`index.bin\`, so a fresh isolate
answers most points without reading an asset.

MD
node bench/probes/worker.mjs 2>/dev/null | { grep -v -e '^{"rid"' -e '^ipdb swapped' || true; }
