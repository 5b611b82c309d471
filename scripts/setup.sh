#!/usr/bin/env bash
# Installs everything the project needs, skipping what is already there, then builds the assets
# and the worker. Only package registries are used (apt or Homebrew, crates.io, npm, PyPI).
# Downloads (apt, npm, pip) run beside the compiles; each step's wall time goes to
# target/setup-times.tsv (BENCHMARKS.md "Suite times" shows a bare machine's).
#
#   bash scripts/setup.sh          # do it
#   bash scripts/setup.sh --plan   # print what it would do on this machine, change nothing
#
# Platforms: Debian/Ubuntu (apt-get), macOS (Homebrew); anything else gets the list of what to
# install and a non-zero exit. Rust (rustup), Node >= 20 with npm and Python 3 are prerequisites
# everywhere. For tests: SETUP_PLATFORM=debian|macos|other overrides the detection, and
# SETUP_MISSING / SETUP_PRESENT (comma-separated command names) pretend a command is absent /
# present.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
PLAN=0
case "${1:-}" in
  --plan) PLAN=1 ;;
  "") ;;
  *) echo "usage: bash scripts/setup.sh [--plan]" >&2; exit 64 ;;
esac
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
# Runs a command, or in --plan prints it.
act() {
  if [ "$PLAN" = 1 ]; then printf '[setup] would run: %s\n' "$*"; else "$@"; fi
}
have() {
  case ",${SETUP_MISSING:-}," in *",$1,"*) return 1 ;; esac
  case ",${SETUP_PRESENT:-}," in *",$1,"*) return 0 ;; esac
  command -v "$1" >/dev/null 2>&1
}
has_venv() {
  case ",${SETUP_MISSING:-}," in *",python3-venv,"*) return 1 ;; esac
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1
}

# --- Steps ------------------------------------------------------------------------------------
# On a bare machine most of the first run is compiling (the two build tools, the asset builder,
# the worker) and the rest is waiting on the network or dpkg. With two cores a compile keeps both
# busy and a download neither, so the waits (apt, npm, pip) run in the background beside the
# compiles. Each step's output goes to target/setup-logs/<step>.log and its start and end
# (seconds since setup began) to target/setup-times.tsv; a failed step prints its log's tail.
LOGS=target/setup-logs
TIMES=target/setup-times.tsv
# Seconds with a fraction where bash has them (bash >= 5), else whole seconds (macOS's bash 3.2).
now() { if [ -n "${EPOCHREALTIME:-}" ]; then echo "${EPOCHREALTIME/,/.}"; else date +%s; fi; }
T0=$(now)
if [ "$PLAN" = 0 ]; then mkdir -p "$LOGS"; : > "$TIMES"; fi
STEP_NAMES=() STEP_PIDS=()
elapsed() { awk -v a="$T0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# pid_of NAME: the pid of a running background step (empty when none).
pid_of() {
  local i
  for i in "${!STEP_NAMES[@]}"; do [ "${STEP_NAMES[$i]}" = "$1" ] && { echo "${STEP_PIDS[$i]}"; return; }; done
  return 0
}
# step NAME CMD…: runs CMD with its output in the step's log, records its times.
step() {
  local name="$1"; shift
  local log="$LOGS/${name//[^A-Za-z0-9._-]/_}.log" start rc=0
  start=$(elapsed)
  # In the background and waited for: a command on the left of `||` would run with `set -e`
  # off, so a step function could fail half-way and still return 0.
  "$@" > "$log" 2>&1 &
  wait "$!" || rc=$?
  if [ "$rc" = 0 ]; then
    printf '%s\t%s\t%s\n' "$name" "$start" "$(elapsed)" >> "$TIMES"
  else
    say "step '$name' failed (exit $rc); the end of $log:"
    tail -n 40 "$log" >&2
    return "$rc"
  fi
}
# bg NAME CMD…: starts a step in the background (in --plan: prints it).
bg() {
  local name="$1"; shift
  if [ "$PLAN" = 1 ]; then printf '[setup] would run: %s\n' "$*"; return 0; fi
  say "$name: started"
  step "$name" "$@" &
  STEP_NAMES+=("$name"); STEP_PIDS+=("$!")
}
# fg NAME CMD…: a step in the foreground (in --plan: prints it).
fg() {
  local name="$1"; shift
  if [ "$PLAN" = 1 ]; then printf '[setup] would run: %s\n' "$*"; return 0; fi
  say "$name"
  step "$name" "$@"
}
# await NAME…: waits for background steps; stops setup if one failed.
await() {
  local name pid
  for name in "$@"; do
    pid="$(pid_of "$name")"
    [ -n "$pid" ] || continue
    if ! wait "$pid"; then
      say "stopping: '$name' failed"
      exit 1
    fi
    say "$name: done ($(elapsed) s)"
  done
}
# A failed or interrupted setup leaves no step running (bash runs no job control here, so a
# step's children are found by parent pid).
kill_tree() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done; kill "$1" 2>/dev/null || true; }
trap 'rc=$?; [ "$rc" = 0 ] || for p in "${STEP_PIDS[@]+"${STEP_PIDS[@]}"}"; do kill_tree "$p"; done' EXIT

platform="${SETUP_PLATFORM:-}"
if [ -z "$platform" ]; then
  if [ "$(uname -s)" = Darwin ]; then platform=macos
  elif [ -r /etc/os-release ] && grep -qiE '^(ID|ID_LIKE)=.*(debian|ubuntu)' /etc/os-release && command -v apt-get >/dev/null 2>&1; then platform=debian
  else platform=other
  fi
fi
say "platform: $platform ($EGN_PLATFORM)"

# Prerequisites on every platform: setup does not install a toolchain.
prereq=()
have cargo && have rustup || prereq+=("Rust via rustup (https://rustup.rs), stable toolchain")
have node && have npm || prereq+=("Node >= 20 with npm (wrangler then runs on the Node 22 that npm installs)")
have python3 || prereq+=("Python 3 (python3)")
if [ ${#prereq[@]} -gt 0 ]; then
  say "missing prerequisites, install them first:"
  printf '  - %s\n' "${prereq[@]}"
  exit 1
fi

# System packages: redis-server for the local stack, jq for the operating scripts, chromium for
# the console's end-to-end tests (driven by npm playwright-core, which downloads no browser), a
# Python with venv.
case "$platform" in
  debian)
    need=()
    have redis-server || need+=(redis-server)
    have jq || need+=(jq)
    have chromium || need+=(chromium)
    has_venv || need+=(python3-venv)
    # The Kotlin SDK (clients/kotlin/build.sh): a JDK, OkHttp 3 + Okio and JUnit 4 from Debian
    # (kotlinc itself comes from the npm package kotlin-compiler).
    have javac || need+=(default-jdk-headless)
    [ -f /usr/share/java/okhttp.jar ] || need+=(libokhttp-java)
    [ -f /usr/share/java/okio.jar ] || need+=(libokio-java)
    [ -f /usr/share/java/com.android.json.jar ] || need+=(libandroid-json-java)
    [ -f /usr/share/java/junit4.jar ] || need+=(junit4)
    if [ ${#need[@]} -gt 0 ]; then
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      if [ "$PLAN" = 1 ]; then
        act $SUDO apt-get update -qq
        act $SUDO apt-get install -y -qq "${need[@]}"
      else
        # sudo asks for its password here, in the foreground, not in the middle of the compiles.
        [ -z "$SUDO" ] || $SUDO -v
        apt_install() { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; }
        bg "apt-get install ${need[*]}" apt_install "${need[@]}"
        APT_STEP="apt-get install ${need[*]}"
      fi
    fi
    ;;
  macos)
    if ! have brew; then
      say "Homebrew is missing: install it from https://brew.sh, then run this again"
      exit 1
    fi
    need=()
    have redis-server || need+=(redis)
    have jq || need+=(jq)
    has_venv || need+=(python)
    if [ ${#need[@]} -gt 0 ]; then
      say "brew install ${need[*]}"
      act brew install "${need[@]}"
    fi
    say "the Kotlin SDK's tests need Debian's OkHttp/Okio/JUnit jars: scripts/test.sh skips them here"
    if ! have chromium && [ ! -x /Applications/Chromium.app/Contents/MacOS/Chromium ]; then
      say "chromium not found: only the console's browser tests need it; they are skipped."
      say "  to run them: brew install --cask chromium (or set CHROMIUM_BIN)"
    fi
    ;;
  *)
    say "unsupported platform: setup knows apt (Debian/Ubuntu) and Homebrew (macOS)."
    say "Install these with your package manager:"
    mark() { if "$@"; then echo "present"; else echo "MISSING"; fi; }
    echo "  - redis-server >= 7          $(mark have redis-server)"
    echo "  - jq                         $(mark have jq)"
    echo "  - python3 with venv/ensurepip $(mark has_venv)"
    echo "  - chromium (browser tests)   $(mark have chromium)"
    echo "  - a Linux x86-64/arm64 or macOS arm64/x86-64 machine: npm has Node 22, workerd and esbuild only for those"
    say "then run the project steps by hand: the lines after the apt-get ones in"
    say "  SETUP_PLATFORM=debian bash scripts/setup.sh --plan"
    exit 2
    ;;
esac

# npm: wrangler, miniflare, esbuild, binaryen, Node 22 for wrangler, the Kotlin compiler, pinned
# data packages. The platform packages (Node, esbuild, workerd) are optional dependencies: npm
# installs the one that matches this machine.
# node_modules/.egn-package-lock.json is the lockfile it was installed from (by content: npm
# install --package-lock-only also touches npm's own node_modules/.package-lock.json).
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.egn-package-lock.json; then
  npm_ci() { npm ci --no-audit --no-fund && cp package-lock.json node_modules/.egn-package-lock.json; }
  if [ "$PLAN" = 1 ]; then act npm ci --no-audit --no-fund; else bg "npm ci" npm_ci; fi
fi

# Python venv for the local backend stack (after apt when apt brings python3-venv).
if [ ! -x .venv/bin/python ] || ! cmp -s stack/requirements.txt .venv/.requirements.installed; then
  venv() {
    { [ -x .venv/bin/pip ] || python3 -m venv .venv; } &&
      .venv/bin/pip install -q -r stack/requirements.txt &&
      cp stack/requirements.txt .venv/.requirements.installed
  }
  if [ "$PLAN" = 1 ]; then
    [ -x .venv/bin/pip ] || act python3 -m venv .venv
    act .venv/bin/pip install -q -r stack/requirements.txt
  elif has_venv; then bg "python venv + pip" venv
  else
    # python3-venv comes with the apt step: wait for it (a sibling, so by polling its pid).
    apt_pid="$(pid_of "${APT_STEP:-}")"
    venv_after_apt() { while [ -n "$apt_pid" ] && kill -0 "$apt_pid" 2>/dev/null; do sleep 1; done; venv; }
    bg "python venv + pip" venv_after_apt
  fi
fi

# Rust: the wasm target and the exact tool versions the lockfile needs. The two build tools are
# compiled at opt-level 0 without debug info: their own speed hardly matters (wasm-bindgen takes
# 1.3 s instead of 0.3 s on this worker), and a full release build of them was 6 of a bare
# machine's 11 minutes. Only the `wasm-bindgen` binary, without TLS (only its test runner
# downloads anything). One after the other in one target dir (target/tools), so the
# dependencies they share compile once and a version bump rebuilds only what changed; at a lower
# CPU priority, so the asset builder and the worker, which the first serve waits for, go first.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  fg "rustup target add wasm32-unknown-unknown" rustup target add wasm32-unknown-unknown
fi
lock_version() { awk -v n="$1" '$0=="name = \""n"\"" {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock; }
WB_VERSION="$(lock_version wasm-bindgen)"
WORKER_VERSION="$(lock_version worker)"
tools=()
[ "$(wasm-bindgen --version 2>/dev/null | awk '{print $NF}')" = "$WB_VERSION" ] ||
  tools+=("wasm-bindgen-cli $WB_VERSION")
[ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" = "$WORKER_VERSION" ] ||
  tools+=("worker-build $WORKER_VERSION")
install_tools() {
  local cheap=(env CARGO_TARGET_DIR="$PWD/target/tools" CARGO_PROFILE_RELEASE_OPT_LEVEL=0
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256
    CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_INCREMENTAL=false nice -n 10)
  local t
  for t in "$@"; do
    case "$t" in
      wasm-bindgen-cli*) "${cheap[@]}" cargo install wasm-bindgen-cli --version "$WB_VERSION" --force \
        --bin wasm-bindgen --no-default-features || return ;;
      worker-build*) "${cheap[@]}" cargo install worker-build --version "$WORKER_VERSION" --locked --force || return ;;
    esac
  done
}
TOOLS_STEP="cargo install ${tools[*]:-}"
if [ ${#tools[@]} -gt 0 ]; then
  if [ "$PLAN" = 1 ]; then
    for t in "${tools[@]}"; do
      case "$t" in
        wasm-bindgen-cli*) act cargo install wasm-bindgen-cli --version "$WB_VERSION" --force --bin wasm-bindgen --no-default-features ;;
        worker-build*) act cargo install worker-build --version "$WORKER_VERSION" --locked --force ;;
      esac
    done
    say "(the tools build at opt-level 0, in target/tools, at nice 10)"
  else bg "$TOOLS_STEP" install_tools "${tools[@]}"
  fi
fi
# The asset builder compiles while npm downloads the data it reads; the two other tools that
# scripts run (deploy.sh's check-config, publish-ipdb.sh's ipdb-check) link from the same
# compile, so their first run does not build the workspace again in another profile.
bg "compile the asset builder" cargo build --profile assets --quiet --bin build-assets --bin check-config --bin ipdb-check

# Local secrets file for wrangler dev (git-ignored), from the documented example. An older copy
# gets the example's variables it lacks (e.g. the AUTH_* of user tokens), appended; its own
# values are kept. DEV_AUTH is no longer read by the worker.
if [ ! -f .dev.vars ]; then
  act cp .dev.vars.example .dev.vars
else
  while IFS= read -r line; do
    name="${line%%=*}"
    if ! grep -q "^[[:space:]]*$name[[:space:]]*=" .dev.vars; then
      say ".dev.vars: adding $name from .dev.vars.example"
      if [ "$PLAN" = 0 ]; then printf '%s\n' "$line" >> .dev.vars; fi
    fi
  done < <(grep -E '^[A-Z][A-Z0-9_]*=' .dev.vars.example)
  if grep -q '^[[:space:]]*DEV_AUTH[[:space:]]*=' .dev.vars; then
    say ".dev.vars: DEV_AUTH is obsolete (ignored); user routes take a token: node scripts/dev-token.mjs --sub NAME"
  fi
fi


await "npm ci"
if [ "$PLAN" = 0 ] && [ ! -x "node_modules/$EGN_NODE_PKG/bin/node" ]; then
  say "node_modules/$EGN_NODE_PKG is missing: npm did not install Node 22 for $EGN_PLATFORM"
  exit 1
fi
await "compile the asset builder"
fg "build assets" bash scripts/build-assets.sh
# The worker's wasm compiles while the tools may still be compiling; worker-build then finds it
# built (scripts/build-worker.sh --compile-only runs the same cargo command worker-build runs).
fg "compile the worker (wasm, release)" bash scripts/build-worker.sh --compile-only --no-assets
await "$TOOLS_STEP"
fg "bundle the worker (worker-build)" bash scripts/build-worker.sh --no-assets
await "${APT_STEP:-}" "python venv + pip"
if [ "$PLAN" = 1 ]; then say "plan only: nothing was changed"; else say "ready in $(elapsed) s (step times: $TIMES)"; fi
