//! The cron's notification housekeeping: trim each owner's inbox within the configured
//! subrequest budget and poke the hubs of the owners it trimmed. The routes are
//! `egn_http::dispatch`'s.

use super::http_client::WorkerHttp;
use super::hub;
use egn_core::config::Config;
use serde_json::{json, Value};
use worker::{Date, Env};

fn now_ms() -> i64 {
    Date::now().as_millis() as i64
}

/// Cron housekeeping within the configured subrequest budget.
pub async fn housekeeping(cfg: &Config, env: &Env) -> Value {
    let store = match egn_http::backends::store(WorkerHttp, cfg) {
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
