#!/usr/bin/env bash
# Installs everything the project needs on a Debian machine with Rust and Node, skipping what is
# already there, then builds the assets and the worker. Only package registries are used.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# Debian packages: redis-server for the local stack, jq for the operating scripts, chromium for
# the console's end-to-end tests (driven by npm playwright-core, which downloads no browser);
# python3-venv where the system Python lacks it.
need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v jq >/dev/null 2>&1 || need_apt+=(jq)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
# The Kotlin SDK (clients/kotlin/build.sh): a JDK, OkHttp 3 + Okio and JUnit 4 from Debian
# (kotlinc itself comes from the npm package kotlin-compiler).
command -v javac >/dev/null 2>&1 || need_apt+=(default-jdk-headless)
[ -f /usr/share/java/okhttp.jar ] || need_apt+=(libokhttp-java)
[ -f /usr/share/java/okio.jar ] || need_apt+=(libokio-java)
[ -f /usr/share/java/junit4.jar ] || need_apt+=(junit4)
if [ ${#need_apt[@]} -gt 0 ]; then
  say "apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# Rust: wasm target and the exact tool versions the lockfile needs.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
lock_version() { awk -v n="$1" '$0=="name = \""n"\"" {getline; gsub(/version = |"/, ""); print; exit}' Cargo.lock; }
WB_VERSION="$(lock_version wasm-bindgen)"
WORKER_VERSION="$(lock_version worker)"
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $NF}')" != "$WB_VERSION" ]; then
  say "cargo install wasm-bindgen-cli $WB_VERSION"
  cargo install wasm-bindgen-cli --version "$WB_VERSION" --force
fi
if [ "$(worker-build --version 2>/dev/null | awk '{print $NF}')" != "$WORKER_VERSION" ]; then
  say "cargo install worker-build $WORKER_VERSION"
  cargo install worker-build --version "$WORKER_VERSION" --locked --force
fi

# npm: wrangler, miniflare, esbuild, binaryen, Node 22 for wrangler, pinned data packages.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "npm ci"
  npm ci --no-audit --no-fund
fi

# Python venv for the local backend stack.
if [ ! -x .venv/bin/python ]; then
  say "python3 -m venv .venv"
  python3 -m venv .venv
fi
if ! cmp -s stack/requirements.txt .venv/.requirements.installed; then
  say "pip install -r stack/requirements.txt"
  .venv/bin/pip install -q -r stack/requirements.txt
  cp stack/requirements.txt .venv/.requirements.installed
fi

# Local secrets file for wrangler dev (git-ignored), from the documented example. An older copy
# gets the example's variables it lacks (e.g. the AUTH_* of user tokens), appended; its own
# values are kept. DEV_AUTH is no longer read by the worker.
if [ ! -f .dev.vars ]; then
  cp .dev.vars.example .dev.vars
else
  while IFS= read -r line; do
    name="${line%%=*}"
    if ! grep -q "^[[:space:]]*$name[[:space:]]*=" .dev.vars; then
      say ".dev.vars: adding $name from .dev.vars.example"
      printf '%s\n' "$line" >> .dev.vars
    fi
  done < <(grep -E '^[A-Z][A-Z0-9_]*=' .dev.vars.example)
  if grep -q '^[[:space:]]*DEV_AUTH[[:space:]]*=' .dev.vars; then
    say ".dev.vars: DEV_AUTH is obsolete (ignored); user routes take a token: cargo run --bin dev-token -- --sub NAME"
  fi
fi

say "building assets and worker"
bash scripts/build-worker.sh
say "ready"
