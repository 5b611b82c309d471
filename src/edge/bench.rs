//! `/__bench/*`: lookups and token checks timed inside the isolate, for the bench scripts
//! (`bench/`). Compiled only with the cargo feature `bench` (`bash scripts/build-worker.sh
//! --bench`, which writes `build-bench/`), so the deployed wasm has neither these routes nor
//! their code; inside that build they are still served only with `ENABLE_BENCH=true`.

use super::Edge;
use super::{geo, ip, state, ApiResult};
use egn_core::auth::AuthError;
use egn_core::config::Config;
use egn_http::pipeline::RequestHeaders;
use egn_http::routes::Op;
use egn_http::{Answer, ApiError};
use serde_json::json;
use worker::Date;

/// Largest `n` a `/__bench/*` call may ask for (keeps one call far below the CPU limit).
const MAX_BENCH_N: usize = 1_000_000;

/// Serves one bench operation (the route table matched it and `ENABLE_BENCH` is on).
pub async fn serve(
    op: Op,
    req: &impl RequestHeaders,
    edge: &Edge<'_>,
    cfg: &Config,
    query: &str,
    body: &[u8],
) -> ApiResult<Answer> {
    match op {
        Op::BenchNoop => Answer::ok(&json!({ "ok": true })),
        Op::BenchGeo => {
            let batched = bench_n(query, "batch", 0)? != 0;
            let zones = bench_n(query, "zones", 0)? != 0;
            geo::bench(body, edge.env, bench_n(query, "repeat", 1)?, batched, zones).await
        }
        Op::BenchIp => ip::bench(edge, cfg, query).await,
        Op::BenchAuth => auth(req, edge, bench_n(query, "n", 0)?).await,
        // The route table hands only its bench routes here.
        _ => Err(ApiError::internal("not a bench route")),
    }
}

fn bench_n(query: &str, name: &str, default: usize) -> ApiResult<usize> {
    egn_http::query::count(query, name, default, MAX_BENCH_N)
}

/// Verifies the request's own bearer token `n` times with warm caches (timed from outside
/// against `n=0`).
async fn auth(req: &impl RequestHeaders, edge: &Edge<'_>, n: usize) -> ApiResult<Answer> {
    let st = state::get(edge.env);
    let v = st
        .verifier
        .as_ref()
        .ok_or_else(|| ApiError::not_configured("user authentication"))?;
    let token = egn_http::pipeline::bearer(req).ok_or(AuthError::Missing)?;
    let now = Date::now().as_millis() as f64;
    let mut ok = 0;
    for _ in 0..n {
        if v.verify(&token, now).await.is_ok() {
            ok += 1;
        }
    }
    Answer::ok(&json!({ "n": n, "ok": ok }))
}
