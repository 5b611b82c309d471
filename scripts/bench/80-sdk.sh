#!/usr/bin/env bash
# Section: the TypeScript SDK (clients/ts): change-page apply time, cold start vs full reload,
# bundle size (scripts/bench/sdk.mjs). Needs the worker built.
set -euo pipefail
node scripts/bench/sdk.mjs
