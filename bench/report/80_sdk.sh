#!/usr/bin/env bash
# Section: the TypeScript SDK (clients/ts): change-page apply time, cold start vs full reload,
# bundle size (bench/probes/sdk.mjs). Needs the worker built.
set -euo pipefail
[ -f build/index_bg.wasm ] || bash scripts/build-worker.sh >&2
out="${BENCH_OUT:-target/bench-report}/sdk.md"
mkdir -p "$(dirname "$out")"
node bench/probes/sdk.mjs --out "$out" >/dev/null
cat "$out"

# The SDK's correctness counts, from its own suites as they run (TAP), not typed here.
tap="${BENCH_OUT:-target/bench-report}/sdk-suites.tap"
node --test --test-concurrency=1 --test-reporter=tap clients/ts/test/conformance.test.ts \
  clients/ts/test/transport.test.ts clients/ts/test/interleave.test.ts > "$tap" 2>&1 || true
count() { grep -cE "^ *$1 [0-9]+ - $2" "$tap" || true; }
harness="$(grep -E "^ *(not )?ok [0-9]+ - [0-9]+ seeded interleavings" "$tap" | sed -E 's/^ *(not )?ok [0-9]+ - //')"
cat <<MD

### Conformance and interleavings (\`node --test\` of the SDK's suites, counted from their TAP)

| suite | passed | failed |
|---|---|---|
| store vectors (\`clients/conformance/vectors\`) | $(count ok "vector ") | $(count "not ok" "vector ") |
| transport vectors (\`clients/conformance/transport\`) | $(count ok "transport ") | $(count "not ok" "transport ") |
| interleaving harness: $harness | $(count ok "[0-9]+ seeded interleavings") | $(count "not ok" "[0-9]+ seeded interleavings") |
MD
