#!/usr/bin/env bash
# Deploys the worker to one environment, then checks it:
#
#   bash scripts/deploy.sh --env staging|production [--provision] [--secrets FILE]
#        [--url URL] [--dry-run]
#
# Steps, in order (--dry-run prints the exact commands instead of running them):
#   --provision     once per environment: create its R2 bucket and KV namespace (put the printed
#                   namespace id into wrangler.toml, [env.ENV], then run again without it)
#   always          wrangler deploy --env ENV
#   --secrets FILE  wrangler secret bulk FILE --env ENV (format: secrets.example.json)
#   --url URL       create the collection's indexes (idempotent) and run scripts/smoke.sh
#                   against the deployment; both read SERVICE_TOKEN from the environment
#                   (export it; it is never printed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
say() { echo "[deploy] $*" >&2; }

ENV_NAME=""; PROVISION=0; SECRETS=""; URL=""; DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --env) ENV_NAME="${2:?--env needs a value}"; shift 2 ;;
    --provision) PROVISION=1; shift ;;
    --secrets) SECRETS="${2:?--secrets needs a value}"; shift 2 ;;
    --url) URL="${2:?--url needs a value}"; URL="${URL%/}"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) usage ;;
    *) echo "deploy: unknown argument $1" >&2; usage ;;
  esac
done
case "$ENV_NAME" in
  staging|production) ;;
  *) echo "deploy: --env staging|production is required" >&2; usage ;;
esac
cd "$ROOT"
source scripts/env.sh

BUCKET="$(python3 scripts/wrangler-env.py "$ENV_NAME" bucket)"
KV_ID="$(python3 scripts/wrangler-env.py "$ENV_NAME" kv_id)"
if [ "$DRY" = 0 ] && [ "$PROVISION" = 0 ] && grep -q REPLACE <<<"$KV_ID"; then
  say "[env.$ENV_NAME] KV namespace id in wrangler.toml is still a placeholder; run with --provision first"
  exit 1
fi
if [ -n "$SECRETS" ] && [ "$DRY" = 0 ] && [ ! -f "$SECRETS" ]; then
  say "no secrets file $SECRETS (copy secrets.example.json and fill it in)"
  exit 1
fi
if [ -n "$URL" ] && [ "$DRY" = 0 ] && [ -z "${SERVICE_TOKEN:-}" ]; then
  say "--url needs SERVICE_TOKEN in the environment (export SERVICE_TOKEN=…)"
  exit 1
fi

quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
# run ARGS…: prints the command (an argument "$SERVICE_TOKEN" stays a reference, never the
# value) and runs it with the reference expanded, unless --dry-run.
run() {
  local line="" a args=()
  for a in "$@"; do
    if [ "$a" = '$SERVICE_TOKEN' ] || [ "$a" = 'Authorization: Bearer $SERVICE_TOKEN' ]; then
      line+="${line:+ }\"$a\""; args+=("${a//\$SERVICE_TOKEN/${SERVICE_TOKEN:-}}")
    else
      line+="${line:+ }$(quote "$a")"; args+=("$a")
    fi
  done
  if [ "$DRY" = 1 ]; then echo "$line"; else say "+ $line"; "${args[@]}"; fi
}

if [ "$PROVISION" = 1 ]; then
  run wrangler r2 bucket create "$BUCKET"
  run wrangler kv namespace create IPDB_CONFIG --env "$ENV_NAME"
  # The events queue and its dead-letter queue (wrangler.toml [[env.*.queues.*]]).
  run wrangler queues create "edge-geo-notify-events-$ENV_NAME"
  run wrangler queues create "edge-geo-notify-events-$ENV_NAME-dlq"
  if [ "$DRY" = 0 ] && grep -q REPLACE <<<"$KV_ID"; then
    say "put the namespace id printed above into wrangler.toml ([[env.$ENV_NAME.kv_namespaces]]), then run again without --provision"
    exit 0
  fi
fi
run wrangler deploy --env "$ENV_NAME"
[ -z "$SECRETS" ] || run wrangler secret bulk "$SECRETS" --env "$ENV_NAME"
if [ -n "$URL" ]; then
  run curl -fsS -X POST -H 'Authorization: Bearer $SERVICE_TOKEN' "$URL/v1/admin/indexes"
  run bash scripts/smoke.sh "$URL" --service-key '$SERVICE_TOKEN'
fi
[ "$DRY" = 1 ] || say "done: $ENV_NAME"
