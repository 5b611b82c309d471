#!/usr/bin/env bash
# Deploys the worker to one environment, then checks it:
#
#   bash scripts/deploy.sh --env staging|production [--provision] [--secrets FILE]
#        [--url URL [--user-token-cmd CMD | --skip-user-auth]] [--dry-run]
#
# Steps, in order (--dry-run prints the exact commands instead of running them):
#   --provision     once per environment: create its R2 bucket, KV namespace and queues (put the
#                   printed namespace id into wrangler.toml, [env.ENV], then run again without it)
#   always          check the configuration first, also with --dry-run, before anything is
#                   uploaded: `cargo run --profile assets --bin check-config` (the worker's own rules) lists every
#                   placeholder left in wrangler.toml [env.ENV] (KV ids, AUTH_ISSUER,
#                   AUTH_AUDIENCE, origins, URLs) and every secret in FILE that the deployed
#                   worker would refuse (published in this repository, a placeholder, shorter than
#                   32 bytes or under ~128 bits of entropy), by name, never by value
#   --secrets FILE  wrangler secret bulk FILE --env ENV (format: secrets.example.json), BEFORE the
#                   code, so a first deployment never serves a request without its secrets
#   always          wrangler deploy --env ENV
#   --url URL       create the collection's indexes (idempotent) and run scripts/smoke.sh
#                   against the deployment. Both read SERVICE_TOKEN from the environment (export
#                   it; it is never printed). The smoke step must prove user auth: the user token
#                   comes from USER_TOKEN in the environment, or from --user-token-cmd CMD (a
#                   command that prints one: your provider's CLI, or for HS256 setups
#                   `node scripts/dev-token.mjs --sub smoke-check` with the deployment's
#                   AUTH_* exported); --skip-user-auth skips it, with a warning
# WRANGLER_TOML=FILE uses another wrangler.toml (passed to wrangler as --config FILE).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
say() { echo "[deploy] $*" >&2; }

ENV_NAME=""; PROVISION=0; SECRETS=""; URL=""; DRY=0; TOKEN_CMD=""; SKIP_USER_AUTH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --env) ENV_NAME="${2:?--env needs a value}"; shift 2 ;;
    --provision) PROVISION=1; shift ;;
    --secrets) SECRETS="${2:?--secrets needs a value}"; shift 2 ;;
    --url) URL="${2:?--url needs a value}"; URL="${URL%/}"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --user-token-cmd) TOKEN_CMD="${2:?--user-token-cmd needs a command}"; shift 2 ;;
    --skip-user-auth) SKIP_USER_AUTH=1; shift ;;
    -h|--help) usage ;;
    *) echo "deploy: unknown argument $1" >&2; usage ;;
  esac
done
case "$ENV_NAME" in
  staging|production) ;;
  *) echo "deploy: --env staging|production is required" >&2; usage ;;
esac
# A relative secrets file is the caller's, not the repository's.
if [ -n "$SECRETS" ] && [ -d "$(dirname "$SECRETS")" ]; then
  SECRETS="$(cd "$(dirname "$SECRETS")" && pwd)/$(basename "$SECRETS")"
fi
cd "$ROOT"
source scripts/env.sh

CONFIG_ARGS=()
[ -z "${WRANGLER_TOML:-}" ] || CONFIG_ARGS=(--config "$WRANGLER_TOML")
BUCKET="$(python3 scripts/wrangler-env.py "$ENV_NAME" bucket)"
KV_ID="$(python3 scripts/wrangler-env.py "$ENV_NAME" kv_id)"
if [ "$DRY" = 0 ] && [ "$PROVISION" = 0 ] && grep -qi replace <<<"$KV_ID"; then
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
if [ -n "$URL" ] && [ "$SKIP_USER_AUTH" = 0 ] && [ -z "$TOKEN_CMD" ] && [ -z "${USER_TOKEN:-}" ] && [ "$DRY" = 0 ]; then
  say "--url: the smoke step must prove user auth: export USER_TOKEN=… (a user token of the deployment's issuer), or --user-token-cmd CMD, or pass --skip-user-auth"
  exit 1
fi
if [ -n "$TOKEN_CMD" ] && [ "$SKIP_USER_AUTH" = 1 ]; then
  say "--user-token-cmd and --skip-user-auth exclude each other"
  exit 2
fi
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
# run ARGS…: prints the command (an argument "$SERVICE_TOKEN" or "$USER_TOKEN" stays a
# reference, never the value) and runs it with the reference expanded, unless --dry-run.
run() {
  local line="" a args=()
  for a in "$@"; do
    if [ "$a" = '$SERVICE_TOKEN' ] || [ "$a" = 'Authorization: Bearer $SERVICE_TOKEN' ]; then
      line+="${line:+ }\"$a\""; args+=("${a//\$SERVICE_TOKEN/${SERVICE_TOKEN:-}}")
    elif [ "$a" = '$USER_TOKEN' ]; then
      line+="${line:+ }\"$a\""; args+=("${USER_TOKEN:-}")
    else
      line+="${line:+ }$(quote "$a")"; args+=("$a")
    fi
  done
  if [ "$DRY" = 1 ]; then echo "$line"; else say "+ $line"; "${args[@]}"; fi
}

if [ "$PROVISION" = 1 ]; then
  run wrangler r2 bucket create "$BUCKET" "${CONFIG_ARGS[@]}"
  run wrangler kv namespace create IPDB_CONFIG --env "$ENV_NAME" "${CONFIG_ARGS[@]}"
  # The events queue and its dead-letter queue (wrangler.toml [[env.*.queues.*]]).
  run wrangler queues create "edge-geo-notify-events-$ENV_NAME" "${CONFIG_ARGS[@]}"
  run wrangler queues create "edge-geo-notify-events-$ENV_NAME-dlq" "${CONFIG_ARGS[@]}"
  if grep -qi replace <<<"$KV_ID"; then
    say "put the namespace id printed above into wrangler.toml ([[env.$ENV_NAME.kv_namespaces]]), then run again without --provision"
    exit 0
  fi
fi

# The configuration check: every problem at once, before anything is uploaded (dry runs too).
CHECK_JSON="$(mktemp)"; trap 'rm -f "$CHECK_JSON"' EXIT
python3 scripts/wrangler-env.py "$ENV_NAME" check >"$CHECK_JSON"
check_args=(--wrangler-env "$CHECK_JSON")
if [ -n "$SECRETS" ] && [ -f "$SECRETS" ]; then
  check_args+=(--secrets "$SECRETS")
elif [ -n "$SECRETS" ]; then
  say "(dry run) $SECRETS does not exist: its secrets are not checked"
fi
if ! cargo run --profile assets --quiet --bin check-config -- "${check_args[@]}"; then
  say "refused: fix the problems above (nothing was uploaded)"
  exit 1
fi

# Secrets first: a new environment's first deployment then starts with them.
[ -z "$SECRETS" ] || run wrangler secret bulk "$SECRETS" --env "$ENV_NAME" "${CONFIG_ARGS[@]}"
run wrangler deploy --env "$ENV_NAME" "${CONFIG_ARGS[@]}"
if [ -n "$URL" ]; then
  run curl -fsS -X POST -H 'Authorization: Bearer $SERVICE_TOKEN' "$URL/v1/admin/indexes"
  if [ "$SKIP_USER_AUTH" = 1 ]; then
    say "WARNING: --skip-user-auth: the smoke test does not prove that user tokens are accepted"
    run bash scripts/smoke.sh "$URL" --service-key '$SERVICE_TOKEN' --skip-user-auth
  else
    if [ -n "$TOKEN_CMD" ]; then
      if [ "$DRY" = 1 ]; then
        echo "USER_TOKEN=\"\$($TOKEN_CMD)\""
      else
        say "+ USER_TOKEN=\"\$($TOKEN_CMD)\""
        USER_TOKEN="$(bash -c "$TOKEN_CMD")" || { say "--user-token-cmd failed"; exit 1; }
        [ -n "$USER_TOKEN" ] || { say "--user-token-cmd printed nothing"; exit 1; }
      fi
    fi
    run bash scripts/smoke.sh "$URL" --service-key '$SERVICE_TOKEN' --token '$USER_TOKEN'
  fi
fi
[ "$DRY" = 1 ] || say "done: $ENV_NAME"
