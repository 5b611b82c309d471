//! The Workers adapter: converts `worker::Request`/`Response`, implements the ports of
//! `egn_http::dispatch` over the bindings (`ports`), and wires the Durable Object, the queue
//! consumer and the cron. What a request answers is `egn_http::handle`'s; flows live in the core.

mod assets;
mod geo;
mod http_client;
mod hub;
mod ip;
mod ports;
mod queue;
mod state;
mod webcrypto;

use egn_http::dispatch::{self, Answer, Handled, Target};
use egn_http::pipeline::{self, Caller, RequestHeaders};
use egn_http::ApiError;
use ports::Req;
use serde_json::Value;
use worker::{
    event, Context, Date, Env, Headers, Request, Response, ResponseBuilder, Result,
    ScheduleContext, ScheduledEvent,
};

/// One request's bindings: the ports (`ports.rs`) are implemented over it. Defined here, beside
/// the modules that build one (the request, the queue consumer, the IP publisher), so they and
/// `ports` name their parent, not each other.
pub struct Edge<'a> {
    pub env: &'a Env,
    pub ctx: &'a Context,
}

/// Logs `line` at `level`.
pub fn log_at(level: egn_http::dispatch::Level, line: &str) {
    use egn_http::dispatch::Level;
    match level {
        Level::Info => worker::console_log!("{line}"),
        Level::Warn => worker::console_warn!("{line}"),
        Level::Error => worker::console_error!("{line}"),
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
    // The raw method: workers-rs maps methods it does not know to GET.
    let method = req.inner().method();
    let path = req.path();
    // The log names the route, never an owner id or an item key in a path (docs/privacy.md).
    let logged_path = egn_http::routes::log_path(&path).into_owned();
    let query = req.url().ok().map(|u| u.query().unwrap_or("").to_owned());
    let mut req = Req(req);
    let rid = pipeline::request_id(&req, random_id);
    let origin = req.header("Origin");
    let st = state::get(&env);
    let mut caller = Caller::Anonymous;
    // The same JS object (`Clone::clone`, not the JS `clone()` that tees the body): after the
    // answer it shows whether the body was read.
    let raw = Clone::clone(req.0.inner());
    let target = Target {
        method: &method,
        path: &path,
        query: query.as_deref(),
    };
    let edge = Edge {
        env: &env,
        ctx: &ctx,
    };
    let result = dispatch::handle(&mut req, target, &st, &edge, &mut caller).await;
    discard_unread_body(&raw).await;
    let config = st.config.as_ref().ok();
    let (handled, error) = dispatch::finish(result, &rid, origin.as_deref(), config);
    let mut line = pipeline::LogLine {
        rid: &rid,
        method: &method,
        path: &logged_path,
        status: 0,
        ms: None,
        caller: &caller,
    };
    let resp = match handled {
        Handled::Upgrade(resp) if resp.status_code() == 101 => {
            // A WebSocket handed over by the hub: the hub's answer has immutable headers, so
            // the handshake is answered anew with its protocol and the request id.
            line.status = resp.status_code();
            log(&line.json(None));
            return upgrade_with_request_id(resp, &rid);
        }
        Handled::Upgrade(resp) => {
            set_headers(
                resp.headers(),
                &pipeline::answer_headers(&rid, origin.as_deref(), config),
            )?;
            resp
        }
        Handled::Answer(answer) => render(answer)?,
    };
    line.status = resp.status_code();
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
    let config = &state::get(&env).config;
    log(&egn_http::cron::scheduled(&ports::Cron(&env), config, &event.cron()).await);
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

/// An answer as the runtime's response.
fn render(answer: Answer) -> Result<Response> {
    let headers = Headers::new();
    set_headers(&headers, &answer.headers)?;
    let builder = ResponseBuilder::new()
        .with_status(answer.status)
        .with_headers(headers);
    Ok(match answer.body {
        Some(body) => builder.fixed(body),
        None => builder.empty(),
    })
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
