#!/usr/bin/env bash
# Setup + run: installs what is missing, builds, starts the local backend stack and the worker
# (wrangler dev on http://127.0.0.1:8787). Ctrl-C stops everything.
#
#   HOST=0.0.0.0 bash scripts/dev.sh   # also serve phones on the same network (prints a warning,
#                                      # the LAN URL and a dev token)
#   PORT=8788 bash scripts/dev.sh      # another port
set -euo pipefail
cd "$(dirname "$0")/.."
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8787}"
bash scripts/setup.sh
source scripts/env.sh
STACK_JSON="$(mktemp)"
.venv/bin/python -m stack --ready-file "$STACK_JSON" --exit-with-parent &
STACK_PID=$!
trap 'kill $STACK_PID 2>/dev/null; wait $STACK_PID 2>/dev/null; rm -f "$STACK_JSON"' EXIT INT TERM
for _ in $(seq 1 100); do [ -s "$STACK_JSON" ] && break; sleep 0.1; done
echo "[dev] backend stack: $(cat "$STACK_JSON")"

# The first address of this machine on the local network (Linux, then macOS).
lan_ip() {
  local ip=""
  if command -v hostname >/dev/null 2>&1; then ip="$(hostname -I 2>/dev/null | awk '{print $1}')"; fi
  if [ -z "$ip" ] && command -v ipconfig >/dev/null 2>&1; then
    ip="$(ipconfig getifaddr en0 2>/dev/null || ipconfig getifaddr en1 2>/dev/null || true)"
  fi
  echo "${ip:-your-LAN-address}"
}

TOKEN="$(node scripts/dev-token.mjs --sub ana --ttl 86400 || echo "(none: node scripts/dev-token.mjs failed; the worker serves all the same)")"
if [ "$HOST" != "127.0.0.1" ] && [ "$HOST" != "localhost" ]; then
  cat <<EOF
[dev] WARNING: serving on $HOST: anyone on this network can reach this worker, and the local
[dev]          secrets in .dev.vars (the dev service token, the HS256 dev secret) are public
[dev]          values. Use it on a network you trust, and only with the local stack's data.
[dev] LAN URL:   http://$(lan_ip):$PORT   (from a phone on the same Wi-Fi)
EOF
fi
echo "[dev] local:     http://127.0.0.1:$PORT"
echo "[dev] dev token for user 'ana' (24 h; another: node scripts/dev-token.mjs --sub NAME):"
echo "$TOKEN"
# ENVIRONMENT=development: the local, public secrets are accepted (also with an older .dev.vars).
wrangler dev --ip "$HOST" --port "$PORT" --var ENVIRONMENT:development
