//! A request from the front of the pipeline to its answer: [`handle`] runs
//! [`pipeline::front`](crate::pipeline::front), reads the body and calls the route's handler by
//! its [`Op`]. Everything the handlers need from the platform comes through small ports (the
//! clock, work after the answer and the log, the notification backends, the badge hubs, the
//! assets, the geo layers, the IP database, the environment, the rate limiters); the worker
//! adapter implements them over its bindings and only converts requests and answers.

mod routes;

use crate::assets::{self, Assets};
use crate::health;
use crate::pipeline::UserTokens;
use crate::pipeline::{self, Caller, Front, Header, RateLimiters, RequestBody, RequestHeaders};
use crate::ApiError;
use egn_core::backend::HttpClient;
use egn_core::config::{Config, ConfigError};
use egn_core::geo::Layers;
use egn_core::ip::serving::Served;
use egn_core::ip::IpdbSettings;
use egn_core::notify::batch::EventQueue;
use egn_core::notify::erasure::BadgeHubs;
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;

/// An answer: status, headers (`content-type` among them) and body (`None`: a null body, as a
/// 204 needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Its headers, in order.
    pub headers: Vec<Header>,
    /// Its body.
    pub body: Option<Vec<u8>>,
}

fn header(name: &'static str, value: impl Into<String>) -> Header {
    Header {
        name,
        value: value.into(),
        append: false,
    }
}

impl Answer {
    /// `v` as JSON (`content-type: application/json`), serialized straight to the body: through
    /// a `Value` first, the wasm measured 11.6 KB larger.
    ///
    /// # Errors
    /// 500 when `v` does not serialize.
    pub fn json<T: serde::Serialize>(status: u16, v: &T) -> Result<Self, ApiError> {
        Ok(Self {
            status,
            headers: vec![header("content-type", "application/json")],
            body: Some(serde_json::to_vec(v).map_err(ApiError::internal)?),
        })
    }

    /// A 200 with `v` as JSON.
    ///
    /// # Errors
    /// As [`Answer::json`].
    pub fn ok<T: serde::Serialize>(v: &T) -> Result<Self, ApiError> {
        Self::json(200, v)
    }

    /// An error as `egn_http` words it for clients ([`ApiError::public_body`]), with its
    /// `Retry-After` / `Allow`.
    #[must_use]
    pub fn error(e: &ApiError, rid: &str) -> Self {
        let mut headers = vec![header("content-type", "application/json")];
        headers.extend(e.headers().map(|(n, v)| header(n, v)));
        Self {
            status: e.status(),
            headers,
            body: Some(e.public_body(rid).to_string().into_bytes()),
        }
    }

    /// The header `name`'s value (the last one set), for tests and the adapter.
    #[must_use]
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .rev()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }
}

/// What [`handle`] hands back: an answer, or a WebSocket the owner's hub accepted.
#[derive(Debug)]
pub enum Handled<S> {
    /// An answer to render.
    Answer(Answer),
    /// The hub's `101`, passed on as it is.
    Upgrade(S),
}

/// The request as the handlers read it: headers, the body (read at most once) and what the edge
/// knows of the caller.
pub trait Incoming: RequestHeaders + RequestBody {
    /// `request.cf.country`.
    fn cf_country(&self) -> Option<String>;
    /// `request.cf.timezone`.
    fn cf_timezone(&self) -> Option<String>;
}

/// The request line: the raw method, the path and the query (`None`: the URL did not parse).
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The raw method.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The query string without `?` (empty when none).
    pub query: Option<&'a str>,
}

/// How a line is logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `console.log`.
    Info,
    /// `console.warn`.
    Warn,
    /// `console.error`.
    Error,
}

/// Log lines, each at its level.
pub type Lines = Vec<(Level, String)>;

/// Work that runs after the answer, and the log.
pub trait Background {
    /// Runs `work` after the answer (`waitUntil`) and logs the lines it returns.
    fn after(&self, work: Pin<Box<dyn Future<Output = Lines>>>);
    /// Logs one line now.
    fn log(&self, level: Level, line: &str);
}

/// The clock, ms since the epoch.
pub trait Now {
    /// Now.
    fn now_ms(&self) -> f64;
}

/// The notification core's outbound HTTP and the events queue.
pub trait Backends {
    /// Outbound HTTP (the Data API, Redis).
    type Http: HttpClient + Clone + 'static;
    /// The events queue.
    type Queue: EventQueue;
    /// The HTTP client.
    fn http(&self) -> Self::Http;
    /// The events queue, when bound (else creates take the synchronous path).
    fn queue(&self) -> Option<Self::Queue>;
}

/// The live badge: one hub per owner.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait Badges {
    /// The hubs behind the core's erasure port.
    type Hubs: BadgeHubs;
    /// An accepted WebSocket handover.
    type Socket;
    /// Why a handover failed.
    type Error: Display;
    /// The hubs.
    fn hubs(&self) -> Self::Hubs;
    /// Tells the owners' hubs their inbox changed, after the answer (nothing without hubs).
    fn poke(&self, owners: Vec<String>);
    /// Hands a WebSocket upgrade to `owner`'s hub; `None` without hubs.
    async fn connect(
        &self,
        owner: &str,
        protocols: &str,
        deadline_ms: Option<f64>,
    ) -> Option<Result<Self::Socket, Self::Error>>;
}

/// The isolate's geo layers (their tiles come from [`Assets`]).
pub trait GeoData {
    /// The embedded indexes' bytes.
    type Index: AsRef<[u8]> + Clone;
    /// The layers.
    fn layers(&self) -> Rc<Layers<Self::Index>>;
    /// Their `/healthz` fragment (opening the country index on first use).
    fn geo_health(&self) -> health::GeoHealth {
        health::GeoHealth::of(&self.layers())
    }
}

/// The isolate's IP database.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait IpData {
    /// The database serving now, with the pages `ips` need loaded.
    async fn served(&self, cfg: &IpdbSettings, ips: &[IpAddr]) -> Result<Rc<Served>, ApiError>;
    /// Its `/healthz` fragment.
    fn report(&self, stale_after_days: u32) -> health::IpdbReport;
    /// `s` with every page loaded (`/__bench/ip?all=1`: the whole-table load).
    #[cfg(feature = "bench")]
    async fn served_all(&self, cfg: &IpdbSettings, s: Rc<Served>) -> Result<Rc<Served>, ApiError>;
}

/// Secrets and variables by name (empty counting as unset).
pub trait Environment {
    /// The value of `name`.
    fn var(&self, name: &str) -> Option<String>;
}

/// Every port [`handle`] reads through.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait Ports:
    Now + Background + Backends + Badges + Assets + GeoData + IpData + Environment + RateLimiters
{
    /// `GET /openapi.json`'s document.
    fn document(&self) -> &'static str;
}

/// What an isolate keeps between requests: the configuration parsed once (bindings cannot
/// change within an isolate), the token verifier with its key caches, and what `/healthz`
/// remembers.
pub struct Isolate<U> {
    /// The parsed configuration, or the variable that is wrong.
    pub config: Result<Config, ConfigError>,
    /// User-token verifier (`None` when no issuer is configured).
    pub verifier: Option<U>,
    /// The asset manifest once read (it cannot change within a deployment).
    manifest: RefCell<Option<Value>>,
    /// The Data API answered a probe in this isolate: later `/healthz` calls skip it.
    probed: Cell<bool>,
}

impl<U> Isolate<U> {
    /// A fresh isolate's state.
    #[must_use]
    pub fn new(config: Result<Config, ConfigError>, verifier: Option<U>) -> Self {
        Self {
            config,
            verifier,
            manifest: RefCell::new(None),
            probed: Cell::new(false),
        }
    }
}

/// Answers one request: the configuration gate, the preflight, who is calling, the rate and
/// body limits ([`pipeline::front`]), then the route's handler. `caller` is set as soon as it is
/// known, for the log line.
///
/// # Errors
/// The first step that refuses the request, or the handler's error.
pub async fn handle<P: Ports, U: UserTokens, R: Incoming>(
    req: &mut R,
    target: Target<'_>,
    isolate: &Isolate<U>,
    ports: &P,
    caller: &mut Caller,
) -> Result<Handled<P::Socket>, ApiError> {
    let front = pipeline::Ports {
        users: isolate.verifier.as_ref(),
        limiters: ports,
        now_ms: ports.now_ms(),
    };
    let (method, path) = (target.method, target.path);
    let (cfg, matched) =
        match pipeline::front(req, (method, path), &isolate.config, &front, caller).await? {
            Front::Route(cfg, admitted) => (cfg, admitted.matched),
            Front::Health => return healthz(ports, isolate).await.map(Handled::Answer),
            Front::Document => return Ok(Handled::Answer(document(ports))),
            Front::Preflight(headers) => {
                return Ok(Handled::Answer(Answer {
                    status: 204,
                    headers,
                    body: None,
                }))
            }
        };
    let body = pipeline::read_body(matched.route, req).await?;
    let query = target.query.ok_or_else(ApiError::invalid_url)?;
    let call = routes::Call {
        cfg,
        ports,
        caller,
        query,
        body: &body,
    };
    routes::route(call, req, isolate, matched).await
}

/// `GET /openapi.json`.
fn document(ports: &impl Ports) -> Answer {
    Answer {
        status: 200,
        headers: vec![header("content-type", "application/json")],
        body: Some(ports.document().as_bytes().to_vec()),
    }
}

/// The asset manifest (`Null` until it could be read; a failed read is retried next time).
async fn manifest<U>(assets: &impl Assets, isolate: &Isolate<U>) -> Value {
    if let Some(m) = isolate.manifest.borrow().clone() {
        return m;
    }
    let read = assets::required(assets, "manifest.json").await;
    match read.map(|b| serde_json::from_slice::<Value>(&b)) {
        Ok(Ok(m)) => {
            *isolate.manifest.borrow_mut() = Some(m.clone());
            m
        }
        _ => Value::Null,
    }
}

/// `GET /healthz`: each part's report, the Data API probed once per isolate until it answers.
///
/// # Errors
/// 500 when the body does not serialize.
pub async fn healthz<P: Ports, U: UserTokens>(
    ports: &P,
    isolate: &Isolate<U>,
) -> Result<Answer, ApiError> {
    let manifest = manifest(ports, isolate).await;
    let data_api = match &isolate.config {
        Ok(c) => {
            let store = crate::backends::store(ports.http(), c).ok();
            Some(health::probe_data_api(store.as_ref(), &isolate.probed).await)
        }
        Err(_) => None,
    };
    let parts = health::Parts {
        config: &isolate.config,
        geo: ports.geo_health(),
        ipdb: ports.report(health::stale_after_days(&isolate.config)),
        data_api,
        jwks_fetches: isolate.verifier.as_ref().map(UserTokens::jwks_fetches),
        manifest: &manifest,
    };
    let (status, body) = health::assemble(parts, &|n| ports.var(n));
    Answer::json(status, &body)
}

/// Where [`handle`]'s result becomes the answer: an error rendered for clients, then
/// `X-Request-Id` and CORS on every answer but a WebSocket handover.
pub fn finish<S>(
    result: Result<Handled<S>, ApiError>,
    rid: &str,
    origin: Option<&str>,
    config: Option<&Config>,
) -> (Handled<S>, Option<ApiError>) {
    let (mut handled, error) = match result {
        Ok(h) => (h, None),
        Err(e) => (Handled::Answer(Answer::error(&e, rid)), Some(e)),
    };
    if let Handled::Answer(a) = &mut handled {
        a.headers
            .extend(pipeline::answer_headers(rid, origin, config));
    }
    (handled, error)
}

#[cfg(test)]
mod tests;
