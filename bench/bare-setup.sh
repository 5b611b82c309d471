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
if [ "${1:-}" = "--simulate" ]; then
  [ "${2:-}" = "--yes" ] || { echo "--simulate removes packages and caches of this machine: add --yes" >&2; exit 2; }
  echo "[bare] removing what scripts/setup.sh installs" >&2
  # The packages setup's Debian branch installs that a bare image lacks (the reference image
  # has jq, a JDK and python3-venv already), then what only they pulled in.
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq redis-server redis-tools chromium chromium-common \
    libokhttp-java libokio-java junit4 libandroid-json-java >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y -qq >/dev/null 2>&1 || true
  apt-get clean
  rm -f "$HOME"/.cargo/bin/{wasm-bindgen,wasm-bindgen-test-runner,wasm2es6js,worker-build,worker-codegen}
  rm -f "$HOME"/.cargo/.crates.toml "$HOME"/.cargo/.crates2.json
  rustup target remove wasm32-unknown-unknown >/dev/null 2>&1 || true
  rm -rf "$HOME/.cargo/registry" "$HOME/.cargo/git" "$HOME/.npm/_cacache" "$HOME/.cache/pip"
fi
dir="$(mktemp -d /tmp/bare-setup.XXXXXX)"
git clone -q "$ROOT" "$dir/clone"
cd "$dir/clone"
commit="$(git rev-parse --short HEAD)"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

# serve_time LOG: starts dev.sh, waits until /healthz answers, prints the seconds, stops it.
serve_time() {
  local log="$1" t0 pid code
  t0=$(date +%s.%N)
  setsid env PORT="$PORT" bash scripts/dev.sh > "$log" 2>&1 &
  pid=$!
  for (( ; ; )); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true)
    [ "$code" = 000 ] || break
    kill -0 "$pid" 2>/dev/null || { echo "[bare] dev.sh stopped before serving:" >&2; tail -30 "$log" >&2; exit 1; }
    sleep 0.5 # polls the port: the condition itself
  done
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'
  kill -- -"$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
first=$(serve_time "$dir/first.log")
cp target/setup-times.tsv "$dir/first-steps.tsv"
second=$(serve_time "$dir/second.log")
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

out="$ROOT/bench/results/bare-setup.tsv"
mkdir -p "$(dirname "$out")"
{
  printf '# commit\t%s\n# date\t%s\n# cores\t%s\n# load before\t%s\n# load after\t%s\n' \
    "$commit" "$(date -u +%Y-%m-%d)" "$(nproc)" "$load_before" "$load_after"
  printf 'first dev.sh until it serves\t0\t%s\n' "$first"
  printf 'second dev.sh (nothing changed) until it serves\t0\t%s\n' "$second"
  # setup's own steps (start and end in seconds since setup began)
  cat "$dir/first-steps.tsv"
} > "$out"
cat "$out"
rm -rf "$dir"
