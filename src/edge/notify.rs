//! Notification routes: build the core service from the parsed configuration, call it, render.
//! The flows (dedup, upsert) are in `egn_core::notify::service`, the HTTP side of the writes
//! (parsing, Idempotency-Key, rendering) in `egn_http::notify_routes` and
//! `egn_http::user_writes`.

use super::factory::{service, store};
use super::http_client::WorkerHttp;
use super::hub;
use super::{internal, not_configured, ok_json, ApiResult};
use egn_core::config::Config;
use egn_core::notify::NotifyService;
use egn_http::notify as api;
use egn_http::notify_bodies::Indexes;
use egn_http::notify_routes::Flow;
use egn_http::{notify_routes, user_writes, Reply};
use serde_json::{json, Value};
use worker::{Context, Date, Env, Request, Response};

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

fn respond(reply: &Reply) -> ApiResult<Response> {
    let mut resp = Response::from_json(&reply.body)
        .map_err(internal)?
        .with_status(reply.status);
    if reply.replayed {
        resp.headers_mut()
            .set("Idempotent-Replayed", "true")
            .map_err(internal)?;
    }
    Ok(resp)
}

fn idempotency_key(req: &Request) -> Option<String> {
    req.headers().get("Idempotency-Key").ok().flatten()
}

/// Runs the deferred work after the response.
fn defer(ctx: &Context, svc: NotifyService<WorkerHttp>, work: Vec<egn_core::notify::Deferred>) {
    if work.is_empty() {
        return;
    }
    ctx.wait_until(async move {
        for line in svc.run_deferred(work).await {
            worker::console_warn!("{}", json!({ "deferred": line }));
        }
    });
}

/// `POST /v1/notifications/events` (service `notify:write`): one event, a batch or a fan-out;
/// enqueued when the queue is bound.
pub async fn create(
    cfg: &Config,
    env: &Env,
    ctx: &Context,
    req: &Request,
    body: &[u8],
) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let queue = super::queue::binding(env);
    let key = idempotency_key(req);
    let flow =
        notify_routes::post_events(&svc, body, key.as_deref(), now_ms(), queue.as_ref()).await;
    answer(env, ctx, svc, flow)
}

/// `POST /v1/notifications/retractions` (service `notify:write`).
pub async fn retract(
    cfg: &Config,
    env: &Env,
    ctx: &Context,
    req: &Request,
    body: &[u8],
) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let key = idempotency_key(req);
    let flow = notify_routes::post_retraction(&svc, body, key.as_deref(), now_ms()).await;
    answer(env, ctx, svc, flow)
}

/// `GET /v1/notifications/stream` (user): the WebSocket goes to the owner's hub, which closes it
/// at `deadline_ms` (the token's expiry) with 4001 `token_expired`.
pub async fn stream(
    env: &Env,
    req: &Request,
    owner: &str,
    deadline_ms: Option<f64>,
) -> ApiResult<Response> {
    egn_http::pipeline::require_websocket(&super::Head(req))?;
    let protocols = req
        .headers()
        .get("Sec-WebSocket-Protocol")
        .ok()
        .flatten()
        .unwrap_or_default();
    hub::connect(env, owner, &protocols, deadline_ms)
        .await
        .ok_or_else(|| not_configured("live badges (the INBOX_HUB Durable Object binding)"))?
        .map_err(internal)
}

/// `POST /v1/admin/indexes` (service `admin`): idempotent, run once per deploy.
pub async fn ensure_indexes(cfg: &Config) -> ApiResult<Response> {
    let names = store(cfg)?.ensure_indexes().await?;
    ok_json(&Indexes { indexes: names })
}

/// `GET /v1/admin/dead-letters` (service `admin`).
pub async fn dead_letters(cfg: &Config, query: &str) -> ApiResult<Response> {
    ok_json(&notify_routes::get_dead_letters(&service(cfg)?, query).await?)
}

/// `POST /v1/admin/dead-letters/replay` (service `admin`).
pub async fn replay_dead_letters(cfg: &Config, env: &Env, body: &[u8]) -> ApiResult<Response> {
    let queue = super::queue::binding(env);
    ok_json(&notify_routes::post_replay(&service(cfg)?, body, queue.as_ref()).await?)
}

/// `GET /v1/notifications` (user): one page with the badge counts, one Data API call.
pub async fn list(cfg: &Config, owner: &str, query: &str) -> ApiResult<Response> {
    ok_json(&api::get_list(store(cfg), owner, query, now_ms()).await?)
}

/// `GET /v1/notifications/unread-count` (user): one aggregate call.
pub async fn unread_count(cfg: &Config, owner: &str, query: &str) -> ApiResult<Response> {
    ok_json(&api::get_unread_count(store(cfg), owner, query, now_ms()).await?)
}

/// `GET /v1/notifications/changes?since=` (user): the change feed, one call per page.
pub async fn changes(cfg: &Config, owner: &str, query: &str) -> ApiResult<Response> {
    ok_json(&api::get_changes(store(cfg), owner, query, now_ms()).await?)
}

/// `POST /v1/notifications/mark` (user): read/seen/archived for one item or all.
pub async fn mark(
    cfg: &Config,
    env: &Env,
    ctx: &Context,
    req: &Request,
    owner: &str,
    body: &[u8],
) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let key = idempotency_key(req);
    let flow = user_writes::post_mark(&svc, owner, body, key.as_deref(), now_ms()).await;
    answer(env, ctx, svc, flow)
}

/// `POST /v1/notifications/bulk` (user): one `updateMany`.
pub async fn bulk(
    cfg: &Config,
    env: &Env,
    ctx: &Context,
    req: &Request,
    owner: &str,
    body: &[u8],
) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let key = idempotency_key(req);
    let flow = user_writes::post_bulk(&svc, owner, body, key.as_deref(), now_ms()).await;
    answer(env, ctx, svc, flow)
}

/// `GET /v1/notifications/preferences` (user).
pub async fn preferences(cfg: &Config, ctx: &Context, owner: &str) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let (reply, deferred) = notify_routes::get_preferences(&svc, owner).await;
    defer(ctx, svc, deferred);
    ok_json(&reply?)
}

/// `PUT /v1/notifications/preferences` (user).
pub async fn set_preferences(cfg: &Config, owner: &str, body: &[u8]) -> ApiResult<Response> {
    ok_json(&notify_routes::put_preferences(&service(cfg)?, owner, body, now_ms()).await?)
}

/// `DELETE /v1/notifications/items/{itemKey}` (user): leaves a tombstone for other devices.
pub async fn delete(
    cfg: &Config,
    env: &Env,
    ctx: &Context,
    req: &Request,
    owner: &str,
    item_key: &str,
) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let key = idempotency_key(req);
    let flow = user_writes::delete_item(&svc, owner, item_key, key.as_deref(), now_ms()).await;
    answer(env, ctx, svc, flow)
}

/// Renders a write's flow: its deferred work (the Idempotency-Key record among it) and the
/// badge pokes run after the response.
fn answer(
    env: &Env,
    ctx: &Context,
    svc: NotifyService<WorkerHttp>,
    (reply, deferred): Flow,
) -> ApiResult<Response> {
    defer(ctx, svc, deferred);
    let reply = reply?;
    hub::poke(env, ctx, reply.changed.clone());
    respond(&reply)
}

/// Cron housekeeping within the configured subrequest budget.
pub async fn housekeeping(cfg: &Config, env: &Env) -> Value {
    let store = match store(cfg) {
        Ok(s) => s,
        Err(e) => return json!({ "skipped": e.message }),
    };
    match store
        .housekeeping(
            cfg.max_per_owner,
            cfg.housekeeping_subrequests,
            500,
            now_ms(),
        )
        .await
    {
        Ok(r) => {
            // Pokes are subrequests too: stay within the free plan's 50 per invocation.
            let room = 50_u32.saturating_sub(r.calls + 2) as usize;
            hub::poke_now(env, r.trimmed_owners.iter().take(room).cloned().collect()).await;
            json!(r)
        }
        Err(e) => json!({ "error": e.to_string() }),
    }
}
