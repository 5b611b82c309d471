#!/usr/bin/env bash
# Setup + run: installs what is missing, builds, starts the local backend stack and the worker
# (wrangler dev on http://127.0.0.1:8787). Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
STACK_JSON="$(mktemp)"
.venv/bin/python -m stack --ready-file "$STACK_JSON" --exit-with-parent &
STACK_PID=$!
trap 'kill $STACK_PID 2>/dev/null; wait $STACK_PID 2>/dev/null; rm -f "$STACK_JSON"' EXIT INT TERM
for _ in $(seq 1 100); do [ -s "$STACK_JSON" ] && break; sleep 0.1; done
echo "[dev] backend stack: $(cat "$STACK_JSON")"
echo "[dev] user routes take a token (Authorization: Bearer): cargo run --quiet --bin dev-token -- --sub ana"
# ENVIRONMENT=development: the local, public secrets are accepted (also with an older .dev.vars).
wrangler dev --ip 127.0.0.1 --port "${PORT:-8787}" --var ENVIRONMENT:development
