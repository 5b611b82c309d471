//! The one error type of the HTTP surface and its JSON body `{"error":{"code","message"}}`.

use serde_json::json;
use std::fmt;

/// Every error code the API answers with: stable, snake_case on the wire, never reworded.
/// OpenAPI lists them from here, and tests switch on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `asset_corrupt`
    AssetCorrupt,
    /// `asset_unavailable`
    AssetUnavailable,
    /// `auth_unavailable`
    AuthUnavailable,
    /// `backend_decode`
    BackendDecode,
    /// `backend_rejected`
    BackendRejected,
    /// `backend_unavailable`
    BackendUnavailable,
    /// `batch_too_large`
    BatchTooLarge,
    /// `config_invalid`
    ConfigInvalid,
    /// `duplicate_key`
    DuplicateKey,
    /// `empty_batch`
    EmptyBatch,
    /// `field_too_long`
    FieldTooLong,
    /// `idempotency_in_flight`
    IdempotencyInFlight,
    /// `idempotency_key_reused`
    IdempotencyKeyReused,
    /// `insufficient_scope`
    InsufficientScope,
    /// `internal`
    Internal,
    /// `invalid_action`
    InvalidAction,
    /// `invalid_audience`
    InvalidAudience,
    /// `invalid_characters`
    InvalidCharacters,
    /// `invalid_coordinate`
    InvalidCoordinate,
    /// `invalid_cursor`
    InvalidCursor,
    /// `invalid_events`
    InvalidEvents,
    /// `invalid_flag`
    InvalidFlag,
    /// `invalid_idempotency_key`
    InvalidIdempotencyKey,
    /// `invalid_ip`
    InvalidIp,
    /// `invalid_issuer`
    InvalidIssuer,
    /// `invalid_json`
    InvalidJson,
    /// `invalid_number`
    InvalidNumber,
    /// `invalid_parameter`
    InvalidParameter,
    /// `invalid_path`
    InvalidPath,
    /// `invalid_point`
    InvalidPoint,
    /// `invalid_service_key`
    InvalidServiceKey,
    /// `invalid_signature`
    InvalidSignature,
    /// `invalid_target`
    InvalidTarget,
    /// `invalid_token`
    InvalidToken,
    /// `invalid_url`
    InvalidUrl,
    /// `ip_zone_not_supported`
    IpZoneNotSupported,
    /// `method_not_allowed`
    MethodNotAllowed,
    /// `missing_field`
    MissingField,
    /// `missing_parameter`
    MissingParameter,
    /// `not_configured`
    NotConfigured,
    /// `not_found`
    NotFound,
    /// `origin_not_allowed`
    OriginNotAllowed,
    /// `payload_too_large`
    PayloadTooLarge,
    /// `rate_limited`
    RateLimited,
    /// `time_out_of_range`
    TimeOutOfRange,
    /// `token_expired`
    TokenExpired,
    /// `token_not_yet_valid`
    TokenNotYetValid,
    /// `unauthorized`
    Unauthorized,
    /// `unknown_category`
    UnknownCategory,
    /// `unknown_kid`
    UnknownKid,
    /// `unreadable_body`
    UnreadableBody,
    /// `upgrade_required`
    UpgradeRequired,
    /// `unsupported_alg`
    UnsupportedAlg,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::AssetCorrupt,
        ErrorCode::AssetUnavailable,
        ErrorCode::AuthUnavailable,
        ErrorCode::BackendDecode,
        ErrorCode::BackendRejected,
        ErrorCode::BackendUnavailable,
        ErrorCode::BatchTooLarge,
        ErrorCode::ConfigInvalid,
        ErrorCode::DuplicateKey,
        ErrorCode::EmptyBatch,
        ErrorCode::FieldTooLong,
        ErrorCode::IdempotencyInFlight,
        ErrorCode::IdempotencyKeyReused,
        ErrorCode::InsufficientScope,
        ErrorCode::Internal,
        ErrorCode::InvalidAction,
        ErrorCode::InvalidAudience,
        ErrorCode::InvalidCharacters,
        ErrorCode::InvalidCoordinate,
        ErrorCode::InvalidCursor,
        ErrorCode::InvalidEvents,
        ErrorCode::InvalidFlag,
        ErrorCode::InvalidIdempotencyKey,
        ErrorCode::InvalidIp,
        ErrorCode::InvalidIssuer,
        ErrorCode::InvalidJson,
        ErrorCode::InvalidNumber,
        ErrorCode::InvalidParameter,
        ErrorCode::InvalidPath,
        ErrorCode::InvalidPoint,
        ErrorCode::InvalidServiceKey,
        ErrorCode::InvalidSignature,
        ErrorCode::InvalidTarget,
        ErrorCode::InvalidToken,
        ErrorCode::InvalidUrl,
        ErrorCode::IpZoneNotSupported,
        ErrorCode::MethodNotAllowed,
        ErrorCode::MissingField,
        ErrorCode::MissingParameter,
        ErrorCode::NotConfigured,
        ErrorCode::NotFound,
        ErrorCode::OriginNotAllowed,
        ErrorCode::PayloadTooLarge,
        ErrorCode::RateLimited,
        ErrorCode::TimeOutOfRange,
        ErrorCode::TokenExpired,
        ErrorCode::TokenNotYetValid,
        ErrorCode::Unauthorized,
        ErrorCode::UnknownCategory,
        ErrorCode::UnknownKid,
        ErrorCode::UnreadableBody,
        ErrorCode::UpgradeRequired,
        ErrorCode::UnsupportedAlg,
    ];

    /// The code on the wire.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::AssetCorrupt => "asset_corrupt",
            ErrorCode::AssetUnavailable => "asset_unavailable",
            ErrorCode::AuthUnavailable => "auth_unavailable",
            ErrorCode::BackendDecode => "backend_decode",
            ErrorCode::BackendRejected => "backend_rejected",
            ErrorCode::BackendUnavailable => "backend_unavailable",
            ErrorCode::BatchTooLarge => "batch_too_large",
            ErrorCode::ConfigInvalid => "config_invalid",
            ErrorCode::DuplicateKey => "duplicate_key",
            ErrorCode::EmptyBatch => "empty_batch",
            ErrorCode::FieldTooLong => "field_too_long",
            ErrorCode::IdempotencyInFlight => "idempotency_in_flight",
            ErrorCode::IdempotencyKeyReused => "idempotency_key_reused",
            ErrorCode::InsufficientScope => "insufficient_scope",
            ErrorCode::Internal => "internal",
            ErrorCode::InvalidAudience => "invalid_audience",
            ErrorCode::InvalidCharacters => "invalid_characters",
            ErrorCode::InvalidCoordinate => "invalid_coordinate",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::InvalidEvents => "invalid_events",
            ErrorCode::InvalidFlag => "invalid_flag",
            ErrorCode::InvalidAction => "invalid_action",
            ErrorCode::UpgradeRequired => "upgrade_required",
            ErrorCode::InvalidIdempotencyKey => "invalid_idempotency_key",
            ErrorCode::InvalidIp => "invalid_ip",
            ErrorCode::InvalidIssuer => "invalid_issuer",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidNumber => "invalid_number",
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::InvalidPath => "invalid_path",
            ErrorCode::InvalidPoint => "invalid_point",
            ErrorCode::InvalidServiceKey => "invalid_service_key",
            ErrorCode::InvalidSignature => "invalid_signature",
            ErrorCode::InvalidTarget => "invalid_target",
            ErrorCode::InvalidToken => "invalid_token",
            ErrorCode::InvalidUrl => "invalid_url",
            ErrorCode::IpZoneNotSupported => "ip_zone_not_supported",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::MissingParameter => "missing_parameter",
            ErrorCode::NotConfigured => "not_configured",
            ErrorCode::NotFound => "not_found",
            ErrorCode::OriginNotAllowed => "origin_not_allowed",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::TimeOutOfRange => "time_out_of_range",
            ErrorCode::TokenExpired => "token_expired",
            ErrorCode::TokenNotYetValid => "token_not_yet_valid",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::UnknownCategory => "unknown_category",
            ErrorCode::UnknownKid => "unknown_kid",
            ErrorCode::UnreadableBody => "unreadable_body",
            ErrorCode::UnsupportedAlg => "unsupported_alg",
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
#[derive(Clone, Debug, PartialEq, Eq)]
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
    pub details: Option<Box<serde_json::Value>>,
}

impl ApiError {
    /// A new error.
    #[must_use]
    pub fn new(status: u16, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            allow: None,
            details: None,
        }
    }

    /// 400 with `code`.
    #[must_use]
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    /// 404 for an unknown route.
    #[must_use]
    pub fn not_found(path: &str) -> Self {
        Self::new(404, ErrorCode::NotFound, format!("no route for {path}"))
    }

    /// 405 with the `Allow` header's value.
    #[must_use]
    pub fn method_not_allowed(method: &str, allowed: &str) -> Self {
        ApiError {
            allow: Some(allowed.to_owned()),
            ..Self::new(
                405,
                ErrorCode::MethodNotAllowed,
                format!("{method} not allowed; use {allowed}"),
            )
        }
    }

    /// 503 for a missing or invalid asset; the worker keeps running and retries on the next call.
    #[must_use]
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(5),
            ..Self::new(503, code, message)
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut b = json!({ "error": { "code": self.code.as_str(), "message": self.message } });
        if let Some(d) = &self.details {
            b["error"]["details"] = (**d).clone();
        }
        b
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}
