#!/usr/bin/env bash
# Publishes an IP database (mmdb) to one environment's hot-swap store:
#
#   bash scripts/publish-ipdb.sh FILE|--source URL [--maxmind] --env staging|production
#        [--url URL] [--dry-run] [--local [--persist-to DIR]] [--against BASELINE]
#        [--max-disagreement SHARE] [--timeout SECONDS]
#   bash scripts/publish-ipdb.sh --promote --env production [--from-key KEY] [--dry-run]
#
# FILE is a `.mmdb`, a `.mmdb.gz` (DB-IP) or a MaxMind `.tar.gz` (its one `.mmdb` member is
# taken). --source downloads instead, as the cron does: a URL, or a URL template whose
# {YYYY}, {MM}, {YYYYMMDD} are the current period, then the previous one if that answers 404;
# with --maxmind the download uses HTTP basic auth from the environment variables
# MAXMIND_ACCOUNT_ID and MAXMIND_LICENSE_KEY (given to curl on stdin: never on a command line,
# never printed).
#
# 1. Validates the database with the worker's own reader (`ipdb-check`): it opens, its records
#    carry countries, and it disagrees with BASELINE (default: the bundled
#    assets/ip/default.mmdb) on at most SHARE (default 0.2) of the fixed probe set. Nothing is
#    uploaded if this fails. The same run converts it into the compact country table the worker
#    serves (its directory and pages, in build/ipdb/<sha256>.table/) and puts their checksums
#    into the record.
# 2. Uploads the database to the environment's R2 bucket as ipdb/<sha256>.mmdb, then the table
#    as ipdb/<sha256>.table/{dir.bin,page-NNN.bin} (--remote).
# 3. Then writes the version record {version, sha256, object_key, updated_at, table_key,
#    table_sha256, table_pages, origin} to KV (--remote): last, so a worker never sees a record
#    whose objects are missing.
# 4. With --url, waits until the deployment's /healthz reports the new version.
#
# --promote is the operator's explicit promotion: production takes staging's current version
# now, without waiting for IPDB_PROMOTE_AFTER_HOURS. It reads staging's record (KEY: default
# production's IPDB_PROMOTE_FROM_KEY, else staging's IPDB_KV_KEY), copies every object it names
# from staging's bucket to production's, each checked against the record's SHA-256, then writes
# the record under production's key.
#
# --dry-run prints the exact wrangler commands instead of running them. --local writes the same
# objects to local Miniflare state instead (what `wrangler dev --env ENV --persist-to DIR` reads).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
say() { echo "[publish-ipdb] $*" >&2; }

FILE=""; ENV_NAME=""; URL=""; DRY=0; MODE=(--remote); AGAINST=""
MAX="0.2"; TIMEOUT=300; LOCAL=0; PERSIST=""; SOURCE=""; MAXMIND=0; PROMOTE=0; FROM_KEY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --source) SOURCE="${2:?--source needs a value}"; shift 2 ;;
    --maxmind) MAXMIND=1; shift ;;
    --promote) PROMOTE=1; shift ;;
    --from-key) FROM_KEY="${2:?--from-key needs a value}"; shift 2 ;;
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
case "$ENV_NAME" in
  staging|production) ;;
  *) echo "publish-ipdb: --env staging|production is required" >&2; usage ;;
esac
if [ "$PROMOTE" = 1 ]; then
  [ -z "$FILE$SOURCE" ] || { echo "publish-ipdb: --promote takes no FILE or --source" >&2; usage; }
  [ "$ENV_NAME" = production ] || { echo "publish-ipdb: --promote is for --env production" >&2; usage; }
else
  [ -n "$FILE" ] || [ -n "$SOURCE" ] || { echo "publish-ipdb: FILE or --source is required" >&2; usage; }
  [ -z "$FILE" ] || [ -z "$SOURCE" ] || { echo "publish-ipdb: FILE or --source, not both" >&2; usage; }
fi
[ "$MAXMIND" = 0 ] || [ -n "$SOURCE" ] || { echo "publish-ipdb: --maxmind needs --source" >&2; usage; }
[ -z "$PERSIST" ] || [ "$LOCAL" = 1 ] || { echo "publish-ipdb: --persist-to needs --local" >&2; usage; }
if [ "$LOCAL" = 1 ]; then
  MODE=(--local)
  [ -z "$PERSIST" ] || MODE+=(--persist-to "$PERSIST")
fi
# Paths as the user typed them when run from the repository root (so printed commands can be
# pasted there); absolute otherwise.
abs() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
if [ "$PWD" != "$ROOT" ]; then
  [ -z "$FILE" ] || FILE="$(abs "$FILE")"; [ -z "$AGAINST" ] || AGAINST="$(abs "$AGAINST")"
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
sha256_of() { local s; s="$( (command -v sha256sum >/dev/null && sha256sum "$1") || shasum -a 256 "$1")"; echo "${s%% *}"; }

# --promote: staging's record and objects to production, each object checked.
if [ "$PROMOTE" = 1 ]; then
  FROM_KEY="${FROM_KEY:-$(python3 scripts/wrangler-env.py production var IPDB_PROMOTE_FROM_KEY)}"
  FROM_KEY="${FROM_KEY:-$(python3 scripts/wrangler-env.py staging kv_key)}"
  STAGING_BUCKET="$(python3 scripts/wrangler-env.py staging bucket)"
  say "promoting staging's $FROM_KEY to production's $KV_KEY"
  mkdir -p build/ipdb/promote
  if [ "$DRY" = 1 ]; then
    run wrangler kv key get --binding IPDB_CONFIG "$FROM_KEY" "${MODE[@]}" --env staging
    echo "# then, for each object the record names: wrangler r2 object get $STAGING_BUCKET/KEY (checked against its sha256) and wrangler r2 object put $BUCKET/KEY; then wrangler kv key put --binding IPDB_CONFIG $KV_KEY RECORD ${MODE[*]} --env production"
    exit 0
  fi
  STAGED="$(wrangler kv key get --binding IPDB_CONFIG "$FROM_KEY" "${MODE[@]}" --env staging)" ||
    { say "FAILED: cannot read staging's record $FROM_KEY"; exit 1; }
  jq -e '.version and .sha256 and .object_key and .table_key' >/dev/null <<<"$STAGED" ||
    { say "FAILED: staging's record under $FROM_KEY is not a record with a table: $STAGED"; exit 1; }
  objects="$(jq -r '([.object_key, .sha256] | @tsv), ([.table_key + "/dir.bin", .table_sha256] | @tsv),
    (.table_key as $t | .table_pages | to_entries[] | [($t + "/page-" + ("00" + (.key | tostring))[-3:] + ".bin"), .value] | @tsv)' <<<"$STAGED")"
  while IFS=$'\t' read -r key sha; do
    tmp="build/ipdb/promote/$(basename "$key")"
    run wrangler r2 object get "$STAGING_BUCKET/$key" --file "$tmp" "${MODE[@]}" --env staging
    if [ "$DRY" = 0 ] && [ "$(sha256_of "$tmp")" != "$sha" ]; then
      say "FAILED: $key in staging's bucket does not match its checksum; nothing promoted"; exit 1
    fi
    run wrangler r2 object put "$BUCKET/$key" --file "$tmp" --content-type application/octet-stream "${MODE[@]}" --env production
  done <<<"$objects"
  RECORD="$(jq -c --arg at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --arg from "$FROM_KEY" \
    '.updated_at = $at | .origin = ((.origin // {kind: "promoted"}) + {promoted_from: $from})' <<<"$STAGED")"
  run wrangler kv key put --binding IPDB_CONFIG "$KV_KEY" "$RECORD" "${MODE[@]}" --env production
  say "promoted $(jq -r .version <<<"$STAGED")"
  exit 0
fi

# The input as a plain .mmdb: downloaded (--source), gunzipped, or the one .mmdb of a tar.gz.
mkdir -p build/ipdb
ORIGIN='{"kind":"script"}'
if [ -n "$SOURCE" ]; then
  command -v curl >/dev/null || { echo "publish-ipdb: curl is required for --source" >&2; exit 2; }
  auth=()
  if [ "$MAXMIND" = 1 ]; then
    [ -n "${MAXMIND_ACCOUNT_ID:-}" ] && [ -n "${MAXMIND_LICENSE_KEY:-}" ] ||
      { echo "publish-ipdb: --maxmind needs MAXMIND_ACCOUNT_ID and MAXMIND_LICENSE_KEY in the environment" >&2; exit 2; }
    auth=(--config -)
  fi
  expand() { sed -e "s/{YYYYMMDD}/$(date -u -d "$1" +%Y%m%d)/g" -e "s/{YYYY}/$(date -u -d "$1" +%Y)/g" -e "s/{MM}/$(date -u -d "$1" +%m)/g" <<<"$SOURCE"; }
  periods=("now")
  case "$SOURCE" in
    *"{YYYYMMDD}"*) periods=("now" "yesterday") ;;
    *"{YYYY}"*|*"{MM}"*) periods=("now" "$(date -u +%Y-%m-01) -1 month") ;;
  esac
  DL="build/ipdb/download"
  got=""
  for p in "${periods[@]}"; do
    u="$(expand "$p")"
    say "downloading $u"
    code="$( { [ "$MAXMIND" = 0 ] || printf 'user = "%s:%s"\n' "$MAXMIND_ACCOUNT_ID" "$MAXMIND_LICENSE_KEY"; } |
      curl -sS -L -o "$DL" -w '%{http_code}' --max-time "$TIMEOUT" "${auth[@]}" "$u")" || code="${code:-000}"
    if [ "$code" = 200 ]; then got="$u"; break; fi
    say "$u answered $code"
    case "$code" in 403|404|410) continue ;; *) break ;; esac
  done
  [ -n "$got" ] || { say "FAILED: no download; nothing was published"; exit 1; }
  kind=url; [ "${#periods[@]}" = 1 ] || kind=template; [ "$MAXMIND" = 0 ] || kind=maxmind
  ORIGIN="$(jq -nc --arg k "$kind" --arg u "$got" '{kind: $k, url: $u}')"
  FILE="$DL"
fi
if gzip -t "$FILE" 2>/dev/null; then
  gzip -dc "$FILE" > build/ipdb/input.unpacked
  FILE=build/ipdb/input.unpacked
fi
if tar -tf "$FILE" >/dev/null 2>&1; then
  members="$(tar -tf "$FILE" | grep '\.mmdb$' || true)"
  [ "$(grep -c . <<<"$members")" = 1 ] ||
    { say "FAILED: $FILE holds $(grep -c . <<<"$members") .mmdb members (one wanted); nothing was published"; exit 1; }
  tar -xOf "$FILE" "$members" > build/ipdb/input.mmdb
  release="$(sed -nE 's#^[^/]*_([0-9]{4})([0-9]{2})([0-9]{2})/.*#\1-\2-\3#p' <<<"$members")"
  [ -z "$release" ] || ORIGIN="$(jq -c --arg r "$release" '.release = $r' <<<"$ORIGIN")"
  say "took $members"
  FILE=build/ipdb/input.mmdb
fi

# 1. Validate with the project's own reader; the same run computes the record to publish.
say "checking $FILE against $AGAINST (max disagreement $MAX)"
SHA="$( (command -v sha256sum >/dev/null && sha256sum "$FILE") || shasum -a 256 "$FILE")"; SHA="${SHA%% *}"
TABLE_DIR="build/ipdb/$SHA.table"
REPORT="$(cargo run --profile assets --quiet --bin ipdb-check -- "$FILE" --against "$AGAINST" \
  --max-disagreement "$MAX" --updated-at "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --table-out "$TABLE_DIR")" || {
  echo "$REPORT"
  say "FAILED validation: nothing was published"
  exit 1
}
echo "$REPORT" | jq -c '{ok, sha256, size, database_type, layout, agreement: (.agreement | {compared, agree, disagreement, candidate_countries})}' >&2
RECORD="$(jq -c --argjson o "$ORIGIN" '.record | .origin = $o' <<<"$REPORT")"
OBJECT_KEY="$(jq -r .record.object_key <<<"$REPORT")"
VERSION="$(jq -r .record.version <<<"$REPORT")"
TABLE_KEY="$(jq -r .record.table_key <<<"$REPORT")"
PAGES="$(jq -r '.record.table_pages | length' <<<"$REPORT")"

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
