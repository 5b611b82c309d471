//! The Workers adapter: routing, bindings and per-isolate state. Everything else is core.

mod assets;
mod geo;
mod http_client;
mod ip;
mod notify;

use crate::api::{geo::MAX_BODY_BYTES, ApiError};
use serde_json::{json, Value};
use worker::{
    event, Context, Env, Headers, Method, Request, Response, Result, ScheduleContext,
    ScheduledEvent,
};

/// Result of a route: a response or the one error type that renders as JSON.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// Var that enables the `/__bench` endpoints (off in production).
const ENABLE_BENCH: &str = "ENABLE_BENCH";

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    match route(req, &env, &ctx).await {
        Ok(resp) => Ok(resp),
        Err(e) => error_response(&e),
    }
}

#[event(scheduled)]
async fn scheduled(_event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    match ip::publish_from_source(&env).await {
        Ok(m) => worker::console_log!("ipdb publish: {m}"),
        Err(e) => worker::console_error!("ipdb publish failed: {e}"),
    }
    match notify::housekeeping(&env).await {
        Ok(m) => worker::console_log!("notifications housekeeping: {m}"),
        Err(e) => worker::console_error!("notifications housekeeping failed: {e}"),
    }
}

async fn route(mut req: Request, env: &Env, ctx: &Context) -> ApiResult<Response> {
    let url = req
        .url()
        .map_err(|_| ApiError::bad_request("invalid_url", "unparseable URL"))?;
    let method = req.method();
    let path = url.path().to_string();
    let query = url.query().unwrap_or("").to_string();
    match (path.as_str(), method) {
        ("/healthz", Method::Get) => healthz(env).await,
        ("/v1/geo/country", Method::Get) => geo::get_country(env, &query).await,
        ("/v1/geo/country", Method::Post) => {
            geo::post_country(env, &read_body(&mut req).await?).await
        }
        ("/v1/geo/ip", Method::Get) => ip::get_ip(env, ctx, &query).await,
        ("/v1/geo/ip", Method::Post) => ip::post_ip(env, ctx, &read_body(&mut req).await?).await,
        ("/v1/geo/me", Method::Get) => ip::me(&req, env, ctx, &query).await,
        ("/v1/notifications", Method::Get) => notify::list(&req, env, &query).await,
        ("/v1/notifications/unread-count", Method::Get) => {
            notify::unread_count(&req, env, &query).await
        }
        ("/v1/notifications/changes", Method::Get) => notify::changes(&req, env, &query).await,
        ("/v1/notifications/events", Method::Post) => {
            let body = read_body(&mut req).await?;
            notify::create(&req, env, ctx, &body).await
        }
        ("/v1/notifications/retractions", Method::Post) => {
            let body = read_body(&mut req).await?;
            notify::retract(&req, env, ctx, &body).await
        }
        ("/v1/admin/indexes", Method::Post) => notify::ensure_indexes(&req, env).await,
        ("/v1/notifications/mark", Method::Post) => {
            let body = read_body(&mut req).await?;
            notify::mark(&req, env, &body).await
        }
        (p, Method::Delete) if p.starts_with("/v1/notifications/items/") => {
            let key = p.trim_start_matches("/v1/notifications/items/").to_string();
            let key = percent_encoding::percent_decode_str(&key).decode_utf8_lossy();
            notify::delete(&req, env, &key).await
        }
        ("/__bench/noop", Method::Get) if bench_enabled(env) => ok_json(&json!({ "ok": true })),
        ("/__bench/geo", Method::Post) if bench_enabled(env) => {
            geo::bench(&mut req, env, &query).await
        }
        ("/__bench/ip", Method::Get) if bench_enabled(env) => ip::bench(env, ctx, &query).await,
        ("/", Method::Get) | ("/index.html", Method::Get) => static_page(env).await,
        ("/v1/geo/country" | "/v1/geo/ip", m) => {
            Err(ApiError::method_not_allowed(m.as_ref(), "GET, POST"))
        }
        (
            "/healthz"
            | "/v1/geo/me"
            | "/v1/notifications"
            | "/v1/notifications/unread-count"
            | "/v1/notifications/changes",
            m,
        ) => Err(ApiError::method_not_allowed(m.as_ref(), "GET")),
        (
            "/v1/notifications/events" | "/v1/notifications/retractions" | "/v1/notifications/mark",
            m,
        ) => Err(ApiError::method_not_allowed(m.as_ref(), "POST")),
        _ => Err(ApiError::not_found(&path)),
    }
}

fn bench_enabled(env: &Env) -> bool {
    var_or(env, ENABLE_BENCH, false)
}

/// A var as text, or `default` when unset.
pub fn var_str(env: &Env, name: &str, default: &str) -> String {
    env.var(name)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| default.to_string())
}

/// A var parsed as `T`, or `default` when unset or unparsable.
pub fn var_or<T: std::str::FromStr>(env: &Env, name: &str, default: T) -> T {
    env.var(name)
        .ok()
        .and_then(|v| v.to_string().trim().parse().ok())
        .unwrap_or(default)
}

/// 200 with a JSON body.
pub fn ok_json(v: &Value) -> ApiResult<Response> {
    Response::from_json(v).map_err(internal)
}

/// A 500 for failures of the runtime itself (never for bad input).
pub fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(500, "internal", format!("internal error: {e}"))
}

fn error_response(e: &ApiError) -> Result<Response> {
    let mut resp = Response::from_json(&e.body())?.with_status(e.status);
    if let Some(s) = e.retry_after {
        resp.headers_mut().set("Retry-After", &s.to_string())?;
    }
    if e.status == 405 {
        if let Some((_, allowed)) = e.message.split_once("use ") {
            resp.headers_mut().set("Allow", allowed)?;
        }
    }
    Ok(resp)
}

async fn read_body(req: &mut Request) -> ApiResult<Vec<u8>> {
    let declared = req
        .headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        return Err(ApiError::new(
            413,
            "payload_too_large",
            "request body too large",
        ));
    }
    let body = req
        .bytes()
        .await
        .map_err(|e| ApiError::bad_request("unreadable_body", e.to_string()))?;
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(
            413,
            "payload_too_large",
            "request body too large",
        ));
    }
    Ok(body)
}

thread_local! {
    // The manifest cannot change within a deployment, so an isolate reads it once.
    static MANIFEST: std::cell::RefCell<Option<Value>> = const { std::cell::RefCell::new(None) };
}

async fn manifest(env: &Env) -> Value {
    if let Some(m) = MANIFEST.with(|m| m.borrow().clone()) {
        return m;
    }
    match assets::fetch_asset(env, "manifest.json")
        .await
        .map(|b| serde_json::from_slice::<Value>(&b))
    {
        Ok(Ok(m)) => {
            MANIFEST.with(|c| *c.borrow_mut() = Some(m.clone()));
            m
        }
        // Not cached: a later call retries.
        _ => Value::Null,
    }
}

async fn healthz(env: &Env) -> ApiResult<Response> {
    let manifest = manifest(env).await;
    let (geo_status, ok) = geo::health(env).await;
    // Names only: a missing secret shows here instead of as a 503 on the first real request.
    let missing = crate::config::missing_secrets(|n| notify::secret(env, n).is_some());
    let body = json!({
        "status": if ok { "ok" } else { "degraded" },
        "geo": geo_status,
        "ipdb": ip::health(),
        "secrets": { "missing": missing },
        "assets": {
            "geo_source": manifest["geo"]["source"],
            "ip_source": manifest["ip"]["source"],
            "format_version": manifest["format_version"],
        },
    });
    Response::from_json(&body)
        .map(|r| r.with_status(if ok { 200 } else { 503 }))
        .map_err(internal)
}

async fn static_page(env: &Env) -> ApiResult<Response> {
    let bytes = assets::fetch_asset(env, "www/index.html").await?;
    let headers = Headers::new();
    headers
        .set("content-type", "text/html; charset=utf-8")
        .map_err(internal)?;
    Ok(Response::from_bytes(bytes)
        .map_err(internal)?
        .with_headers(headers))
}
