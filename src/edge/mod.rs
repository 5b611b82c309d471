//! The Workers adapter: bindings in, core calls, responses out. Routing, who may call, body
//! limits and 404/405 come from the route table in `crate::api::routes`; flows live in the core.

mod assets;
#[cfg(feature = "bench")]
mod bench;
mod console;
mod factory;
mod geo;
mod http_client;
mod hub;
mod ip;
mod notify;
mod queue;
mod state;
mod webcrypto;

use crate::api::health::{
    Assets, AuthHealth, ConfigProblem, DataApiProbe, GeoStatus, Health, HealthStatus, ProbeError,
    ProbeState, RefusedSecret, Secrets,
};
use crate::api::routes::{self, Access, Op, RateLimit, Route};
use crate::api::ApiError;
use crate::api::ErrorCode;
use crate::auth::AuthError;
use crate::config::Config;
use serde_json::{json, Value};
use state::State;
use std::rc::Rc;
use worker::{
    event, Context, Date, Env, Headers, Request, Response, Result, ScheduleContext, ScheduledEvent,
};

/// Result of a route: a response or the one error type that renders as JSON.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

/// Rate-limit bindings (`[[ratelimits]]` in wrangler.toml). Absent binding = not limited.
const GEO_LIMITER: &str = "GEO_RATE_LIMITER";
const USER_LIMITER: &str = "USER_RATE_LIMITER";

/// Who is calling, once authenticated.
#[derive(Clone, Debug)]
pub enum Caller {
    /// A public route.
    Anonymous,
    /// A user; the owner of the inbox.
    User(String),
    /// A service key, by name (never its value).
    Service(String),
}

impl Caller {
    fn label(&self) -> String {
        match self {
            Caller::Anonymous => "-".into(),
            Caller::User(_) => "user".into(),
            Caller::Service(name) => format!("service:{name}"),
        }
    }
}

/// One log line per request, as JSON (no tokens, no secrets, no user ids).
fn log(line: &Value) {
    worker::console_log!("{line}");
}

/// [`log`] at error level (a `5xx`): Workers Logs files it as an error. Log sampling still
/// applies: an invocation's logs are kept or dropped whole, before it runs (docs/deploy.md).
fn log_error(line: &Value) {
    worker::console_error!("{line}");
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, ctx: Context) -> Result<Response> {
    let started = Date::now().as_millis();
    let rid = request_id(&req);
    // The raw method: workers-rs maps methods it does not know to GET.
    let method = req.inner().method();
    let path = req.path();
    let origin = req.headers().get("Origin").ok().flatten();
    let st = state::get(&env);
    let mut caller = Caller::Anonymous;
    // The same JS object (`Clone::clone`, not the JS `clone()` that tees the body): after the
    // answer it shows whether the body was read.
    let raw = Clone::clone(req.inner());
    let result = handle(req, &env, &ctx, &st, &mut caller).await;
    discard_unread_body(&raw).await;
    let (mut resp, error) = match result {
        Ok(r) => (r, None),
        Err(e) => (error_response(&e, &rid)?, Some(e)),
    };
    if resp.status_code() == 101 {
        // A WebSocket handed over by the hub: its headers are the handshake's, leave them be.
        log(
            &json!({ "rid": rid, "method": method, "path": path, "status": 101, "caller": caller.label() }),
        );
        return Ok(resp);
    }
    let headers = resp.headers_mut();
    headers.set("X-Request-Id", &rid)?;
    if let (Some(o), Ok(cfg)) = (&origin, &st.config) {
        if cfg.cors_allows(o) {
            headers.set("Access-Control-Allow-Origin", o)?;
            headers.set(
                "Access-Control-Expose-Headers",
                "X-Request-Id, Retry-After, Idempotent-Replayed",
            )?;
            headers.append("Vary", "Origin")?;
        }
    }
    let mut line = json!({
        "rid": rid, "method": method, "path": path, "status": resp.status_code(),
        "ms": Date::now().as_millis().saturating_sub(started), "caller": caller.label(),
    });
    if let Some(e) = error {
        line["code"] = json!(e.code.as_str());
        if e.status >= 500 {
            // The full cause (backend text included) goes to the log only, keyed by request id.
            line["error"] = json!(e.message);
        }
    }
    if resp.status_code() >= 500 {
        log_error(&line);
    } else {
        log(&line);
    }
    Ok(resp)
}

#[event(scheduled)]
async fn scheduled(event: ScheduledEvent, env: Env, _ctx: ScheduleContext) {
    let st = state::get(&env);
    let cfg = match &st.config {
        Ok(c) => c,
        Err(e) => {
            log(&json!({"cron": "skipped", "error": e.to_string()}));
            return;
        }
    };
    // Logged as before: `{"Ok": outcome}` or `{"Err": reason}`.
    let ipdb = ip::publish_from_source(&env, cfg, &event.cron())
        .await
        .map_err(|e| e.to_string());
    let hk = notify::housekeeping(cfg, &env).await;
    log(&json!({"cron": "done", "ipdb": ipdb, "housekeeping": hk}));
}

/// `cf-ray` at the edge (so logs join Cloudflare's), else a random id.
fn request_id(req: &Request) -> String {
    if let Some(ray) = req.headers().get("cf-ray").ok().flatten() {
        if !ray.is_empty() && ray.len() <= 64 && ray.bytes().all(|b| b.is_ascii_graphic()) {
            return ray;
        }
    }
    let mut b = [0u8; 8];
    // getrandom is not in the tree; Math.random is fine for an id that only joins logs.
    for x in &mut b {
        *x = (js_sys::Math::random() * 256.0) as u8;
    }
    crate::ip::hex(&b)
}

async fn handle(
    mut req: Request,
    env: &Env,
    ctx: &Context,
    st: &Rc<State>,
    caller: &mut Caller,
) -> ApiResult<Response> {
    let path = req.path();
    let cfg = match &st.config {
        Ok(c) => c,
        // Only /healthz (which names the variable) and the static contract answer; everything
        // else would be guesswork.
        Err(_) if path == "/healthz" => return healthz(env, st).await,
        Err(_) if path == "/openapi.json" => return openapi(),
        Err(e) => {
            return Err(ApiError::new(
                ErrorCode::ConfigInvalid,
                format!("configuration error: {e}"),
            ))
        }
    };
    let method = req.inner().method();
    if method == "OPTIONS" {
        return preflight(&req, cfg, &path);
    }
    let matched = routes::resolve(&method, &path, cfg.bench)?;
    let route = matched.route;
    // Who may call is settled before the body is read.
    *caller = authorize(&req, route, cfg, st).await?;
    rate_limit(env, &req, route, caller).await?;
    let body = if route.body_limit > 0 {
        read_body(&mut req, route.body_limit).await?
    } else {
        Vec::new()
    };
    let url = req
        .url()
        .map_err(|_| ApiError::new(ErrorCode::InvalidUrl, "unparseable URL"))?;
    let query = url.query().unwrap_or("").to_string();
    let who = caller.clone();
    let owner = || match &who {
        Caller::User(sub) => Ok(sub.as_str()),
        _ => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "user token required",
        )),
    };
    match route.op {
        Op::Healthz => healthz(env, st).await,
        Op::OpenApi => openapi(),
        Op::Console => console::page(env).await,
        Op::ConsoleAsset => console::file(env, &matched.param.clone().unwrap_or_default()).await,
        Op::CountryOne => geo::get_country(env, &query).await,
        Op::CountryBatch => geo::post_country(env, &body).await,
        Op::IpOne => ip::get_ip(env, ctx, cfg, &query).await,
        Op::IpBatch => ip::post_ip(env, ctx, cfg, &body).await,
        Op::Me => ip::me(&req, env, ctx, cfg, &query).await,
        Op::List => notify::list(cfg, owner()?, &query).await,
        Op::UnreadCount => notify::unread_count(cfg, owner()?, &query).await,
        Op::Changes => notify::changes(cfg, owner()?, &query).await,
        Op::Mark => notify::mark(cfg, env, ctx, &req, owner()?, &body).await,
        Op::Stream => {
            let deadline = token_deadline(&req, route, cfg);
            notify::stream(env, &req, owner()?, deadline).await
        }
        Op::Bulk => notify::bulk(cfg, env, ctx, &req, owner()?, &body).await,
        Op::GetPreferences => notify::preferences(cfg, ctx, owner()?).await,
        Op::PutPreferences => notify::set_preferences(cfg, owner()?, &body).await,
        Op::DeleteItem => {
            let key = matched.param.unwrap_or_default();
            notify::delete(cfg, env, ctx, &req, owner()?, &key).await
        }
        Op::CreateEvent => notify::create(cfg, env, ctx, &req, &body).await,
        Op::Retract => notify::retract(cfg, env, ctx, &req, &body).await,
        Op::AdminIndexes => notify::ensure_indexes(cfg).await,
        Op::DeadLetters => notify::dead_letters(cfg, &query).await,
        Op::ReplayDeadLetters => notify::replay_dead_letters(cfg, env, &body).await,
        #[cfg(feature = "bench")]
        Op::BenchNoop | Op::BenchGeo | Op::BenchIp | Op::BenchAuth => {
            bench::serve(route.op, &req, env, ctx, (cfg, st), &query, &body).await
        }
    }
}

fn bearer(req: &Request) -> Option<String> {
    let h = req.headers().get("Authorization").ok().flatten()?;
    let (scheme, token) = h.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// The user token a request carries. Browsers cannot set headers on a WebSocket: the stream
/// also takes the token from its subprotocol list.
fn user_token(req: &Request, route: &Route) -> Option<String> {
    bearer(req).or_else(|| {
        let p = req.headers().get("Sec-WebSocket-Protocol").ok().flatten()?;
        (route.op == Op::Stream)
            .then(|| crate::notify::badge::token_from_protocols(&p).map(str::to_owned))
            .flatten()
    })
}

/// When the stream's socket must close: its (verified) token's `exp` plus the leeway.
fn token_deadline(req: &Request, route: &Route, cfg: &Config) -> Option<f64> {
    let exp = crate::auth::jwt::parse(&user_token(req, route)?)
        .ok()?
        .claims
        .exp?;
    let leeway = cfg.auth.as_ref().map_or(0, |a| a.leeway_s);
    Some(crate::notify::expiry::deadline_ms(exp, leeway))
}

async fn authorize(req: &Request, route: &Route, cfg: &Config, st: &State) -> ApiResult<Caller> {
    match route.access {
        Access::Public => Ok(Caller::Anonymous),
        Access::User => {
            let v = st.verifier.as_ref().ok_or_else(|| {
                not_configured("user authentication (AUTH_HS256_SECRET or AUTH_JWKS_URL)")
            })?;
            let token = user_token(req, route).ok_or(AuthError::Missing)?;
            let sub = v.verify(&token, Date::now().as_millis() as f64).await?;
            Ok(Caller::User(sub))
        }
        Access::Service(scope) => {
            if cfg.service_keys.is_empty() {
                return Err(not_configured(
                    "service keys (SERVICE_KEYS or SERVICE_TOKEN)",
                ));
            }
            let token = bearer(req).ok_or(AuthError::Missing)?;
            let key = cfg
                .service_keys
                .authenticate(&token)
                .ok_or(AuthError::BadServiceKey)?;
            if !key.scopes.contains(&scope) {
                return Err(AuthError::MissingScope(scope.as_str()).into());
            }
            Ok(Caller::Service(key.name.clone()))
        }
    }
}

async fn rate_limit(env: &Env, req: &Request, route: &Route, caller: &Caller) -> ApiResult<()> {
    let (binding, key) = match (route.rate_limit, caller) {
        (RateLimit::PerIp, _) => (
            GEO_LIMITER,
            req.headers()
                .get("CF-Connecting-IP")
                .ok()
                .flatten()
                .unwrap_or_else(|| "unknown".into()),
        ),
        (RateLimit::PerUser, Caller::User(sub)) => (USER_LIMITER, sub.clone()),
        _ => return Ok(()),
    };
    let Ok(limiter) = env.rate_limiter(binding) else {
        return Ok(());
    };
    match limiter.limit(key).await {
        Ok(o) if !o.success => Err(ApiError {
            retry_after: Some(60),
            ..ApiError::new(ErrorCode::RateLimited, "too many requests; retry later")
        }),
        // A limiter failure must not take the API down with it.
        _ => Ok(()),
    }
}

/// CORS preflight for any path in the table; `Allow` comes from the table too.
fn preflight(req: &Request, cfg: &Config, path: &str) -> ApiResult<Response> {
    let allowed = routes::allowed(path, cfg.bench);
    if allowed.is_empty() {
        return Err(ApiError::not_found(path));
    }
    let methods = allowed.join(", ");
    let headers = Headers::new();
    let set = |k: &str, v: &str| headers.set(k, v).map_err(internal);
    set("Allow", &format!("{methods}, OPTIONS"))?;
    if let Some(origin) = req.headers().get("Origin").ok().flatten() {
        if !cfg.cors_allows(&origin) {
            return Err(ApiError::new(
                ErrorCode::OriginNotAllowed,
                "this origin is not in CORS_ALLOWED_ORIGINS",
            ));
        }
        set("Access-Control-Allow-Methods", &methods)?;
        set(
            "Access-Control-Allow-Headers",
            "Authorization, Content-Type, Idempotency-Key",
        )?;
        set("Access-Control-Max-Age", "600")?;
    }
    Ok(Response::empty()
        .map_err(internal)?
        .with_status(204)
        .with_headers(headers))
}

/// 200 with a JSON body.
/// `GET /openapi.json`: the document build.rs rendered from `api::openapi::document()`.
fn openapi() -> ApiResult<Response> {
    static DOCUMENT: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));
    let mut resp = Response::ok(DOCUMENT).map_err(internal)?;
    resp.headers_mut()
        .set("Content-Type", "application/json")
        .map_err(internal)?;
    Ok(resp)
}

/// A 200 with `v` as its JSON body (a wire type of `egn_http`, or a `Value`). Serialized
/// straight to the body: through a `Value` first, the wasm measured 11.6 KB larger.
pub fn ok_json<T: serde::Serialize>(v: &T) -> ApiResult<Response> {
    Response::from_json(v).map_err(internal)
}

/// A 500 for failures of the runtime itself (never for bad input).
pub fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::Internal, format!("internal error: {e}"))
}

/// 503 for a missing setting (named, never its value).
pub fn not_configured(what: &str) -> ApiError {
    ApiError::new(
        ErrorCode::NotConfigured,
        format!("{what} is not configured"),
    )
}

/// Renders an error; a 5xx body carries a generic message and the request id, never backend
/// text (that is in the log line).
fn error_response(e: &ApiError, rid: &str) -> Result<Response> {
    let mut body = e.body();
    if e.status >= 500 && !matches!(e.code, ErrorCode::ConfigInvalid | ErrorCode::NotConfigured) {
        body["error"]["message"] = json!(format!(
            "{}; request id {rid}",
            match e.status {
                503 => "temporarily unavailable, retry later",
                502 => "a backend refused the request",
                _ => "internal error",
            }
        ));
    }
    let mut resp = Response::from_json(&body)?.with_status(e.status);
    if let Some(s) = e.retry_after {
        resp.headers_mut().set("Retry-After", &s.to_string())?;
    }
    if let Some(allow) = &e.allow {
        resp.headers_mut().set("Allow", allow)?;
    }
    Ok(resp)
}

/// Largest unread request body that [`discard_unread_body`] reads and drops.
const DISCARD_MAX: usize = 64 * 1024;

/// Reads and drops a small request body that was never read: an early 401, 404, 405 or 429, or
/// a route that takes no body. workerd does not reliably keep a connection whose request body
/// was left unread: it closes it, and the client's next request on that connection can fail
/// with a reset (measured: 15 of 1 000 requests after a 401 that left a 16-byte body unread,
/// none after a read body). Declared bodies over `DISCARD_MAX` and chunked ones stay unread:
/// answering before them (a 413 from `Content-Length`) is the point.
async fn discard_unread_body(raw: &worker::web_sys::Request) {
    if raw.body_used() || raw.body().is_none() {
        return;
    }
    if !declared_length(raw).is_some_and(|n| n > 0 && n <= DISCARD_MAX) {
        return;
    }
    if let Ok(p) = raw.array_buffer() {
        // The bytes are not wanted; a failure to read them changes nothing for this answer.
        let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    }
}

/// The request's `Content-Length`, when it declares a valid one.
fn declared_length(raw: &worker::web_sys::Request) -> Option<usize> {
    raw.headers()
        .get("content-length")
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
}

async fn read_body(req: &mut Request, limit: usize) -> ApiResult<Vec<u8>> {
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("request body over {limit} bytes"),
        )
    };
    if declared_length(req.inner()).is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let body = req
        .bytes()
        .await
        .map_err(|e| ApiError::new(ErrorCode::UnreadableBody, e.to_string()))?;
    if body.len() > limit {
        return Err(too_large());
    }
    Ok(body)
}

async fn healthz(env: &Env, st: &State) -> ApiResult<Response> {
    let manifest = state::manifest(env).await;
    let geo = geo::health(env).await;
    let (config, declared) = match &st.config {
        Ok(c) => (None, c.declared_keys.clone()),
        Err(e) => (
            Some(ConfigProblem {
                error: e.to_string(),
                var: e.var.to_string(),
            }),
            Vec::new(),
        ),
    };
    // Names only: a missing secret shows here instead of as a 503 on the first real request.
    let mut missing: Vec<String> =
        crate::config::missing_secrets(|n| state::lookup(env, n).is_some())
            .into_iter()
            .map(String::from)
            .collect();
    missing.extend(
        declared
            .iter()
            .filter(|d| state::lookup(env, &d.secret).is_none())
            .map(|d| d.secret.clone()),
    );
    // Refused secrets and placeholders (deployed workers only), all of them, by name only.
    let get = |n: &str| state::lookup(env, n);
    let refused = crate::config::secrets::refused(&get)
        .into_iter()
        .map(|r| RefusedSecret {
            var: r.var,
            reason: r.weakness.to_string(),
        })
        .collect();
    let data_api = match &st.config {
        Ok(c) => Some(data_api_probe(c).await),
        Err(_) => None,
    };
    let ok = geo.status == GeoStatus::Ok
        && st.config.is_ok()
        && data_api.as_ref().is_none_or(|p| p.error.is_none());
    let body = Health {
        status: if ok {
            HealthStatus::Ok
        } else {
            HealthStatus::Degraded
        },
        version: env!("CARGO_PKG_VERSION"),
        config,
        geo,
        ipdb: ip::health(st.config.as_ref().map_or(45, |c| c.ipdb.stale_after_days)),
        data_api,
        secrets: Secrets { missing, refused },
        auth: st.verifier.as_ref().map(|v| AuthHealth {
            jwks_fetches: v.jwks_fetches(),
        }),
        assets: Assets {
            geo_source: manifest["geo"]["source"].clone(),
            ip_source: manifest["ip"]["source"].clone(),
            format_version: manifest["format_version"].clone(),
        },
    };
    Response::from_json(&body)
        .map(|r| r.with_status(if ok { 200 } else { 503 }))
        .map_err(internal)
}

thread_local! {
    /// The Data API answered a probe in this isolate: later `/healthz` calls skip it.
    static DATA_API_PROBED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// One `find` against the Data API (until one succeeds in this isolate), so a base URL that
/// leads nowhere shows in `/healthz` as `data_api_not_found` instead of as 404s on every call.
async fn data_api_probe(cfg: &Config) -> DataApiProbe {
    if cfg.data_api.is_none() {
        return DataApiProbe::state(ProbeState::NotConfigured);
    }
    if DATA_API_PROBED.with(std::cell::Cell::get) {
        return DataApiProbe::state(ProbeState::Ok);
    }
    let Ok(store) = factory::store(cfg) else {
        return DataApiProbe::state(ProbeState::NotConfigured);
    };
    let mut fields = serde_json::Map::new();
    fields.insert("filter".into(), json!({ "_id": "healthz-probe" }));
    fields.insert("limit".into(), json!(1));
    let result = store
        .api()
        .action("find", &cfg.notify.collection, fields)
        .await;
    match crate::backend::data_api::probe_problem(&result) {
        None => {
            DATA_API_PROBED.with(|p| p.set(true));
            DataApiProbe::state(ProbeState::Ok)
        }
        Some((problem, message)) => DataApiProbe {
            probe: ProbeState::Failed,
            error: Some(ProbeError::from(problem)),
            message: Some(message),
        },
    }
}
