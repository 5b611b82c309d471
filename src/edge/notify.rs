//! The cron's notification housekeeping over the bindings (`egn_http::cron` decides).

use super::http_client::WorkerHttp;
use super::hub;
use egn_core::config::Config;
use serde_json::Value;
use worker::{Date, Env};

/// Cron housekeeping within the configured subrequest budget; the trimmed owners' hubs are
/// poked within what is left.
pub async fn housekeeping(cfg: &Config, env: &Env) -> Value {
    let store = egn_http::backends::store(WorkerHttp, cfg);
    let now = Date::now().as_millis() as i64;
    let (line, owners) = egn_http::cron::housekeeping(store, cfg, now).await;
    hub::poke_now(env, owners).await;
    line
}
