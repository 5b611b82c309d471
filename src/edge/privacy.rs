//! The privacy routes' wiring: the core service, the badge hubs (a Durable Object per owner,
//! behind the core's `BadgeHubs` port) and the queue that continues an unfinished erasure. The
//! flows are `egn_core::notify::privacy` / `erasure`, their HTTP side `egn_http::privacy`.

use super::factory::service;
use super::{hub, internal, ok_json, queue, ApiResult};
use egn_core::config::Config;
use egn_http::privacy;
use worker::{Date, Env, Response};

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

/// `DELETE /v1/admin/owners/{owner}`.
pub async fn erase_owner(cfg: &Config, env: &Env, owner: &str) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let q = queue::binding(env);
    let (status, body) =
        privacy::delete_owner(&svc, owner, &hub::Hubs(env), q.as_ref(), now_ms()).await?;
    Ok(Response::from_json(&body)
        .map_err(internal)?
        .with_status(status))
}

/// `POST /v1/admin/senders/{senderId}/erasure`.
pub async fn erase_sender(cfg: &Config, env: &Env, sender_id: &str) -> ApiResult<Response> {
    let svc = service(cfg)?;
    let q = queue::binding(env);
    let (status, body) = privacy::erase_sender(&svc, sender_id, q.as_ref(), now_ms()).await?;
    Ok(Response::from_json(&body)
        .map_err(internal)?
        .with_status(status))
}

/// `GET /v1/admin/erasures/{id}`.
pub async fn erasure(cfg: &Config, id: &str) -> ApiResult<Response> {
    ok_json(&privacy::get_erasure(&service(cfg)?, id).await?)
}

/// `GET /v1/admin/owners/{owner}/export` and `GET /v1/notifications/export`.
pub async fn export(cfg: &Config, owner: &str, query: &str) -> ApiResult<Response> {
    ok_json(&privacy::get_export(&service(cfg)?, owner, query).await?)
}
