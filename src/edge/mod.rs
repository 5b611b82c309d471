//! The Workers adapter: bindings in, core calls, responses out. Routing, who may call, body
//! limits and 404/405 come from the route table in `egn_http::routes`; flows live in the core.

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
mod privacy;
mod queue;
mod state;
mod webcrypto;

use egn_http::health;
use egn_http::pipeline::{self, Caller, Front, Limiter, Ports, RequestBody, RequestHeaders};
use egn_http::routes::Op;
use egn_http::ApiError;
use serde_json::{json, Value};
use state::State;
use std::rc::Rc;
use worker::{
    event, Context, Date, Env, Headers, Request, Response, Result, ScheduleContext, ScheduledEvent,
};

/// The request's headers, for [`pipeline`].
struct Head<'a>(&'a Request);

impl RequestHeaders for Head<'_> {
    fn header(&self, name: &str) -> Option<String> {
        self.0.headers().get(name).ok().flatten()
    }
}

/// The request's body, for [`pipeline::read_body`].
struct Body<'a>(&'a mut Request);

impl RequestBody for Body<'_> {
    type Error = worker::Error;
    async fn bytes(&mut self) -> Result<Vec<u8>> {
        self.0.bytes().await
    }
}

/// The `[[ratelimits]]` bindings (wrangler.toml), for [`pipeline`]. Absent binding = not
/// limited.
struct Limits<'a>(&'a Env);

impl pipeline::RateLimiters for Limits<'_> {
    async fn allows(&self, limiter: Limiter, key: &str) -> Option<bool> {
        let binding = match limiter {
            Limiter::Geo => "GEO_RATE_LIMITER",
            Limiter::User => "USER_RATE_LIMITER",
        };
        let limiter = self.0.rate_limiter(binding).ok()?;
        limiter.limit(key.to_owned()).await.ok().map(|o| o.success)
    }
}

/// Result of a route: a response or the one error type that renders as JSON.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

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
    let rid = pipeline::request_id(&Head(&req), random_id);
    // The raw method: workers-rs maps methods it does not know to GET.
    let method = req.inner().method();
    let path = req.path();
    // The log names the route, never an owner id or an item key in a path (docs/privacy.md).
    let logged_path = egn_http::routes::log_path(&path).into_owned();
    let origin = Head(&req).header("Origin");
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
    let mut line = pipeline::LogLine {
        rid: &rid,
        method: &method,
        path: &logged_path,
        status: resp.status_code(),
        ms: None,
        caller: &caller,
    };
    if line.status == 101 {
        // A WebSocket handed over by the hub: the hub's answer has immutable headers, so the
        // handshake is answered anew with its protocol and the request id.
        log(&line.json(None));
        return upgrade_with_request_id(resp, &rid);
    }
    set_headers(
        resp.headers_mut(),
        &pipeline::answer_headers(&rid, origin.as_deref(), st.config.as_ref().ok()),
    )?;
    line.ms = Some(Date::now().as_millis().saturating_sub(started));
    if line.is_error() {
        log_error(&line.json(error.as_ref()));
    } else {
        log(&line.json(error.as_ref()));
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

/// Random bytes for a request id: getrandom is not in the tree; Math.random is fine for an id
/// that only joins logs.
fn random_id() -> [u8; 8] {
    let mut b = [0u8; 8];
    for x in &mut b {
        *x = (js_sys::Math::random() * 256.0) as u8;
    }
    b
}

fn set_headers(headers: &Headers, list: &[pipeline::Header]) -> Result<()> {
    for h in list {
        if h.append {
            headers.append(h.name, &h.value)?;
        } else {
            headers.set(h.name, &h.value)?;
        }
    }
    Ok(())
}

async fn handle(
    mut req: Request,
    env: &Env,
    ctx: &Context,
    st: &Rc<State>,
    caller: &mut Caller,
) -> ApiResult<Response> {
    let path = req.path();
    let method = req.inner().method();
    let ports = Ports {
        users: st.verifier.as_ref(),
        limiters: &Limits(env),
        now_ms: Date::now().as_millis() as f64,
    };
    let (cfg, matched) =
        match pipeline::front(&Head(&req), (&method, &path), &st.config, &ports, caller).await? {
            Front::Route(cfg, admitted) => (cfg, admitted.matched),
            Front::Health => return healthz(env, st).await,
            Front::Document => return openapi(),
            Front::Preflight(list) => {
                let headers = Headers::new();
                set_headers(&headers, &list).map_err(internal)?;
                return Ok(Response::empty()
                    .map_err(internal)?
                    .with_status(204)
                    .with_headers(headers));
            }
        };
    let route = matched.route;
    let body = pipeline::read_body(route, &mut Body(&mut req)).await?;
    let url = req.url().map_err(|_| ApiError::invalid_url())?;
    let query = url.query().unwrap_or("").to_string();
    let who = caller.clone();
    let owner = || who.owner();
    match route.op {
        Op::Healthz => healthz(env, st).await,
        Op::OpenApi => openapi(),
        Op::Console => console::page(env).await,
        Op::ConsoleAsset => console::file(env, &matched.param.clone().unwrap_or_default()).await,
        Op::CountryOne => geo::get_country(env, &query).await,
        Op::CountryBatch => geo::post_country(env, &query, &body).await,
        Op::IpOne => ip::get_ip(env, ctx, cfg, &query).await,
        Op::IpBatch => ip::post_ip(env, ctx, cfg, &body).await,
        Op::Me => ip::me(&req, env, ctx, cfg, &query).await,
        Op::List => notify::list(cfg, owner()?, &query).await,
        Op::UnreadCount => notify::unread_count(cfg, owner()?, &query).await,
        Op::Changes => notify::changes(cfg, owner()?, &query).await,
        Op::Mark => notify::mark(cfg, env, ctx, &req, owner()?, &body).await,
        Op::Stream => {
            let deadline = pipeline::token_deadline(&Head(&req), route, cfg);
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
        Op::EraseOwner => privacy::erase_owner(cfg, env, &matched.param.unwrap_or_default()).await,
        Op::EraseSender => {
            privacy::erase_sender(cfg, env, &matched.param.unwrap_or_default()).await
        }
        Op::Erasure => privacy::erasure(cfg, &matched.param.unwrap_or_default()).await,
        Op::ExportOwner => privacy::export(cfg, &matched.param.unwrap_or_default(), &query).await,
        Op::ExportMine => privacy::export(cfg, owner()?, &query).await,
        #[cfg(feature = "bench")]
        Op::BenchNoop | Op::BenchGeo | Op::BenchIp | Op::BenchAuth => {
            bench::serve(route.op, &req, env, ctx, (cfg, st), &query, &body).await
        }
    }
}

/// `GET /openapi.json`: `src/openapi.json`, rendered natively from `egn_http::openapi::document()`
/// and kept in step by `tests/docs.rs` (`UPDATE_DOCS=1 cargo test --test docs` rewrites it).
/// A committed file, not a build script: the build script compiled egn-core and egn-http a
/// second time (for the host) in every build of the worker, native and wasm.
fn openapi() -> ApiResult<Response> {
    static DOCUMENT: &str = include_str!("../openapi.json");
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

/// [`ApiError::internal`], for the runtime's own failures.
pub fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(e)
}

/// [`ApiError::not_configured`].
pub fn not_configured(what: &str) -> ApiError {
    ApiError::not_configured(what)
}

/// Renders an error as `egn_http` words it for clients ([`ApiError::public_body`]).
fn error_response(e: &ApiError, rid: &str) -> Result<Response> {
    let mut resp = Response::from_json(&e.public_body(rid))?.with_status(e.status());
    for (name, value) in e.headers() {
        resp.headers_mut().set(name, &value)?;
    }
    Ok(resp)
}

/// The hub's 101 answered anew (its headers are immutable) with `X-Request-Id` beside the
/// chosen subprotocol.
fn upgrade_with_request_id(resp: Response, rid: &str) -> Result<Response> {
    let protocol = resp.headers().get("Sec-WebSocket-Protocol")?;
    let Some(ws) = resp.websocket() else {
        return Err(worker::Error::RustError(
            "a 101 without its WebSocket".into(),
        ));
    };
    let mut out = Response::from_websocket(ws)?;
    if let Some(p) = protocol {
        out.headers_mut().set("Sec-WebSocket-Protocol", &p)?;
    }
    out.headers_mut().set("X-Request-Id", rid)?;
    Ok(out)
}

/// Reads and drops a small request body that was never read ([`pipeline::discard_unread`]
/// says which and why).
async fn discard_unread_body(raw: &worker::web_sys::Request) {
    if raw.body_used() || raw.body().is_none() {
        return;
    }
    let declared = raw.headers().get("content-length").ok().flatten();
    if !pipeline::discard_unread(declared.and_then(|v| v.parse().ok())) {
        return;
    }
    if let Ok(p) = raw.array_buffer() {
        // The bytes are not wanted; a failure to read them changes nothing for this answer.
        let _ = wasm_bindgen_futures::JsFuture::from(p).await;
    }
}

async fn healthz(env: &Env, st: &State) -> ApiResult<Response> {
    let manifest = state::manifest(env).await;
    let data_api = match &st.config {
        Ok(c) => {
            let store = factory::store(c).ok();
            let probed = std::cell::Cell::new(DATA_API_PROBED.with(std::cell::Cell::get));
            let probe = health::probe_data_api(store.as_ref(), &probed).await;
            DATA_API_PROBED.with(|p| p.set(probed.get()));
            Some(probe)
        }
        Err(_) => None,
    };
    let parts = health::Parts {
        config: &st.config,
        geo: geo::health(),
        ipdb: ip::health(health::stale_after_days(&st.config)),
        data_api,
        jwks_fetches: st.verifier.as_ref().map(|v| v.jwks_fetches()),
        manifest: &manifest,
    };
    let (status, body) = health::assemble(parts, &|n| state::lookup(env, n));
    Response::from_json(&body)
        .map(|r| r.with_status(status))
        .map_err(internal)
}

thread_local! {
    /// The Data API answered a probe in this isolate: later `/healthz` calls skip it.
    static DATA_API_PROBED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
