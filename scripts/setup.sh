#!/usr/bin/env bash
# Installs everything the project needs, skipping what is already there, then builds the assets
# and the worker. Only package registries are used (apt or Homebrew, crates.io, npm, PyPI).
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
    [ -f /usr/share/java/junit4.jar ] || need+=(junit4)
    if [ ${#need[@]} -gt 0 ]; then
      say "apt-get install ${need[*]}"
      SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
      act $SUDO apt-get update -qq
      if [ "$PLAN" = 1 ]; then act $SUDO apt-get install -y -qq "${need[@]}"
      else DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
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

# Rust: wasm target and the exact tool versions the lockfile needs.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  act rustup target add wasm32-unknown-unknown
fi
lock_version() { awk -v n="$1" '$0=="name = \""n"\"" {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock; }
WB_VERSION="$(lock_version wasm-bindgen)"
WORKER_VERSION="$(lock_version worker)"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $NF}')" != "$WB_VERSION" ]; then
  say "cargo install wasm-bindgen-cli $WB_VERSION"
  act cargo install wasm-bindgen-cli --version "$WB_VERSION" --force
fi
if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_VERSION" ]; then
  say "cargo install worker-build $WORKER_VERSION"
  act cargo install worker-build --version "$WORKER_VERSION" --locked --force
fi

# npm: wrangler, miniflare, esbuild, binaryen, Node 22 for wrangler, pinned data packages. The
# platform packages (Node, esbuild, workerd) are optional dependencies: npm installs the one
# that matches this machine.
# node_modules/.egn-package-lock.json is the lockfile it was installed from (by content: npm
# install --package-lock-only also touches npm's own node_modules/.package-lock.json).
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.egn-package-lock.json; then
  say "npm ci"
  act npm ci --no-audit --no-fund
  act cp package-lock.json node_modules/.egn-package-lock.json
fi
if [ "$PLAN" = 0 ] && [ ! -x "node_modules/$EGN_NODE_PKG/bin/node" ]; then
  say "node_modules/$EGN_NODE_PKG is missing: npm did not install Node 22 for $EGN_PLATFORM"
  exit 1
fi

# Python venv for the local backend stack.
if [ ! -x .venv/bin/python ]; then
  say "python3 -m venv .venv"
  act python3 -m venv .venv
fi
if ! cmp -s stack/requirements.txt .venv/.requirements.installed; then
  say "pip install -r stack/requirements.txt"
  act .venv/bin/pip install -q -r stack/requirements.txt
  act cp stack/requirements.txt .venv/.requirements.installed
fi

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
    say ".dev.vars: DEV_AUTH is obsolete (ignored); user routes take a token: cargo run --bin dev-token -- --sub NAME"
  fi
fi

say "building assets and worker"
act bash scripts/build-worker.sh
if [ "$PLAN" = 1 ]; then say "plan only: nothing was changed"; else say "ready"; fi
