//! The one error type of the HTTP surface and its JSON body `{"error":{"code","message"}}`.

use egn_core::auth::AuthError;
use egn_core::backend::BackendError;
use egn_core::geo::{GeoError, Rejected};
use egn_core::notify::NotifyError;
use serde::Serialize;
use serde_json::json;
use std::fmt;

/// Declares [`ErrorCode`] from one table: each variant beside its wire string, its HTTP status
/// and when it is answered, so the enum, [`ErrorCode::ALL`], [`ErrorCode::as_str`],
/// [`ErrorCode::status`] and docs/api.md's table ([`ErrorCode::reference_markdown`]) cannot drift apart,
/// and no call site picks a status of its own.
macro_rules! error_codes {
    ($($variant:ident => ($wire:literal, $status:literal, $when:literal),)+) => {
        /// Every error code the API answers with: stable, snake_case on the wire, never reworded.
        /// OpenAPI lists them from here, and tests switch on them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $(#[doc = concat!("`", $wire, "` (", stringify!($status), "): ", $when, ".")] $variant,)+
        }

        impl ErrorCode {
            /// Every code, in table order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code on the wire.
            #[must_use]
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)+
                }
            }

            /// The HTTP status every answer with this code carries.
            #[must_use]
            pub const fn status(self) -> u16 {
                match self {
                    $(ErrorCode::$variant => $status,)+
                }
            }

            /// When the API answers it, in words (docs/api.md's error table).
            #[must_use]
            pub const fn when(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $when,)+
                }
            }
        }
    };
}

error_codes! {
    AssetCorrupt => ("asset_corrupt", 503, "a bundled or published data file failed validation"),
    AssetUnavailable => ("asset_unavailable", 503, "a data file could not be read from the assets binding"),
    AuthUnavailable => ("auth_unavailable", 503, "the signing keys (JWKS) could not be fetched"),
    BackendDecode => ("backend_decode", 502, "a backend answered something the worker could not read"),
    BackendRejected => ("backend_rejected", 502, "a backend refused the request"),
    BackendUnavailable => ("backend_unavailable", 503, "a backend (Data API, Redis, queue) could not be reached, or a write failed part-way"),
    BatchTooLarge => ("batch_too_large", 400, "a batch over its route's limit"),
    ConfigInvalid => ("config_invalid", 503, "a variable or secret does not parse (the message names it); every route but `/healthz` and `/openapi.json`"),
    DuplicateKey => ("duplicate_key", 503, "a write raced another on a unique index; retry"),
    EmptyBatch => ("empty_batch", 400, "a batch with nothing in it"),
    ErasureNotFound => ("erasure_not_found", 404, "no erasure job with that id"),
    FieldTooLong => ("field_too_long", 422, "an event field over its length limit"),
    HubUnavailable => ("hub_unavailable", 503, "the badge hub (Durable Object) could not be reached"),
    IdempotencyInFlight => ("idempotency_in_flight", 409, "a request with this `Idempotency-Key` is still running (with `Retry-After`)"),
    IdempotencyKeyReused => ("idempotency_key_reused", 422, "an `Idempotency-Key` sent again with a different body"),
    InsufficientScope => ("insufficient_scope", 403, "the service key lacks the route's scope"),
    Internal => ("internal", 500, "a failure of the runtime itself"),
    InvalidAction => ("invalid_action", 400, "a bulk `action` that does not exist"),
    InvalidAudience => ("invalid_audience", 401, "no accepted `aud` in the user token"),
    InvalidCharacters => ("invalid_characters", 422, "an event field with characters it may not hold"),
    InvalidCoordinate => ("invalid_coordinate", 400, "a latitude or longitude out of range"),
    InvalidCursor => ("invalid_cursor", 400, "a `cursor` or `since` this API did not hand out"),
    InvalidEvents => ("invalid_events", 422, "events of a batch are invalid (`error.details`: each by index)"),
    InvalidFlag => ("invalid_flag", 400, "a mark `flag` that does not exist"),
    InvalidIdempotencyKey => ("invalid_idempotency_key", 400, "an `Idempotency-Key` that is empty, too long or not printable ASCII"),
    InvalidIp => ("invalid_ip", 400, "not an IPv4 or IPv6 address"),
    InvalidIssuer => ("invalid_issuer", 401, "the user token's `iss` is not the configured issuer"),
    InvalidJson => ("invalid_json", 400, "a body that is not the route's JSON object"),
    InvalidNumber => ("invalid_number", 400, "a query number that does not parse"),
    InvalidParameter => ("invalid_parameter", 400, "a query parameter out of its range"),
    InvalidPath => ("invalid_path", 400, "a path that is not valid percent-encoded UTF-8"),
    InvalidPoint => ("invalid_point", 400, "a point of a batch is not `{lat, lon}` or `[lat, lon]` in range (the message names its index)"),
    InvalidServiceKey => ("invalid_service_key", 401, "a bearer token that is no configured service key"),
    InvalidSignature => ("invalid_signature", 401, "the user token's signature does not verify"),
    InvalidTarget => ("invalid_target", 400, "a mark names neither one `itemKey` nor `all`"),
    InvalidToken => ("invalid_token", 401, "a user token that is not a well-formed JWT"),
    InvalidUrl => ("invalid_url", 400, "a URL the runtime could not parse"),
    IpZoneNotSupported => ("ip_zone_not_supported", 400, "an IPv6 address with a zone id (`%eth0`)"),
    ItemNotFound => ("item_not_found", 404, "mark or delete of an item the user does not have"),
    MethodNotAllowed => ("method_not_allowed", 405, "a method the path does not serve (with `Allow`)"),
    MissingField => ("missing_field", 422, "a required body field is absent"),
    MissingParameter => ("missing_parameter", 400, "a required query parameter is absent"),
    NotConfigured => ("not_configured", 503, "the route needs a setting or binding that is not there (the message names it)"),
    NotFound => ("not_found", 404, "no route for the path"),
    OriginNotAllowed => ("origin_not_allowed", 403, "a preflight from an origin `CORS_ALLOWED_ORIGINS` does not list"),
    PayloadTooLarge => ("payload_too_large", 413, "a body over the route's limit"),
    RateLimited => ("rate_limited", 429, "over the rate limit (with `Retry-After`)"),
    TimeOutOfRange => ("time_out_of_range", 422, "an event time too far in the past or the future"),
    TokenExpired => ("token_expired", 401, "the user token has expired"),
    TokenNotYetValid => ("token_not_yet_valid", 401, "the user token's `nbf` is in the future"),
    Unauthorized => ("unauthorized", 401, "no `Authorization: Bearer` token"),
    UnknownCategory => ("unknown_category", 422, "a category that is not configured"),
    UnknownKid => ("unknown_kid", 401, "the user token's `kid` is not among the issuer's keys"),
    UnreadableBody => ("unreadable_body", 400, "a body the runtime could not read"),
    UpgradeRequired => ("upgrade_required", 426, "a plain request to the WebSocket route"),
    UnsupportedAlg => ("unsupported_alg", 401, "the user token's `alg` is not accepted"),
}

impl ErrorCode {
    /// docs/api.md's error table: every code by status, then name, with when it is answered
    /// and what its body says (a 5xx says only the kind of failure and the request id, except
    /// the two settings codes, which name the variable). `UPDATE_DOCS=1 cargo test --test docs`
    /// writes it.
    #[must_use]
    pub fn reference_markdown() -> String {
        let mut codes = ErrorCode::ALL.to_vec();
        codes.sort_by_key(|c| (c.status(), c.as_str()));
        let mut out = String::from("| status | code | when |\n|---|---|---|\n");
        for c in codes {
            let message = ApiError::new(c, "…").public_message("<id>").into_owned();
            let note = if message == "…" || c.status() < 500 {
                String::new()
            } else {
                format!("; the body says \"{message}\"")
            };
            out.push_str(&format!(
                "| {} | `{}` | {}{note} |\n",
                c.status(),
                c.as_str(),
                c.when()
            ));
        }
        out
    }
}

// The one mapping from the core's errors to codes (and so to statuses): the core names neither.
// No arm is a catch-all and the core's enums are exhaustive (they never leave the workspace), so
// a variant added there fails to compile here until it has a code.

impl From<&BackendError> for ErrorCode {
    fn from(e: &BackendError) -> Self {
        match e {
            BackendError::Unavailable { .. } => ErrorCode::BackendUnavailable,
            BackendError::Rejected { .. } => ErrorCode::BackendRejected,
            BackendError::DuplicateKey { .. } => ErrorCode::DuplicateKey,
            BackendError::Decode(_) => ErrorCode::BackendDecode,
        }
    }
}

impl From<&NotifyError> for ErrorCode {
    fn from(e: &NotifyError) -> Self {
        match e {
            NotifyError::Missing { .. } | NotifyError::MissingArgument { .. } => {
                ErrorCode::MissingField
            }
            NotifyError::TooLong { .. } => ErrorCode::FieldTooLong,
            NotifyError::InvalidChars { .. } => ErrorCode::InvalidCharacters,
            NotifyError::UnknownCategory { .. } => ErrorCode::UnknownCategory,
            NotifyError::TimeOutOfRange { .. } => ErrorCode::TimeOutOfRange,
            NotifyError::InvalidCursor => ErrorCode::InvalidCursor,
            NotifyError::ItemNotFound => ErrorCode::ItemNotFound,
            NotifyError::InvalidEvents(_) => ErrorCode::InvalidEvents,
            NotifyError::QueueRequired { .. } | NotifyError::QueueNotConfigured => {
                ErrorCode::NotConfigured
            }
            NotifyError::Queue(_) | NotifyError::PartlyWritten(_) => ErrorCode::BackendUnavailable,
            NotifyError::NotYetInEffect(b) | NotifyError::Backend(b) => b.into(),
            NotifyError::Hub(_) => ErrorCode::HubUnavailable,
            NotifyError::ErasureNotFound => ErrorCode::ErasureNotFound,
        }
    }
}

impl From<&AuthError> for ErrorCode {
    fn from(e: &AuthError) -> Self {
        match e {
            AuthError::Missing => ErrorCode::Unauthorized,
            AuthError::Malformed(_) => ErrorCode::InvalidToken,
            AuthError::UnsupportedAlg => ErrorCode::UnsupportedAlg,
            AuthError::WrongIssuer => ErrorCode::InvalidIssuer,
            AuthError::WrongAudience => ErrorCode::InvalidAudience,
            AuthError::Expired => ErrorCode::TokenExpired,
            AuthError::NotYetValid => ErrorCode::TokenNotYetValid,
            AuthError::UnknownKid => ErrorCode::UnknownKid,
            AuthError::BadSignature => ErrorCode::InvalidSignature,
            AuthError::BadServiceKey => ErrorCode::InvalidServiceKey,
            AuthError::MissingScope(_) => ErrorCode::InsufficientScope,
            AuthError::KeysUnavailable(_) => ErrorCode::AuthUnavailable,
        }
    }
}

impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        ApiError::new(ErrorCode::from(&e), e.to_string())
    }
}

impl From<NotifyError> for ApiError {
    fn from(e: NotifyError) -> Self {
        let mut api = ApiError::new(ErrorCode::from(&e), e.to_string());
        if let NotifyError::InvalidEvents(bad) = &e {
            // Every invalid event by index (the first 100).
            let details = bad
                .iter()
                .take(100)
                .map(|(i, e)| Issue {
                    index: *i,
                    code: ErrorCode::from(e).as_str(),
                    message: e.to_string(),
                })
                .collect::<Vec<_>>();
            api.details = Some(details.into_boxed_slice());
        }
        api
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        ApiError::new(ErrorCode::from(&e), e.to_string())
    }
}

impl From<Rejected> for ApiError {
    fn from(r: Rejected) -> Self {
        ApiError::asset_corrupt(&r.path, r.error)
    }
}

/// A geo lookup's error: the tile source's own (already an [`ApiError`]) or a rejected asset.
impl<E: Into<ApiError>> From<GeoError<E>> for ApiError {
    fn from(e: GeoError<E>) -> Self {
        match e {
            GeoError::Read(e) => e.into(),
            GeoError::Rejected(r) => r.into(),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// An error answer: HTTP status, a stable machine-readable code and a human message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} {code}: {message}", code.status())]
pub struct ApiError {
    /// Stable code clients can switch on; it also gives the HTTP status ([`ApiError::status`]).
    pub code: ErrorCode,
    /// Human-readable detail; never contains secrets.
    pub message: String,
    /// Seconds a client should wait before retrying (429, 503).
    pub retry_after: Option<u32>,
    /// The `Allow` header of a 405.
    pub allow: Option<String>,
    /// Structured detail under `error.details` (e.g. each invalid event of a batch).
    pub details: Option<Box<[Issue]>>,
}

/// One invalid part of a request (`error.details`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Issue {
    /// Its position (an event's index in the batch).
    pub index: usize,
    /// Its stable code.
    pub code: &'static str,
    /// Human-readable; may change.
    pub message: String,
}

/// Every 4xx/5xx body (except `/healthz`'s 503, which is the health body).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Error"))]
pub struct ErrorBody<'a> {
    /// The error.
    pub error: ErrorDetail<'a>,
}

/// The error of an [`ErrorBody`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ErrorDetail<'a> {
    /// Stable; clients switch on it.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(regex(pattern = "^[a-z][a-z0-9_]*$"))
    )]
    pub code: &'static str,
    /// Human-readable; may change.
    pub message: &'a str,
    /// `invalid_events`: each invalid event of a batch (the first 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Vec<Issue>"))]
    pub details: Option<&'a [Issue]>,
}

impl ApiError {
    /// A new error; its status is the code's ([`ErrorCode::status`]). A 503 carries
    /// `Retry-After: 5`: the worker keeps running and the next call may succeed.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            retry_after: (code.status() == 503).then_some(5),
            allow: None,
            details: None,
        }
    }

    /// The HTTP status: the code's, never a second copy beside it.
    #[must_use]
    pub const fn status(&self) -> u16 {
        self.code.status()
    }

    /// 404 for an unknown route.
    #[must_use]
    pub fn not_found(path: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("no route for {path}"))
    }

    /// 405 with the `Allow` header's value.
    #[must_use]
    pub fn method_not_allowed(method: &str, allowed: &str) -> Self {
        ApiError {
            allow: Some(allowed.to_owned()),
            ..Self::new(
                ErrorCode::MethodNotAllowed,
                format!("{method} not allowed; use {allowed}"),
            )
        }
    }

    /// 500 for a failure of the runtime itself (never for bad input).
    #[must_use]
    pub fn internal(e: impl fmt::Display) -> Self {
        Self::new(ErrorCode::Internal, format!("internal error: {e}"))
    }

    /// 503 for a missing setting (named, never its value).
    #[must_use]
    pub fn not_configured(what: &str) -> Self {
        Self::new(
            ErrorCode::NotConfigured,
            format!("{what} is not configured"),
        )
    }

    /// 503 for a configuration that did not parse: every route but `/healthz` and the document.
    #[must_use]
    pub fn config_invalid(e: impl fmt::Display) -> Self {
        Self::new(
            ErrorCode::ConfigInvalid,
            format!("configuration error: {e}"),
        )
    }

    /// 503 for an asset that could not be read (`what` says which and why).
    #[must_use]
    pub fn asset_unavailable(what: impl Into<String>) -> Self {
        Self::new(ErrorCode::AssetUnavailable, what)
    }

    /// 503 for an asset that failed validation.
    #[must_use]
    pub fn asset_corrupt(path: &str, e: impl fmt::Display) -> Self {
        Self::new(ErrorCode::AssetCorrupt, format!("{path}: {e}"))
    }

    /// 400 for a URL the runtime could not parse.
    #[must_use]
    pub fn invalid_url() -> Self {
        Self::new(ErrorCode::InvalidUrl, "unparseable URL")
    }

    /// 400 for a body the runtime could not read.
    #[must_use]
    pub fn unreadable_body(e: impl fmt::Display) -> Self {
        Self::new(ErrorCode::UnreadableBody, e.to_string())
    }

    /// 413 for a body over the route's limit (declared or read).
    #[must_use]
    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            ErrorCode::PayloadTooLarge,
            format!("request body over {limit} bytes"),
        )
    }

    /// 429 from a rate limiter: retry after its one-minute window.
    #[must_use]
    pub fn rate_limited() -> Self {
        ApiError {
            retry_after: Some(60),
            ..Self::new(ErrorCode::RateLimited, "too many requests; retry later")
        }
    }

    /// 403 for a preflight from an origin `CORS_ALLOWED_ORIGINS` does not list.
    #[must_use]
    pub fn origin_not_allowed() -> Self {
        Self::new(
            ErrorCode::OriginNotAllowed,
            "this origin is not in CORS_ALLOWED_ORIGINS",
        )
    }

    /// 401 for a user route reached without a user (the route table makes it unreachable).
    #[must_use]
    pub fn user_token_required() -> Self {
        Self::new(ErrorCode::Unauthorized, "user token required")
    }

    /// 426 for a plain request to a WebSocket route.
    #[must_use]
    pub fn upgrade_required() -> Self {
        Self::new(
            ErrorCode::UpgradeRequired,
            "this route speaks WebSocket (Upgrade: websocket)",
        )
    }

    /// 400 for a query parameter out of its range.
    #[must_use]
    pub fn invalid_parameter(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParameter, message)
    }

    /// The message a client sees: a 5xx says only what kind of failure and the request id (the
    /// cause, backend text included, goes to the log line, [`ApiError::log_detail`]); a missing
    /// or invalid setting keeps its message, which names the variable and never its value.
    #[must_use]
    pub fn public_message(&self, request_id: &str) -> std::borrow::Cow<'_, str> {
        let generic = match self.code {
            ErrorCode::ConfigInvalid | ErrorCode::NotConfigured => None,
            c if c.status() == 503 => Some("temporarily unavailable, retry later"),
            c if c.status() == 502 => Some("a backend refused the request"),
            c if c.status() >= 500 => Some("internal error"),
            _ => None,
        };
        match generic {
            Some(g) => format!("{g}; request id {request_id}").into(),
            None => self.message.as_str().into(),
        }
    }

    /// The message for the request's log line: only a 5xx's (a 4xx's is the client's own input).
    #[must_use]
    pub fn log_detail(&self) -> Option<&str> {
        (self.status() >= 500).then_some(self.message.as_str())
    }

    /// The headers the answer carries beside the body: `Retry-After`, and `Allow` on a 405.
    pub fn headers(&self) -> impl Iterator<Item = (&'static str, String)> + '_ {
        let retry = self.retry_after.map(|s| ("Retry-After", s.to_string()));
        let allow = self.allow.clone().map(|a| ("Allow", a));
        retry.into_iter().chain(allow)
    }

    /// The JSON body as a client sees it ([`ApiError::public_message`]).
    pub fn public_body(&self, request_id: &str) -> serde_json::Value {
        json!(ErrorBody {
            error: ErrorDetail {
                code: self.code.as_str(),
                message: &self.public_message(request_id),
                details: self.details.as_deref(),
            },
        })
    }

    /// The JSON body with the full message (the health report's own fragments).
    pub fn body(&self) -> serde_json::Value {
        json!(ErrorBody {
            error: ErrorDetail {
                code: self.code.as_str(),
                message: &self.message,
                details: self.details.as_deref(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_unique_snake_case_and_answers_an_error_status() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            let w = c.as_str();
            assert!(seen.insert(w), "{w} twice");
            assert!(
                w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{w}"
            );
            assert!((400..=599).contains(&c.status()), "{w}: {}", c.status());
        }
    }

    #[test]
    fn a_503_asks_for_a_retry_and_nothing_else_does() {
        for c in ErrorCode::ALL {
            let e = ApiError::new(*c, "m");
            assert_eq!(e.status(), c.status());
            assert_eq!(e.retry_after.is_some(), c.status() == 503, "{c}");
        }
    }

    #[test]
    fn a_5xx_body_hides_its_cause_behind_the_request_id_except_for_settings() {
        let rid = "r1";
        let cases = [
            (
                ErrorCode::BackendUnavailable,
                "temporarily unavailable, retry later; request id r1",
            ),
            (
                ErrorCode::AssetCorrupt,
                "temporarily unavailable, retry later; request id r1",
            ),
            (
                ErrorCode::AuthUnavailable,
                "temporarily unavailable, retry later; request id r1",
            ),
            (
                ErrorCode::BackendRejected,
                "a backend refused the request; request id r1",
            ),
            (
                ErrorCode::BackendDecode,
                "a backend refused the request; request id r1",
            ),
            (ErrorCode::Internal, "internal error; request id r1"),
            (ErrorCode::ConfigInvalid, "secret text"),
            (ErrorCode::NotConfigured, "secret text"),
            (ErrorCode::InvalidJson, "secret text"),
        ];
        for (code, want) in cases {
            let e = ApiError::new(code, "secret text");
            assert_eq!(e.public_message(rid), want, "{code}");
            assert_eq!(e.public_body(rid)["error"]["message"], want, "{code}");
            assert_eq!(e.public_body(rid)["error"]["code"], code.as_str());
            assert_eq!(e.log_detail().is_some(), code.status() >= 500, "{code}");
        }
        // Every 5xx outside the two settings codes has one of the three wordings.
        for c in ErrorCode::ALL.iter().filter(|c| c.status() >= 500) {
            let m = ApiError::new(*c, "cause").public_message(rid).into_owned();
            assert!(
                m.contains("cause") != m.ends_with("request id r1"),
                "{c}: {m}"
            );
        }
    }

    #[test]
    fn headers_carry_retry_after_and_allow() {
        let h: Vec<_> = ApiError::new(ErrorCode::BackendUnavailable, "m")
            .headers()
            .collect();
        assert_eq!(h, [("Retry-After", "5".to_owned())]);
        let h: Vec<_> = ApiError::method_not_allowed("PUT", "GET")
            .headers()
            .collect();
        assert_eq!(h, [("Allow", "GET".to_owned())]);
        assert_eq!(
            ApiError::new(ErrorCode::InvalidJson, "m").headers().count(),
            0
        );
    }

    #[test]
    fn constructors_pick_their_codes() {
        assert_eq!(ApiError::internal("x").message, "internal error: x");
        assert_eq!(ApiError::internal("x").status(), 500);
        let e = ApiError::not_configured("the Data API (DATA_API_URL)");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::NotConfigured,
                "the Data API (DATA_API_URL) is not configured"
            )
        );
        let e = ApiError::config_invalid("X: bad");
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::ConfigInvalid, "configuration error: X: bad")
        );
        assert_eq!(
            ApiError::asset_corrupt("geo/t", "short").message,
            "geo/t: short"
        );
        assert_eq!(
            ApiError::asset_unavailable("a").code,
            ErrorCode::AssetUnavailable
        );
        assert_eq!(ApiError::invalid_parameter("n").status(), 400);
    }

    #[test]
    fn core_errors_map_to_their_codes_and_statuses() {
        let rejected = BackendError::Rejected {
            status: 400,
            code: "BadValue".into(),
            message: "m".into(),
        };
        assert_eq!(ApiError::from(rejected).status(), 502);
        assert_eq!(ApiError::from(NotifyError::InvalidCursor).status(), 400);
        let gone = ApiError::from(NotifyError::ItemNotFound);
        assert_eq!((gone.status(), gone.code), (404, ErrorCode::ItemNotFound));
        let missing = NotifyError::Missing { field: "owner" };
        assert_eq!(ApiError::from(missing).code, ErrorCode::MissingField);
        assert_eq!(
            ApiError::from(AuthError::MissingScope("notify")).status(),
            403
        );
        assert_eq!(ApiError::from(AuthError::Expired).code, "token_expired");
    }

    #[test]
    fn geo_errors_keep_the_sources_answer_or_name_the_rejected_asset() {
        let read: GeoError<ApiError> = GeoError::Read(ApiError::asset_unavailable("tile 404"));
        let read = ApiError::from(read);
        assert_eq!(
            (read.code, read.message.as_str()),
            (ErrorCode::AssetUnavailable, "tile 404")
        );
        let rejected = Rejected {
            path: "geo/tile-3.bin".into(),
            error: egn_core::geo::LoadError::ChecksumMismatch,
        };
        let api = ApiError::from(GeoError::<ApiError>::Rejected(rejected));
        assert_eq!(api.code, ErrorCode::AssetCorrupt);
        assert_eq!(api.status(), 503);
        assert_eq!(api.message, "geo/tile-3.bin: asset checksum mismatch");
    }
}
