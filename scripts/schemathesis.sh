#!/usr/bin/env bash
# Property-based API testing of the running worker against its own OpenAPI document.
#
#   bash scripts/schemathesis.sh [--max-examples N] [--max-time SECONDS] [--seed N] [--no-build]
#                                [-- extra `schemathesis run` options]
#
# Installs schemathesis (pinned in requirements-dev.txt) into .venv if missing, builds the
# worker, starts the local stack and the worker in workerd (Miniflare, loopback only) with the
# simple HS256 user-token setup (AUTH_HS256_SECRET/AUTH_ISSUER/AUTH_AUDIENCE of
# tests/js/harness.mjs), mints a user token for it (the harness's userToken, valid for the whole
# run) and uses a random SERVICE_TOKEN as the service key, then runs
# `schemathesis run <worker>/openapi.json` with each security scheme's credential
# (schemathesis.toml `[auth.openapi.<scheme>]`). Exits non-zero on any server error, schema,
# status, header or content-type violation. Nothing leaves 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_DIR=$PWD
source scripts/env.sh >/dev/null

MAX_EXAMPLES=25
MAX_TIME=300
SEED=1
BUILD=1
EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --max-examples) MAX_EXAMPLES=$2; shift 2 ;;
    --max-time) MAX_TIME=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

[ -x .venv/bin/python ] || { echo "no .venv: run bash scripts/setup.sh" >&2; exit 1; }
want=$(sed -n 's/^schemathesis==//p' requirements-dev.txt)
have=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("schemathesis"))' 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "installing schemathesis $want into .venv" >&2
  .venv/bin/pip install -q -r requirements-dev.txt
fi

[ "$BUILD" = 1 ] && bash scripts/build-worker.sh >&2

TMP=$(mktemp -d)
LAUNCHER_PID=
cleanup() {
  local rc=$?
  if [ -n "$LAUNCHER_PID" ]; then
    kill "$LAUNCHER_PID" 2>/dev/null || true
    wait "$LAUNCHER_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT

# Launcher: stack + worker with a service key and HS256 user auth; prints one JSON line, then
# runs until killed (the stack exits with it).
SERVICE_KEY=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat > "$TMP/launch.mjs" <<'EOF'
import { AUTH, startWorker, userToken } from "./tests/js/harness.mjs";
import { startStack } from "./tests/js/stack.mjs";
// (evaluated with the repository as the working directory)
const { SERVICE_KEY, MAX_TIME } = process.env;
const stack = await startStack();
const w = await startWorker({
  bindings: { ...stack.bindings, SERVICE_TOKEN: SERVICE_KEY, ENABLE_BENCH: "false", ...AUTH },
});
// Valid for the whole run (with room for start-up and the slowest request).
const token = userToken("schemathesis", { claims: { exp: Math.floor(Date.now() / 1000) + Number(MAX_TIME) + 600 } });
console.log(JSON.stringify({ base: w.base, token }));
const stop = async () => { await w.stop(); await stack.stop?.(); process.exit(0); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
setInterval(() => {}, 1 << 30);
EOF
SERVICE_KEY=$SERVICE_KEY MAX_TIME=$MAX_TIME OPENAPI_VALIDATE=0 node --input-type=module -e "$(cat "$TMP/launch.mjs")" > "$TMP/info" &
LAUNCHER_PID=$!
for _ in $(seq 1 300); do
  [ -s "$TMP/info" ] && break
  kill -0 "$LAUNCHER_PID" 2>/dev/null || { echo "worker launcher exited" >&2; exit 1; }
  sleep 0.2
done
BASE=$(jq -r .base "$TMP/info")
USER_TOKEN=$(jq -r .token "$TMP/info")
case "$BASE" in http://127.0.0.1:*) ;; *) echo "refusing a non-loopback base $BASE" >&2; exit 1 ;; esac
echo "worker at $BASE" >&2

# The document the worker serves; until it does, the same document from the Rust side.
SCHEMA="$BASE/openapi.json"
URL_OPT=()
if [ "$(curl -s -o /dev/null -w '%{http_code}' "$SCHEMA")" != 200 ]; then
  echo "the worker does not serve /openapi.json yet: using the document from cargo test" >&2
  OPENAPI_OUT="$TMP/openapi.json" cargo test -q --lib openapi::tests::write_document >&2
  SCHEMA="$TMP/openapi.json"
  URL_OPT=(--url "$BASE")
fi

cat > "$TMP/schemathesis.toml" <<EOF
[auth.openapi.userToken]
bearer = "\${SCHEMATHESIS_USER_TOKEN}"

[auth.openapi.serviceKey]
bearer = "\${SCHEMATHESIS_SERVICE_KEY}"
EOF

CHECKS=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,unsupported_method,allow_header_conformance
# Run from target/schemathesis: its crash cache (`st replay`) and the JUnit report land there.
OUT=target/schemathesis
mkdir -p "$OUT"
set +e
(cd "$OUT" && SCHEMATHESIS_USER_TOKEN=$USER_TOKEN SCHEMATHESIS_SERVICE_KEY=$SERVICE_KEY \
  "$ROOT_DIR/.venv/bin/schemathesis" --config-file "$TMP/schemathesis.toml" run "$SCHEMA" "${URL_OPT[@]}" \
  --checks "$CHECKS" \
  --max-examples "$MAX_EXAMPLES" --max-time "$MAX_TIME" --seed "$SEED" \
  --workers 1 --request-timeout 30 --suppress-health-check all \
  --report junit --report-dir . \
  "${EXTRA[@]}")
rc=$?
set -e
exit $rc
