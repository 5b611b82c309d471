#!/usr/bin/env bash
# Smoke test for any deployment of the worker (local `wrangler dev`, staging, production):
#
#   bash scripts/smoke.sh URL [--service-key KEY] [--token JWT | --skip-user-auth] [--owner NAME]
#        [--timeout SECONDS]
#
# Public routes always, and the IP database's freshness (a stale one FAILS). With --service-key (a service key with the notify:write scope, or the
# legacy SERVICE_TOKEN), one notification create + retract. With --token, a user JWT sent as
# `Authorization: Bearer`, one authenticated list (and the credential-less list must answer 401).
# User auth must be proven: without --token that check FAILS, unless --skip-user-auth is given
# (then it is skipped with a WARNING line). This script mints nothing: locally, `node scripts/dev-token.mjs --sub NAME` prints one for
# the HS256 variables in .dev.vars; for a deployment, use a token of its issuer. The created
# item's owner is --owner, else the token's `sub` (read, not verified, so the list can show the
# item), else smoke-check. Prints one PASS/FAIL/SKIP line per check and exits non-zero if any
# check failed. Secrets given as flags are sent, never printed. Needs curl and jq.
set -uo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
URL="${1%/}"; shift
case "$URL" in http://*|https://*) ;; *) echo "smoke: URL must start with http:// or https://" >&2; usage ;; esac
SERVICE_KEY=""; TOKEN=""; OWNER=""; TIMEOUT=20; SKIP_USER_AUTH=0
while [ $# -gt 0 ]; do
  case "$1" in
    --service-key) SERVICE_KEY="${2:?--service-key needs a value}"; shift 2 ;;
    --token) TOKEN="${2:?--token needs a value}"; shift 2 ;;
    --skip-user-auth) SKIP_USER_AUTH=1; shift ;;
    --owner) OWNER="${2:?--owner needs a value}"; shift 2 ;;
    --timeout) TIMEOUT="${2:?--timeout needs a value}"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "smoke: unknown argument $1" >&2; usage ;;
  esac
done
for tool in curl jq; do
  command -v "$tool" >/dev/null || { echo "smoke: $tool is required (bash scripts/setup.sh installs it)" >&2; exit 2; }
done
# The token's `sub` claim, decoded without verification (the worker verifies it): empty when the
# token is not a JWT with a string `sub`.
TOKEN_SUB=""
if [ -n "$TOKEN" ]; then
  payload="$(cut -d. -f2 <<<"$TOKEN" | tr '_-' '/+')"
  while [ $(( ${#payload} % 4 )) -ne 0 ]; do payload+="="; done
  TOKEN_SUB="$(base64 -d 2>/dev/null <<<"$payload" | jq -r 'if (.sub | type) == "string" then .sub else empty end' 2>/dev/null)" || TOKEN_SUB=""
fi
# The created notification's owner: the token's user (so the list can see it) or a dedicated one.
OWNER="${OWNER:-${TOKEN_SUB:-smoke-check}}"

PASSED=0; FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS $1"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

BODY="$(mktemp)"; trap 'rm -f "$BODY"' EXIT
STATUS=""
# req METHOD PATH [curl args…]: sets STATUS, the body is in $BODY.
req() {
  local method="$1" path="$2"; shift 2
  STATUS="$(curl -sS -o "$BODY" -w '%{http_code}' --max-time "$TIMEOUT" -X "$method" "$@" "$URL$path" 2>/dev/null)" || STATUS="${STATUS:-000}"
}
# holds JQ_FILTER: the body is JSON and the filter yields true (an empty body never holds).
holds() { [ -s "$BODY" ] && [ "$(jq -r "($1) == true" "$BODY" 2>/dev/null)" = true ]; }
# check NAME WANT_STATUS JQ_FILTER: passes when the status matches and the filter holds.
check() {
  local name="$1" want="$2" filter="$3"
  if [ "$STATUS" != "$want" ]; then
    fail "$name" "HTTP $STATUS (want $want): $(head -c 300 "$BODY")"
  elif ! holds "$filter"; then
    fail "$name" "unexpected body: $(head -c 300 "$BODY")"
  else
    pass "$name"
  fi
}
json=(-H 'content-type: application/json')

echo "smoke: $URL"

# --- public routes ---
req GET /healthz
check "healthz: 200, status ok" 200 '.status == "ok" and (.geo | type == "object")'
HEALTH="$(cat "$BODY")"
if [ "$STATUS" = 200 ] && holds '.secrets.missing == []'; then
  pass "healthz: no missing secrets"
else
  fail "healthz: no missing secrets" "missing $(jq -c '.secrets.missing' <<<"$HEALTH" 2>/dev/null)"
fi
# Refused (published, placeholder or weak) secrets and placeholders, by name.
if [ -n "$HEALTH" ] && jq -e 'type == "object" and has("secrets") and ((.secrets.refused // []) == [])' >/dev/null 2>&1 <<<"$HEALTH"; then
  pass "healthz: no refused secrets"
else
  fail "healthz: no refused secrets" "refused $(jq -c '.secrets.refused' <<<"$HEALTH" 2>/dev/null)"
fi
req GET '/v1/geo/country?lat=48.8566&lon=2.3522'
check "GET /v1/geo/country (Paris → FR)" 200 '.country.alpha2 == "FR"'
req POST /v1/geo/country "${json[@]}" --data '{"points":[[41.9029,12.4534],{"lat":0,"lon":-30}]}'
check "POST /v1/geo/country (Vatican → VA, open sea → null)" 200 '.results[0].alpha2 == "VA" and .results[1] == null'
req GET '/v1/geo/country?lat=91&lon=0'
check "GET /v1/geo/country bad input → 400 JSON error" 400 '.error.code == "invalid_coordinate"'
req GET '/v1/geo/ip?ip=8.8.8.8'
check "GET /v1/geo/ip (public address, IPDB version)" 200 '.ip == "8.8.8.8" and (.ipdb.version | type == "string" and length > 0)'
req POST /v1/geo/ip "${json[@]}" --data '{"ips":["10.1.2.3","::1"]}'
check "POST /v1/geo/ip (reserved ranges)" 200 '[.results[].reason] == ["private","loopback"]'
req GET /v1/geo/me
check "GET /v1/geo/me" 200 'has("ipdb") and has("agree")'
# The IP database's age, after the lookups above loaded one (IPDB_STALE_AFTER_DAYS, default 45).
req GET /healthz
fresh='.ipdb.freshness | "built \(.built_at), \(.age_days) days ago; stale after \(.stale_after_days) days; last successful update \(.last_success_at // "never"), next \(.next_check_at // "unknown")"'
if holds '.ipdb.freshness.stale == false'; then
  pass "IP database is fresh"
elif holds '.ipdb.freshness.stale == true'; then
  fail "IP database is fresh" "STALE: $(jq -r "$fresh" "$BODY")"
else
  skip "IP database freshness" "the answering isolate has not loaded a database ($(head -c 200 "$BODY"))"
fi
req GET /no-such-route
check "unknown route → 404 JSON error" 404 '.error.code == "not_found"'
if STATUS="$(curl -sS -o "$BODY" -w '%{http_code}' --max-time "$TIMEOUT" "$URL/" 2>/dev/null)" && [ "$STATUS" = 200 ] && grep -qi '<html' "$BODY"; then
  pass "GET / (console)"
else
  fail "GET / (console)" "HTTP ${STATUS:-000}"
fi

# --- authenticated list ---
auth=()
[ -z "$TOKEN" ] || auth=(-H "authorization: Bearer $TOKEN")
if [ ${#auth[@]} -gt 0 ]; then
  req GET '/v1/notifications?limit=1'
  check "GET /v1/notifications without credentials → 401" 401 '.error.code == "unauthorized"'
  req GET '/v1/notifications?limit=5' "${auth[@]}"
  check "GET /v1/notifications (authenticated list)" 200 '(.items | type == "array") and has("nextCursor")'
elif [ "$SKIP_USER_AUTH" = 1 ]; then
  echo "WARNING --skip-user-auth: user tokens were not tried; this run does not prove that users can sign in" >&2
  skip "authenticated list" "--skip-user-auth (WARNING: user auth not proven)"
else
  fail "authenticated list" "no --token: user auth was not exercised (pass --token JWT, or --skip-user-auth to skip it knowingly)"
fi

# --- service create / retract ---
if [ -n "$SERVICE_KEY" ]; then
  svc=(-H "authorization: Bearer $SERVICE_KEY" "${json[@]}")
  run="smoke-$(date +%s)-$$-$RANDOM"
  item="smoke:$run"
  event="$(jq -nc --arg o "$OWNER" --arg k "$item" --arg e "$run" --argjson t "$(($(date +%s) * 1000))" \
    '{owner:$o, itemKey:$k, serviceType:"smoke", categoryType:"system", notificationType:"smoke",
      templateType:"default", eventId:$e, sender:{id:"smoke", name:"Smoke test"}, createdTimeMsec:$t}')"
  req POST /v1/notifications/events -H 'content-type: application/json' --data "$event"
  check "POST /v1/notifications/events without the service key → 401" 401 '.error.code == "unauthorized"'
  req POST /v1/notifications/events "${svc[@]}" --data "$event"
  # With the events queue bound (NOTIFY_QUEUE) the create is answered 202 and written by the
  # consumer shortly after.
  queued=0
  if [ "$STATUS" = 202 ]; then
    queued=1
    check "POST /v1/notifications/events (service create)" 202 '.status == "queued"'
  else
    check "POST /v1/notifications/events (service create)" 201 '.status == "created"'
  fi
  if [ -n "$TOKEN_SUB" ] && [ "$OWNER" = "$TOKEN_SUB" ]; then
    for _ in $(seq 1 60); do
      req GET '/v1/notifications?limit=100' "${auth[@]}"
      { [ "$queued" = 1 ] && ! holds "[.items[].itemKey] | index(\"$item\") != null"; } || break
      sleep 0.5
    done
    check "created item is listed for its owner" 200 "[.items[].itemKey] | index(\"$item\") != null"
    queued=0
  fi
  retraction="$(jq -nc --arg o "$OWNER" --arg k "$item" '{owner:$o, itemKey:$k, senderId:"smoke"}')"
  req POST /v1/notifications/retractions "${svc[@]}" --data "$retraction"
  if [ "$queued" = 1 ]; then
    # Not seen written yet: a retraction first is recorded and refuses the late create.
    check "POST /v1/notifications/retractions (service retract)" 200 '.status == "deleted" or .status == "not_found"'
  else
    check "POST /v1/notifications/retractions (service retract)" 200 '.status == "deleted"'
  fi
else
  skip "service create/retract" "no --service-key"
fi

echo "smoke: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
