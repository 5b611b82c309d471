#!/usr/bin/env bash
# Publishes an IP database (mmdb) to one environment's hot-swap store:
#
#   bash scripts/publish-ipdb.sh FILE --env staging|production [--url URL] [--dry-run]
#        [--local [--persist-to DIR]] [--against BASELINE] [--max-disagreement SHARE]
#        [--timeout SECONDS]
#
# 1. Validates FILE with the worker's own reader (`ipdb-check`): it opens, its records carry
#    countries, and it disagrees with BASELINE (default: the bundled assets/ip/default.mmdb) on
#    at most SHARE (default 0.2) of the fixed probe set. Nothing is uploaded if this fails.
#    The same run converts FILE into the compact country table the worker serves (its directory
#    and pages, in build/ipdb/<sha256>.table/) and puts their checksums into the record.
# 2. Uploads FILE to the environment's R2 bucket as ipdb/<sha256>.mmdb, then the table as
#    ipdb/<sha256>.table/{dir.bin,page-NNN.bin} (--remote).
# 3. Then writes the version record {version, sha256, object_key, updated_at, table_key,
#    table_sha256, table_pages} to KV (--remote): last, so a worker never sees a record whose
#    objects are missing.
# 4. With --url, waits until the deployment's /healthz reports the new version.
#
# --dry-run prints the exact wrangler commands instead of running them. --local writes the same
# objects to local Miniflare state instead (what `wrangler dev --env ENV --persist-to DIR` reads).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
say() { echo "[publish-ipdb] $*" >&2; }

FILE=""; ENV_NAME=""; URL=""; DRY=0; MODE=(--remote); AGAINST=""
MAX="0.2"; TIMEOUT=300; LOCAL=0; PERSIST=""
while [ $# -gt 0 ]; do
  case "$1" in
    --env) ENV_NAME="${2:?--env needs a value}"; shift 2 ;;
    --url) URL="${2:?--url needs a value}"; URL="${URL%/}"; shift 2 ;;
    --dry-run) DRY=1; shift ;;
    --local) LOCAL=1; shift ;;
    --persist-to) PERSIST="${2:?--persist-to needs a value}"; shift 2 ;;
    --against) AGAINST="${2:?--against needs a value}"; shift 2 ;;
    --max-disagreement) MAX="${2:?--max-disagreement needs a value}"; shift 2 ;;
    --timeout) TIMEOUT="${2:?--timeout needs a value}"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "publish-ipdb: unknown option $1" >&2; usage ;;
    *) [ -z "$FILE" ] || { echo "publish-ipdb: one FILE only" >&2; usage; }; FILE="$1"; shift ;;
  esac
done
[ -n "$FILE" ] || { echo "publish-ipdb: FILE is required" >&2; usage; }
case "$ENV_NAME" in
  staging|production) ;;
  *) echo "publish-ipdb: --env staging|production is required" >&2; usage ;;
esac
[ -z "$PERSIST" ] || [ "$LOCAL" = 1 ] || { echo "publish-ipdb: --persist-to needs --local" >&2; usage; }
if [ "$LOCAL" = 1 ]; then
  MODE=(--local)
  [ -z "$PERSIST" ] || MODE+=(--persist-to "$PERSIST")
fi
# Paths as the user typed them when run from the repository root (so printed commands can be
# pasted there); absolute otherwise.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
if [ "$PWD" != "$ROOT" ]; then
  FILE="$(abs "$FILE")"; [ -z "$AGAINST" ] || AGAINST="$(abs "$AGAINST")"
  [ -z "$PERSIST" ] || { PERSIST="$(abs "$PERSIST")"; MODE=(--local --persist-to "$PERSIST"); }
fi
AGAINST="${AGAINST:-assets/ip/default.mmdb}"
cd "$ROOT"
source scripts/env.sh
for tool in jq python3; do
  command -v "$tool" >/dev/null || { echo "publish-ipdb: $tool is required (bash scripts/setup.sh)" >&2; exit 2; }
done
[ "$LOCAL" = 1 ] || [ "$DRY" = 1 ] || ! grep -q REPLACE <<<"$(python3 scripts/wrangler-env.py "$ENV_NAME" kv_id)" ||
  { echo "publish-ipdb: [env.$ENV_NAME] KV namespace id in wrangler.toml is still a placeholder" >&2; exit 1; }

BUCKET="$(python3 scripts/wrangler-env.py "$ENV_NAME" bucket)"
KV_KEY="$(python3 scripts/wrangler-env.py "$ENV_NAME" kv_key)"

# 1. Validate with the project's own reader; the same run computes the record to publish.
say "checking $FILE against $AGAINST (max disagreement $MAX)"
SHA="$( (command -v sha256sum >/dev/null && sha256sum "$FILE") || shasum -a 256 "$FILE")"; SHA="${SHA%% *}"
TABLE_DIR="build/ipdb/$SHA.table"
REPORT="$(cargo run --release --quiet --bin ipdb-check -- "$FILE" --against "$AGAINST" \
  --max-disagreement "$MAX" --updated-at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --table-out "$TABLE_DIR")" || {
  echo "$REPORT"
  say "FAILED validation: nothing was published"
  exit 1
}
echo "$REPORT" | jq -c '{ok, sha256, size, database_type, layout, agreement: (.agreement | {compared, agree, disagreement, candidate_countries})}' >&2
RECORD="$(jq -c .record <<<"$REPORT")"
OBJECT_KEY="$(jq -r .record.object_key <<<"$REPORT")"
VERSION="$(jq -r .record.version <<<"$REPORT")"
TABLE_KEY="$(jq -r .record.table_key <<<"$REPORT")"
PAGES="$(jq -r '.record.table_pages | length' <<<"$REPORT")"

# Prints a command shell-quoted (single quotes where needed) and runs it unless --dry-run.
quote() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then printf '%s' "$1"
  else printf "'%s'" "${1//\'/\'\\\'\'}"; fi
}
run() {
  local line="" a
  for a in "$@"; do line+="${line:+ }$(quote "$a")"; done
  if [ "$DRY" = 1 ]; then echo "$line"; else say "+ $line"; "$@"; fi
}

# 2. The objects first: the database, the table's directory and pages …
put() {
  run wrangler r2 object put "$BUCKET/$1" --file "$2" \
    --content-type application/octet-stream "${MODE[@]}" --env "$ENV_NAME"
}
put "$OBJECT_KEY" "$FILE"
put "$TABLE_KEY/dir.bin" "$TABLE_DIR/dir.bin"
for ((i = 0; i < PAGES; i++)); do
  page="$(printf 'page-%03d.bin' "$i")"
  put "$TABLE_KEY/$page" "$TABLE_DIR/$page"
done
# 3. … then the record that points at it.
run wrangler kv key put --binding IPDB_CONFIG "$KV_KEY" "$RECORD" "${MODE[@]}" --env "$ENV_NAME"

# 4. Wait for the deployment to serve it.
[ -n "$URL" ] || { say "published $VERSION (pass --url to wait for a deployment to serve it)"; exit 0; }
if [ "$DRY" = 1 ]; then
  echo "# then wait until $URL/healthz reports ipdb.version $VERSION"
  exit 0
fi
say "waiting up to ${TIMEOUT}s for $URL/healthz to report $VERSION"
deadline=$((SECONDS + TIMEOUT))
while :; do
  # A lookup makes the answering isolate re-check the record (after it responds) once its
  # IPDB_CHECK_INTERVAL_SECONDS have passed; /healthz then shows what it serves.
  curl -sS -o /dev/null --max-time 10 "$URL/v1/geo/ip?ip=8.8.8.8" 2>/dev/null || true
  health="$(curl -sS --max-time 10 "$URL/healthz" 2>/dev/null || true)"
  served="$(jq -r '.ipdb.version // empty' <<<"$health" 2>/dev/null || true)"
  outcome="$(jq -r '.ipdb.last_check_outcome // empty' <<<"$health" 2>/dev/null || true)"
  if [ "$served" = "$VERSION" ]; then
    say "OK: $URL serves $VERSION"
    exit 0
  fi
  case "$outcome" in
    rejected:*"$OBJECT_KEY"*)
      say "FAILED: the deployment rejected the new database: $outcome"
      exit 1 ;;
  esac
  if [ "$SECONDS" -ge "$deadline" ]; then
    say "FAILED: timed out; serving ${served:-nothing} (last check: ${outcome:-none})"
    exit 1
  fi
  sleep 1
done
