#!/usr/bin/env bash
# Times the README's first command on a bare machine: a clean clone of HEAD, `scripts/dev.sh`,
# until the worker answers on /healthz; then a second `dev.sh` with nothing changed. Writes
# bench/results/bare-setup.tsv (committed), which BENCHMARKS.md "Suite times" shows
# (bench/report/95_suite_times.sh), with setup's own step times beside it.
#
#   bash bench/bare-setup.sh                    # on a machine where nothing of the project is
#                                               # installed (a new CI or cloud VM)
#   bash bench/bare-setup.sh --simulate --yes   # Debian: first remove what setup installs
#                                               # (DESTRUCTIVE: the Debian packages below, the
#                                               # cargo-installed tools, the wasm target, cargo's
#                                               # and npm's download caches)
#
# Run it on an idle machine: the load average before and after is recorded beside the times.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PORT="${PORT:-8797}"
mode=bare
if [ "${1:-}" = "--simulate" ]; then
  mode=simulated
  [ "${2:-}" = "--yes" ] || { echo "--simulate removes packages and caches of this machine: add --yes" >&2; exit 2; }
  echo "[bare] removing what scripts/setup.sh installs" >&2
  # The packages setup's Debian branch installs that a bare image lacks (the reference image
  # has jq, a JDK and python3-venv already), then what only they pulled in. Only installed
  # names are given to apt (an unknown one would stop the whole purge).
  pkgs=()
  for p in redis-server redis-tools chromium chromium-common libokhttp-java libokio-java junit4 libandroid-json-java; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && pkgs+=("$p")
  done
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if [ ${#pkgs[@]} -gt 0 ]; then $SUDO env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${pkgs[@]}" >/dev/null; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null
  $SUDO apt-get clean
  cargo uninstall wasm-bindgen-cli worker-build >/dev/null 2>&1 || true
  rustup target remove wasm32-unknown-unknown >/dev/null 2>&1 || true
  CH="${CARGO_HOME:-$HOME/.cargo}"
  rm -rf "$CH/registry" "$CH/git" "$HOME/.npm/_cacache" "$HOME/.cache/pip"
  for c in redis-server chromium wasm-bindgen worker-build; do
    if command -v "$c" >/dev/null 2>&1; then echo "[bare] $c is still installed: not a bare machine" >&2; exit 1; fi
  done
fi
dir="$(mktemp -d /tmp/bare-setup.XXXXXX)"
git clone -q "$ROOT" "$dir/clone"
cd "$dir/clone"
commit="$(git rev-parse --short HEAD)"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/"; then
  echo "[bare] something already answers on port $PORT: stop it or set PORT" >&2; exit 1
fi
dev_pid=""
# Whatever happens, no dev.sh (wrangler, workerd, the stack) is left running, nor the clone.
trap '[ -z "$dev_pid" ] || kill -- -"$dev_pid" 2>/dev/null; rm -rf "$dir"' EXIT INT TERM

# serve_time LOG: starts dev.sh, waits until /healthz answers 200, prints the seconds, stops it.
serve_time() {
  local log="$1" t0 pid code
  t0=$(date +%s.%N)
  setsid env PORT="$PORT" bash scripts/dev.sh > "$log" 2>&1 &
  pid=$!
  dev_pid=$pid
  for (( ; ; )); do
    code=$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)
    [ "$code" = 200 ] && break
    kill -0 "$pid" 2>/dev/null || { echo "[bare] dev.sh stopped before serving:" >&2; tail -30 "$log" >&2; exit 1; }
    sleep 0.5 # polls the port: the condition itself
  done
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'
  kill -- -"$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  dev_pid=""
  # Until the port is free again, so the second run cannot be answered by the first's workerd.
  while curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/"; do sleep 0.2; done
}
first=$(serve_time "$dir/first.log")
cp target/setup-times.tsv "$dir/first-steps.tsv"
second=$(serve_time "$dir/second.log")
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

out="$ROOT/bench/results/bare-setup.tsv"
mkdir -p "$(dirname "$out")"
{
  printf '# commit\t%s\n# date\t%s\n# cores\t%s\n# load before\t%s\n# load after\t%s\n# mode\t%s\n' \
    "$commit" "$(date -u +%Y-%m-%d)" "$(nproc)" "$load_before" "$load_after" "$mode"
  printf 'first dev.sh until it serves\t0\t%s\n' "$first"
  printf 'second dev.sh (nothing changed) until it serves\t0\t%s\n' "$second"
  # setup's own steps (start and end in seconds since setup began)
  cat "$dir/first-steps.tsv"
} > "$out"
cat "$out"
