//! The one error type of the HTTP surface and its JSON body `{"error":{"code","message"}}`.

use egn_core::auth::AuthError;
use egn_core::backend::BackendError;
use egn_core::notify::NotifyError;
use serde::Serialize;
use serde_json::json;
use std::fmt;

/// Declares [`ErrorCode`] from one table: each variant beside its wire string and its HTTP
/// status, so the enum, [`ErrorCode::ALL`], [`ErrorCode::as_str`] and [`ErrorCode::status`] cannot
/// drift apart, and no call site picks a status of its own.
macro_rules! error_codes {
    ($($variant:ident => ($wire:literal, $status:literal),)+) => {
        /// Every error code the API answers with: stable, snake_case on the wire, never reworded.
        /// OpenAPI lists them from here, and tests switch on them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(#[doc = concat!("`", $wire, "` (", stringify!($status), ")")] $variant,)+
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
        }
    };
}

error_codes! {
    AssetCorrupt => ("asset_corrupt", 503),
    AssetUnavailable => ("asset_unavailable", 503),
    AuthUnavailable => ("auth_unavailable", 503),
    BackendDecode => ("backend_decode", 502),
    BackendRejected => ("backend_rejected", 502),
    BackendUnavailable => ("backend_unavailable", 503),
    BatchTooLarge => ("batch_too_large", 400),
    ConfigInvalid => ("config_invalid", 503),
    DuplicateKey => ("duplicate_key", 503),
    EmptyBatch => ("empty_batch", 400),
    FieldTooLong => ("field_too_long", 422),
    IdempotencyInFlight => ("idempotency_in_flight", 409),
    IdempotencyKeyReused => ("idempotency_key_reused", 422),
    InsufficientScope => ("insufficient_scope", 403),
    Internal => ("internal", 500),
    InvalidAction => ("invalid_action", 400),
    InvalidAudience => ("invalid_audience", 401),
    InvalidCharacters => ("invalid_characters", 422),
    InvalidCoordinate => ("invalid_coordinate", 400),
    InvalidCursor => ("invalid_cursor", 400),
    InvalidEvents => ("invalid_events", 422),
    InvalidFlag => ("invalid_flag", 400),
    InvalidIdempotencyKey => ("invalid_idempotency_key", 400),
    InvalidIp => ("invalid_ip", 400),
    InvalidIssuer => ("invalid_issuer", 401),
    InvalidJson => ("invalid_json", 400),
    InvalidNumber => ("invalid_number", 400),
    InvalidParameter => ("invalid_parameter", 400),
    InvalidPath => ("invalid_path", 400),
    InvalidPoint => ("invalid_point", 400),
    InvalidServiceKey => ("invalid_service_key", 401),
    InvalidSignature => ("invalid_signature", 401),
    InvalidTarget => ("invalid_target", 400),
    InvalidToken => ("invalid_token", 401),
    InvalidUrl => ("invalid_url", 400),
    IpZoneNotSupported => ("ip_zone_not_supported", 400),
    ItemNotFound => ("item_not_found", 404),
    MethodNotAllowed => ("method_not_allowed", 405),
    MissingField => ("missing_field", 422),
    MissingParameter => ("missing_parameter", 400),
    NotConfigured => ("not_configured", 503),
    NotFound => ("not_found", 404),
    OriginNotAllowed => ("origin_not_allowed", 403),
    PayloadTooLarge => ("payload_too_large", 413),
    RateLimited => ("rate_limited", 429),
    TimeOutOfRange => ("time_out_of_range", 422),
    TokenExpired => ("token_expired", 401),
    TokenNotYetValid => ("token_not_yet_valid", 401),
    Unauthorized => ("unauthorized", 401),
    UnknownCategory => ("unknown_category", 422),
    UnknownKid => ("unknown_kid", 401),
    UnreadableBody => ("unreadable_body", 400),
    UpgradeRequired => ("upgrade_required", 426),
    UnsupportedAlg => ("unsupported_alg", 401),
}

// The one mapping from the core's errors to codes (and so to statuses): the core names neither.

impl From<&BackendError> for ErrorCode {
    fn from(e: &BackendError) -> Self {
        match e {
            BackendError::Unavailable { .. } => ErrorCode::BackendUnavailable,
            BackendError::Rejected { .. } => ErrorCode::BackendRejected,
            BackendError::DuplicateKey { .. } => ErrorCode::DuplicateKey,
            BackendError::Decode(_) => ErrorCode::BackendDecode,
            // The core's enums are `#[non_exhaustive]`: a variant added there answers 500 until
            // it is mapped here.
            _ => ErrorCode::Internal,
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
            _ => ErrorCode::Internal,
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
            _ => ErrorCode::Internal,
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
#[error("{status} {code}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// Stable code clients can switch on.
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
        let status = code.status();
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: (status == 503).then_some(5),
            allow: None,
            details: None,
        }
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

    /// The JSON body.
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
            assert_eq!(e.status, c.status());
            assert_eq!(e.retry_after.is_some(), c.status() == 503, "{c}");
        }
    }

    #[test]
    fn core_errors_map_to_their_codes_and_statuses() {
        let rejected = BackendError::Rejected {
            status: 400,
            code: "BadValue".into(),
            message: "m".into(),
        };
        assert_eq!(ApiError::from(rejected).status, 502);
        assert_eq!(ApiError::from(NotifyError::InvalidCursor).status, 400);
        let gone = ApiError::from(NotifyError::ItemNotFound);
        assert_eq!((gone.status, gone.code), (404, ErrorCode::ItemNotFound));
        let missing = NotifyError::Missing { field: "owner" };
        assert_eq!(ApiError::from(missing).code, ErrorCode::MissingField);
        assert_eq!(
            ApiError::from(AuthError::MissingScope("notify")).status,
            403
        );
        assert_eq!(ApiError::from(AuthError::Expired).code, "token_expired");
    }
}
