//! Notification center routes: service callers create/retract, users list and change state.
//!
//! Each request builds its clients from bindings (cheap: no connection state in Workers).
//! Create = 1 Redis EVALSHA (reserve) + 1 Data API upsert; the dedup commit runs after the
//! response in `waitUntil`. If Redis is down, the upsert alone is still idempotent (its filter
//! skips a sender already present), so events are written rather than refused. The Redis
//! reservation only saves Data API writes for redeliveries; correctness never depends on it.

use super::http_client::WorkerHttp;
use super::{internal, ok_json, var_or, var_str, ApiResult};
use crate::api::{notify as api, ApiError};
use crate::backend::{DataApiAuth, DataApiClient, DataApiConfig, RedisRestClient, RedisRestConfig};
use crate::dedup::{self, DedupConfig, Reservation};
use crate::notify::{
    view, CreateOutcome, NotificationEvent, NotificationStore, NotifyConfig, RetractOutcome, Target,
};
use serde_json::{json, Value};
use worker::{Context, Date, Env, Request, Response};

/// Backend timeout per call unless `BACKEND_TIMEOUT_MS` says otherwise: short enough that a
/// client retry beats the platform's limits.
const BACKEND_TIMEOUT_MS: u32 = 5_000;

fn timeout_ms(env: &Env) -> u32 {
    var_or(env, "BACKEND_TIMEOUT_MS", BACKEND_TIMEOUT_MS)
}

/// A secret (or, for local runs, a var of the same name); empty counts as unset.
pub(super) fn secret(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
        .filter(|s| !s.is_empty())
}

fn not_configured(what: &str) -> ApiError {
    ApiError::unavailable("not_configured", format!("{what} is not configured"))
}

fn store(env: &Env) -> ApiResult<NotificationStore<WorkerHttp>> {
    let base_url = secret(env, "DATA_API_URL").ok_or_else(|| not_configured("DATA_API_URL"))?;
    let api_key = secret(env, "DATA_API_KEY").ok_or_else(|| not_configured("DATA_API_KEY"))?;
    let auth = match var_str(env, "DATA_API_AUTH", "apiKey").as_str() {
        "bearer" => DataApiAuth::Bearer,
        "basic" => DataApiAuth::Basic {
            username: var_str(env, "DATA_API_USER", "api"),
        },
        _ => DataApiAuth::ApiKey,
    };
    let cfg = DataApiConfig {
        base_url,
        api_key,
        data_source: var_str(env, "DATA_SOURCE", "local"),
        database: var_str(env, "DATABASE", "app"),
        auth,
        timeout_ms: timeout_ms(env),
    };
    let mut ncfg = NotifyConfig {
        collection: var_str(env, "NOTIFY_COLLECTION", "notifications"),
        ..NotifyConfig::default()
    };
    ncfg.origins_cap = var_or(env, "NOTIFY_ORIGINS_CAP", ncfg.origins_cap);
    Ok(NotificationStore::new(
        DataApiClient::new(WorkerHttp, cfg),
        ncfg,
    ))
}

fn redis(env: &Env) -> ApiResult<RedisRestClient<WorkerHttp>> {
    let base_url = secret(env, "REDIS_REST_URL").ok_or_else(|| not_configured("REDIS_REST_URL"))?;
    let token =
        secret(env, "REDIS_REST_TOKEN").ok_or_else(|| not_configured("REDIS_REST_TOKEN"))?;
    Ok(RedisRestClient::new(
        WorkerHttp,
        RedisRestConfig {
            base_url,
            token,
            timeout_ms: timeout_ms(env),
        },
    ))
}

fn dedup_config(env: &Env) -> DedupConfig {
    let window_ms = var_or(env, "DEDUP_WINDOW_MS", 600_000);
    let per_window = var_or(env, "DEDUP_EXPECTED_PER_WINDOW", 3_600_000);
    let mut cfg = DedupConfig::for_rate(per_window, window_ms);
    cfg.lease_ms = var_or(env, "DEDUP_LEASE_MS", 10_000);
    cfg
}

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

/// Constant-time comparison so the token can't be guessed byte by byte from timings.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

fn require_service(req: &Request, env: &Env) -> ApiResult<()> {
    let expected = secret(env, "SERVICE_TOKEN").ok_or_else(|| not_configured("SERVICE_TOKEN"))?;
    let given = req
        .headers()
        .get("Authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    match given.strip_prefix("Bearer ") {
        Some(t) if same(t, &expected) => Ok(()),
        _ => Err(ApiError::new(
            401,
            "unauthorized",
            "service token required (Authorization: Bearer …)",
        )),
    }
}

/// The user a request acts for. Until real auth lands this is the `X-Dev-User` header, honoured
/// only when `DEV_AUTH = "true"` — never enable that in production.
fn owner(req: &Request, env: &Env) -> ApiResult<String> {
    if !var_or(env, "DEV_AUTH", false) {
        return Err(ApiError::new(
            401,
            "unauthorized",
            "user authentication is not available yet (DEV_AUTH off)",
        ));
    }
    req.headers()
        .get("X-Dev-User")
        .ok()
        .flatten()
        .filter(|u| !u.is_empty() && u.len() <= 128)
        .ok_or_else(|| ApiError::new(401, "unauthorized", "X-Dev-User header required (dev auth)"))
}

fn outcome_name(o: CreateOutcome) -> &'static str {
    match o {
        CreateOutcome::Created => "created",
        CreateOutcome::Merged => "merged",
        CreateOutcome::AlreadyApplied => "already_applied",
    }
}

/// `POST /v1/notifications/events` (service), optionally with `Idempotency-Key`.
pub async fn create(req: &Request, env: &Env, ctx: &Context, body: &[u8]) -> ApiResult<Response> {
    require_service(req, env)?;
    with_idempotency(req, env, ctx, "events", body, create_inner(env, ctx, body)).await
}

async fn create_inner(env: &Env, ctx: &Context, body: &[u8]) -> ApiResult<(u16, Value)> {
    let raw = api::parse_event(body)?;
    let store = store(env)?;
    let now = now_ms();
    let ev = NotificationEvent::new(raw, store.config(), now).map_err(api::notify_error)?;
    let dcfg = dedup_config(env);
    let slot = dedup::slot(&dcfg, ev.event_id(), ev.created_time_msec());
    let redis = redis(env).ok();
    let reservation = match &redis {
        Some(r) => match dedup::reserve(r, &slot, dcfg.lease_ms).await {
            Ok(res) => Some(res),
            Err(e) => {
                worker::console_warn!("dedup unavailable, relying on the idempotent upsert: {e}");
                None
            }
        },
        None => None,
    };
    let token = match reservation {
        Some(Reservation::Duplicate) => return Ok((200, json!({ "status": "duplicate" }))),
        // Another request holds a live lease on this id (or crashed holding it). Writing anyway
        // is safe — the upsert is idempotent — and never strands an event behind a dead lease.
        Some(Reservation::InFlight) => None,
        Some(Reservation::Reserved { token }) => Some(token),
        None => None,
    };
    match store.create(&ev, now).await {
        Ok(outcome) => {
            if let (Some(r), Some(_)) = (redis, token) {
                // Off the response path; if it is lost, the lease expires and a redelivery is
                // caught by the upsert's filter instead.
                ctx.wait_until(async move {
                    if let Err(e) = dedup::commit(&r, &slot).await {
                        worker::console_warn!("dedup commit failed: {e}");
                    }
                });
            }
            let status = if outcome == CreateOutcome::Created {
                201
            } else {
                200
            };
            let body = json!({
                "status": outcome_name(outcome),
                "notificationId": crate::notify::notification_id(ev.owner(), ev.item_key()),
            });
            Ok((status, body))
        }
        Err(e) => {
            if let (Some(r), Some(t)) = (&redis, &token) {
                if let Err(re) = dedup::release(r, &slot, t).await {
                    worker::console_warn!("dedup release failed (lease will expire): {re}");
                }
            }
            Err(api::notify_error(e))
        }
    }
}

/// `POST /v1/admin/indexes` (service): creates the collection's indexes; idempotent, run once
/// per deploy (README, "Deploy").
pub async fn ensure_indexes(req: &Request, env: &Env) -> ApiResult<Response> {
    require_service(req, env)?;
    let names = store(env)?
        .ensure_indexes()
        .await
        .map_err(api::notify_error)?;
    ok_json(&json!({ "indexes": names }))
}

/// `POST /v1/notifications/retractions` (service), optionally with `Idempotency-Key`.
pub async fn retract(req: &Request, env: &Env, ctx: &Context, body: &[u8]) -> ApiResult<Response> {
    require_service(req, env)?;
    with_idempotency(req, env, ctx, "retractions", body, retract_inner(env, body)).await
}

async fn retract_inner(env: &Env, body: &[u8]) -> ApiResult<(u16, Value)> {
    let r = api::parse_retraction(body)?;
    let outcome = store(env)?
        .retract(&r.owner, &r.item_key, &r.sender_id)
        .await
        .map_err(api::notify_error)?;
    let status = match outcome {
        RetractOutcome::Updated => "updated",
        RetractOutcome::Deleted => "deleted",
        RetractOutcome::NotFound => "not_found",
    };
    Ok((200, json!({ "status": status })))
}

fn respond(status: u16, body: &Value, replayed: bool) -> ApiResult<Response> {
    let mut resp = Response::from_json(body)
        .map_err(internal)?
        .with_status(status);
    if replayed {
        resp.headers_mut()
            .set("Idempotent-Replayed", "true")
            .map_err(internal)?;
    }
    Ok(resp)
}

/// Runs `op` under the request's `Idempotency-Key`, if any (one extra Redis call to claim, one
/// after the response to store the result). Without Redis the request runs unguarded: the
/// writes themselves are idempotent, only the replay flag is lost.
async fn with_idempotency(
    req: &Request,
    env: &Env,
    ctx: &Context,
    route: &str,
    body: &[u8],
    op: impl std::future::Future<Output = ApiResult<(u16, Value)>>,
) -> ApiResult<Response> {
    use crate::api::idempotency as idem;
    let Some(key) = req.headers().get("Idempotency-Key").ok().flatten() else {
        let (status, v) = op.await?;
        return respond(status, &v, false);
    };
    idem::validate_key(&key)?;
    let hash = crate::ip::sha256_hex(body);
    let rkey = idem::redis_key(route, &key);
    let redis = redis(env)?;
    let script = crate::backend::Script::new(idem::CLAIM_LUA);
    let pending_ms = idem::PENDING_MS.to_string();
    let claimed = match redis
        .evalsha_or_eval(&script, &[&rkey], &[&idem::pending(&hash), &pending_ms])
        .await
    {
        Ok(v) => Some(v),
        Err(e) => {
            worker::console_warn!("idempotency store unavailable, running unguarded: {e}");
            None
        }
    };
    if let Some(v) = &claimed {
        if let idem::Claim::Replay { status, body } = idem::classify(v.as_str(), &hash)? {
            return respond(status, &body, true);
        }
    }
    let result = op.await;
    if claimed.is_some() {
        let record = match &result {
            Ok((status, v)) => Some(idem::finished(&hash, *status, v)),
            Err(e) if e.status < 500 => Some(idem::finished(&hash, e.status, &e.body())),
            Err(_) => None,
        };
        ctx.wait_until(async move {
            let cmd = match &record {
                Some(r) => vec![
                    "SET".to_string(),
                    rkey,
                    r.clone(),
                    "PX".into(),
                    idem::KEEP_MS.to_string(),
                ],
                // A 5xx is not a result: free the key so the client's retry runs.
                None => vec!["DEL".to_string(), rkey],
            };
            if let Err(e) = redis.command(&cmd).await {
                worker::console_warn!("idempotency record not stored: {e}");
            }
        });
    }
    let (status, v) = result?;
    respond(status, &v, false)
}

/// `GET /v1/notifications` (user): one page, one Data API call.
pub async fn list(req: &Request, env: &Env, query: &str) -> ApiResult<Response> {
    let owner = owner(req, env)?;
    let params = api::parse_list(query)?;
    let page = store(env)?
        .list(&owner, &params, now_ms())
        .await
        .map_err(api::notify_error)?;
    let items: Vec<Value> = page.items.iter().map(view).collect();
    ok_json(&json!({ "items": items, "nextCursor": page.next_cursor }))
}

/// `GET /v1/notifications/unread-count` (user): one aggregate call.
pub async fn unread_count(req: &Request, env: &Env, query: &str) -> ApiResult<Response> {
    let owner = owner(req, env)?;
    let category = api::parse_category(query);
    let n = store(env)?
        .unread_count(&owner, category.as_deref(), now_ms())
        .await
        .map_err(api::notify_error)?;
    ok_json(&json!({ "unread": n }))
}

/// `GET /v1/notifications/changes?since=` (user): items changed after a revision.
pub async fn changes(req: &Request, env: &Env, query: &str) -> ApiResult<Response> {
    let owner = owner(req, env)?;
    let (since, limit) = api::parse_changes(query)?;
    let docs = store(env)?
        .changed_since(&owner, since, limit, now_ms())
        .await
        .map_err(api::notify_error)?;
    let latest = docs
        .iter()
        .filter_map(|d| d.get("revision").and_then(Value::as_i64))
        .max()
        .unwrap_or(since);
    let items: Vec<Value> = docs.iter().map(view).collect();
    ok_json(&json!({ "items": items, "revision": latest }))
}

/// `POST /v1/notifications/mark` (user): read/seen/archived for one item or all.
pub async fn mark(req: &Request, env: &Env, body: &[u8]) -> ApiResult<Response> {
    let owner = owner(req, env)?;
    let (m, flag) = api::parse_mark(body)?;
    let target = match &m.item_key {
        Some(k) => Target::Item(k),
        None => Target::All,
    };
    let n = store(env)?
        .mark(&owner, target, flag, m.value)
        .await
        .map_err(api::notify_error)?;
    ok_json(&json!({ "updated": n }))
}

/// `DELETE /v1/notifications/{itemKey}` (user).
pub async fn delete(req: &Request, env: &Env, item_key: &str) -> ApiResult<Response> {
    let owner = owner(req, env)?;
    let deleted = store(env)?
        .delete(&owner, item_key)
        .await
        .map_err(api::notify_error)?;
    if !deleted {
        return Err(ApiError::new(404, "not_found", "no such notification"));
    }
    ok_json(&json!({ "deleted": true }))
}

/// Cron housekeeping with bounded work per run: trims owners over the cap (seed lesson 2: not in
/// real time) and removes expired items in batches (the TTL index is the primary expiry).
pub async fn housekeeping(env: &Env) -> Result<String, String> {
    let store = store(env).map_err(|e| e.message)?;
    let batches: u32 = var_or(env, "HOUSEKEEPING_MAX_BATCHES", 10);
    let keep: u32 = var_or(env, "NOTIFY_MAX_PER_OWNER", 100);
    let coll = store.config().collection.clone();
    let over = store
        .api()
        .aggregate(&coll, &crate::notify::owners_over_cap(keep, 50))
        .await
        .map_err(|e| e.to_string())?;
    let mut trimmed = 0;
    for owner in over
        .iter()
        .filter_map(|d| d.get("_id").and_then(Value::as_str))
    {
        trimmed += store
            .trim_owner(owner, keep)
            .await
            .map_err(|e| e.to_string())?;
    }
    let mut deleted = 0;
    for _ in 0..batches {
        let n = store
            .delete_expired_batch(now_ms(), 500)
            .await
            .map_err(|e| e.to_string())?;
        deleted += n;
        if n < 500 {
            break;
        }
    }
    Ok(format!(
        "trimmed {trimmed} over the cap of {keep} per owner; deleted {deleted} expired"
    ))
}
