//! The request pipeline before a route's handler, as plain functions over small ports: the
//! configuration gate, CORS and its preflight, who is calling (in the order the route asks for),
//! the rate limit, the body limit and the request id. The worker adapter implements the ports
//! over its bindings ([`RequestHeaders`] over `worker::Request`, [`RateLimiters`] over the
//! `[[ratelimits]]` bindings, [`UserTokens`] over the verifier with WebCrypto and `fetch`); the
//! decisions are here, tested natively against in-memory ports.

use crate::routes::{self, Access, Matched, Op, RateLimit, Route};
use crate::ApiError;
use egn_core::auth::crypto::Crypto;
use egn_core::auth::{AuthError, Verifier};
use egn_core::backend::HttpClient;
use egn_core::config::{Config, ConfigError};

/// The request's headers, by case-insensitive name.
pub trait RequestHeaders {
    /// The value of `name`, if present.
    fn header(&self, name: &str) -> Option<String>;
}

/// Verifies a user token: its `sub`, or why not.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait UserTokens {
    /// The token's subject (the inbox owner) at `now_ms`.
    async fn verify(&self, token: &str, now_ms: f64) -> Result<String, AuthError>;
    /// Its key-set fetches so far (`/healthz` shows them).
    fn jwks_fetches(&self) -> u64;
}

impl<C: Crypto + 'static, H: HttpClient + 'static> UserTokens for Verifier<C, H> {
    async fn verify(&self, token: &str, now_ms: f64) -> Result<String, AuthError> {
        Verifier::verify(self, token, now_ms).await
    }
    fn jwks_fetches(&self) -> u64 {
        Verifier::jwks_fetches(self)
    }
}

/// The rate limiters a route can count against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    /// Per caller IP (the geo routes).
    Geo,
    /// Per user (the user routes).
    User,
}

/// The platform's rate limiters.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait RateLimiters {
    /// Whether `key` may make one more request on `limiter`; `None` when the limiter is not
    /// bound or failed: a limiter failure must not take the API down with it.
    async fn allows(&self, limiter: Limiter, key: &str) -> Option<bool>;
}

/// Who is calling, once authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A public route.
    Anonymous,
    /// A user; the owner of the inbox.
    User(String),
    /// A service key, by name (never its value).
    Service(String),
}

impl Caller {
    /// The caller's kind for the log line (never a user id).
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Caller::Anonymous => "-".into(),
            Caller::User(_) => "user".into(),
            Caller::Service(name) => format!("service:{name}"),
        }
    }

    /// The inbox owner of a user route.
    ///
    /// # Errors
    /// 401 when the caller is not a user (the route table makes that unreachable).
    pub fn owner(&self) -> Result<&str, ApiError> {
        match self {
            Caller::User(sub) => Ok(sub),
            Caller::Anonymous | Caller::Service(_) => Err(ApiError::user_token_required()),
        }
    }
}

/// What a request meets before any route: the configuration must have parsed.
#[derive(Debug)]
pub enum Gate<'a> {
    /// The configuration parsed: route the request.
    Open(&'a Config),
    /// `/healthz` answers anyway: it names the variable that is wrong.
    Health,
    /// `/openapi.json` answers anyway: the contract does not depend on the configuration.
    Document,
}

/// The gate for `path`.
///
/// # Errors
/// 503 `config_invalid` for every other path when the configuration did not parse.
pub fn gate<'a>(config: &'a Result<Config, ConfigError>, path: &str) -> Result<Gate<'a>, ApiError> {
    match config {
        Ok(c) => Ok(Gate::Open(c)),
        // Everything else would be guesswork.
        Err(_) if path == "/healthz" => Ok(Gate::Health),
        Err(_) if path == "/openapi.json" => Ok(Gate::Document),
        Err(e) => Err(ApiError::config_invalid(e)),
    }
}

/// The headers exposed to a cross-origin caller.
pub const EXPOSE_HEADERS: &str = "X-Request-Id, Retry-After, Idempotent-Replayed";
/// The request headers a preflight allows.
pub const ALLOW_HEADERS: &str = "Authorization, Content-Type, Idempotency-Key";

/// A header of an answer: set, or appended to what is there (`Vary`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Its name.
    pub name: &'static str,
    /// Its value.
    pub value: String,
    /// Appended rather than set.
    pub append: bool,
}

fn set(name: &'static str, value: impl Into<String>) -> Header {
    Header {
        name,
        value: value.into(),
        append: false,
    }
}

/// The CORS headers of any answer (not a preflight): none unless the configuration parsed and
/// lists the request's `Origin`.
#[must_use]
pub fn cors_headers(origin: Option<&str>, config: Option<&Config>) -> Vec<Header> {
    match (origin, config) {
        (Some(o), Some(cfg)) if cfg.cors_allows(o) => vec![
            set("Access-Control-Allow-Origin", o),
            set("Access-Control-Expose-Headers", EXPOSE_HEADERS),
            Header {
                name: "Vary",
                value: "Origin".into(),
                append: true,
            },
        ],
        _ => Vec::new(),
    }
}

/// The headers of the `204` answering an `OPTIONS` for any path in the table (`Allow` from the
/// table); the `Access-Control-*` ones only for a cross-origin preflight.
///
/// # Errors
/// 404 for a path no route serves; 403 `origin_not_allowed` for an origin not listed.
pub fn preflight(path: &str, origin: Option<&str>, cfg: &Config) -> Result<Vec<Header>, ApiError> {
    let allowed = routes::allowed(path, cfg.bench);
    if allowed.is_empty() {
        return Err(ApiError::not_found(path));
    }
    let methods = allowed.join(", ");
    let mut headers = vec![set("Allow", format!("{methods}, OPTIONS"))];
    if let Some(origin) = origin {
        if !cfg.cors_allows(origin) {
            return Err(ApiError::origin_not_allowed());
        }
        headers.push(set("Access-Control-Allow-Methods", methods));
        headers.push(set("Access-Control-Allow-Headers", ALLOW_HEADERS));
        headers.push(set("Access-Control-Max-Age", "600"));
    }
    Ok(headers)
}

/// The bearer token of `Authorization`, scheme case-insensitive, empty counting as none.
#[must_use]
pub fn bearer(req: &impl RequestHeaders) -> Option<String> {
    let h = req.header("Authorization")?;
    let (scheme, token) = h.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim().to_owned())
        .filter(|t| !t.is_empty())
}

/// The user token a request carries. Browsers cannot set headers on a WebSocket: the stream
/// also takes the token from its subprotocol list.
#[must_use]
pub fn user_token(req: &impl RequestHeaders, route: &Route) -> Option<String> {
    bearer(req).or_else(|| {
        let p = req.header("Sec-WebSocket-Protocol")?;
        (route.op == Op::Stream)
            .then(|| egn_core::notify::badge::token_from_protocols(&p).map(str::to_owned))
            .flatten()
    })
}

/// When the stream's socket must close: its (verified) token's `exp` plus the leeway.
#[must_use]
pub fn token_deadline(req: &impl RequestHeaders, route: &Route, cfg: &Config) -> Option<f64> {
    let exp = egn_core::auth::jwt::parse(&user_token(req, route)?)
        .ok()?
        .claims
        .exp?;
    let leeway = cfg.auth.as_ref().map_or(0, |a| a.leeway_s);
    Some(egn_core::notify::expiry::deadline_ms(exp, leeway))
}

/// Who is calling, as the route asks: nobody for a public route, a verified user token, or a
/// service key holding the route's scope. Settled before the body is read.
///
/// # Errors
/// 503 `not_configured` when the route's kind of caller cannot be checked at all, else the
/// [`AuthError`]'s code (401, 403 for a missing scope, 503 when the keys cannot be fetched).
pub async fn authorize(
    req: &impl RequestHeaders,
    route: &Route,
    cfg: &Config,
    users: Option<&impl UserTokens>,
    now_ms: f64,
) -> Result<Caller, ApiError> {
    match route.access {
        Access::Public => Ok(Caller::Anonymous),
        Access::User => {
            let v = users.ok_or_else(|| {
                ApiError::not_configured("user authentication (AUTH_HS256_SECRET or AUTH_JWKS_URL)")
            })?;
            let token = user_token(req, route).ok_or(AuthError::Missing)?;
            Ok(Caller::User(v.verify(&token, now_ms).await?))
        }
        Access::Service(scope) => {
            if cfg.service_keys.is_empty() {
                return Err(ApiError::not_configured(
                    "service keys (SERVICE_KEYS or SERVICE_TOKEN)",
                ));
            }
            let token = bearer(req).ok_or(AuthError::Missing)?;
            let key = cfg
                .service_keys
                .authenticate(&token)
                .ok_or(AuthError::BadServiceKey)?;
            if !scope.granted_by(&key.scopes) {
                return Err(AuthError::MissingScope(scope.as_str()).into());
            }
            Ok(Caller::Service(key.name.clone()))
        }
    }
}

/// The limiter and key a request counts against: the geo routes per caller IP
/// (`CF-Connecting-IP`, `unknown` without one), the user routes per user; none otherwise.
#[must_use]
pub fn rate_limit_key(
    req: &impl RequestHeaders,
    route: &Route,
    caller: &Caller,
) -> Option<(Limiter, String)> {
    match (route.rate_limit, caller) {
        (RateLimit::PerIp, _) => Some((
            Limiter::Geo,
            req.header("CF-Connecting-IP")
                .unwrap_or_else(|| "unknown".into()),
        )),
        (RateLimit::PerUser, Caller::User(sub)) => Some((Limiter::User, sub.clone())),
        _ => None,
    }
}

/// Counts the request against its limiter.
///
/// # Errors
/// 429 `rate_limited` (with `Retry-After`) when the limiter refuses it.
pub async fn rate_limit(
    limiters: &impl RateLimiters,
    req: &impl RequestHeaders,
    route: &Route,
    caller: &Caller,
) -> Result<(), ApiError> {
    let Some((limiter, key)) = rate_limit_key(req, route, caller) else {
        return Ok(());
    };
    match limiters.allows(limiter, &key).await {
        Some(false) => Err(ApiError::rate_limited()),
        Some(true) | None => Ok(()),
    }
}

/// The stream route speaks WebSocket only.
///
/// # Errors
/// 426 `upgrade_required` without `Upgrade: websocket`.
pub fn require_websocket(req: &impl RequestHeaders) -> Result<(), ApiError> {
    let upgrade = req.header("Upgrade").unwrap_or_default();
    if !upgrade.eq_ignore_ascii_case("websocket") {
        return Err(ApiError::upgrade_required());
    }
    Ok(())
}

/// The request's `Content-Length`, when it declares a valid one.
#[must_use]
pub fn declared_length(req: &impl RequestHeaders) -> Option<usize> {
    req.header("content-length").and_then(|v| v.parse().ok())
}

/// A body the route takes, checked before it is read (its declared length) and after.
///
/// # Errors
/// 413 `payload_too_large` over the route's limit.
pub fn check_body_len(len: usize, limit: usize) -> Result<(), ApiError> {
    if len > limit {
        return Err(ApiError::payload_too_large(limit));
    }
    Ok(())
}

/// Largest unread request body that the adapter reads and drops after answering.
pub const DISCARD_MAX: usize = 64 * 1024;

/// Whether a body left unread by the answer (an early 401, 404, 405 or 429, or a route that takes
/// no body) is read and dropped: workerd does not reliably keep a connection whose request body
/// was left unread (measured: 15 of 1 000 requests after a 401 that left a 16-byte body unread
/// failed with a reset, none after a read body). Declared bodies over [`DISCARD_MAX`] and
/// chunked ones stay unread: answering before them (a 413 from `Content-Length`) is the point.
#[must_use]
pub fn discard_unread(declared: Option<usize>) -> bool {
    declared.is_some_and(|n| n > 0 && n <= DISCARD_MAX)
}

/// The request id: `cf-ray` at the edge (so logs join Cloudflare's), else `random` in hex.
#[must_use]
pub fn request_id(req: &impl RequestHeaders, random: impl FnOnce() -> [u8; 8]) -> String {
    if let Some(ray) = req.header("cf-ray") {
        if !ray.is_empty() && ray.len() <= 64 && ray.bytes().all(|b| b.is_ascii_graphic()) {
            return ray;
        }
    }
    egn_core::ip::hex(&random())
}

/// What one request's log line says (one JSON line per request; never tokens, secrets or user
/// ids).
pub struct LogLine<'a> {
    /// The request id.
    pub rid: &'a str,
    /// The raw method.
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The answer's status.
    pub status: u16,
    /// Time to answer, ms (`None` for a WebSocket handed over).
    pub ms: Option<u64>,
    /// Who called.
    pub caller: &'a Caller,
}

impl LogLine<'_> {
    /// Whether the line is logged at error level: a `5xx`, which Workers Logs files as an error.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.status >= 500
    }

    /// The line: the error's code when the answer is one, and a 5xx's full cause (backend text
    /// included), which the answer itself never carries.
    #[must_use]
    pub fn json(&self, error: Option<&ApiError>) -> serde_json::Value {
        let mut line = serde_json::json!({
            "rid": self.rid, "method": self.method, "path": self.path, "status": self.status,
        });
        if let Some(ms) = self.ms {
            line["ms"] = ms.into();
        }
        line["caller"] = self.caller.label().into();
        if let Some(e) = error {
            line["code"] = e.code.as_str().into();
            if let Some(cause) = e.log_detail() {
                line["error"] = cause.into();
            }
        }
        line
    }
}

/// A request let through to its handler.
#[derive(Debug)]
pub struct Admitted {
    /// The route and its decoded parameter.
    pub matched: Matched,
    /// Who is calling.
    pub caller: Caller,
}

/// The ports [`admit`] reads through.
pub struct Ports<'a, U, L> {
    /// The user-token verifier (`None` when no issuer is configured).
    pub users: Option<&'a U>,
    /// The rate limiters.
    pub limiters: &'a L,
    /// The clock, ms since the epoch.
    pub now_ms: f64,
}

/// What a routed request (not `OPTIONS`) needs before its handler, in order: the route (404,
/// 405), who is calling (before the body is read), the rate limit, and a declared body length
/// within the route's limit. `caller` is set as soon as it is known, so the log line names it
/// even when a later step refuses the request.
///
/// # Errors
/// The first step that refuses it.
pub async fn admit<U: UserTokens, L: RateLimiters>(
    req: &impl RequestHeaders,
    (method, path): (&str, &str),
    cfg: &Config,
    ports: &Ports<'_, U, L>,
    caller: &mut Caller,
) -> Result<Admitted, ApiError> {
    let matched = routes::resolve(method, path, cfg.bench)?;
    let route = matched.route;
    *caller = authorize(req, route, cfg, ports.users, ports.now_ms).await?;
    rate_limit(ports.limiters, req, route, caller).await?;
    if route.body_limit > 0 {
        if let Some(n) = declared_length(req) {
            check_body_len(n, route.body_limit)?;
        }
    }
    Ok(Admitted {
        matched,
        caller: caller.clone(),
    })
}

/// Where a request goes after the configuration gate, the preflight and [`admit`].
#[derive(Debug)]
pub enum Front<'a> {
    /// `/healthz` under a configuration that did not parse.
    Health,
    /// `/openapi.json` under a configuration that did not parse.
    Document,
    /// An `OPTIONS` request: a 204 with these headers.
    Preflight(Vec<Header>),
    /// A request let through to its route's handler.
    Route(&'a Config, Admitted),
}

/// The pipeline before a handler, in order: the configuration gate, then an `OPTIONS` answered
/// from the route table (no caller needed), then [`admit`].
///
/// # Errors
/// The first step that refuses the request.
pub async fn front<'a, U: UserTokens, L: RateLimiters>(
    req: &impl RequestHeaders,
    (method, path): (&str, &str),
    config: &'a Result<Config, ConfigError>,
    ports: &Ports<'_, U, L>,
    caller: &mut Caller,
) -> Result<Front<'a>, ApiError> {
    let cfg = match gate(config, path)? {
        Gate::Open(c) => c,
        Gate::Health => return Ok(Front::Health),
        Gate::Document => return Ok(Front::Document),
    };
    if method == "OPTIONS" {
        let origin = req.header("Origin");
        return Ok(Front::Preflight(preflight(path, origin.as_deref(), cfg)?));
    }
    let admitted = admit(req, (method, path), cfg, ports, caller).await?;
    Ok(Front::Route(cfg, admitted))
}

/// The request's body, read once.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait RequestBody {
    /// Why it could not be read.
    type Error: std::fmt::Display;
    /// All of its bytes.
    async fn bytes(&mut self) -> Result<Vec<u8>, Self::Error>;
}

/// The body `route` takes: read only when it takes one (else empty and unread), and within its
/// limit once read (a declared length was checked by [`admit`]; a chunked body was not).
///
/// # Errors
/// 400 `unreadable_body` when reading fails, 413 `payload_too_large` over the limit.
pub async fn read_body(route: &Route, body: &mut impl RequestBody) -> Result<Vec<u8>, ApiError> {
    if route.body_limit == 0 {
        return Ok(Vec::new());
    }
    let bytes = body.bytes().await.map_err(ApiError::unreadable_body)?;
    check_body_len(bytes.len(), route.body_limit)?;
    Ok(bytes)
}

/// The headers every answer but a WebSocket handover gets: `X-Request-Id`, then CORS for a
/// listed origin.
#[must_use]
pub fn answer_headers(rid: &str, origin: Option<&str>, config: Option<&Config>) -> Vec<Header> {
    let mut headers = vec![Header {
        name: "X-Request-Id",
        value: rid.to_owned(),
        append: false,
    }];
    headers.extend(cors_headers(origin, config));
    headers
}

#[cfg(test)]
mod tests;
