//! The one error type of the HTTP surface and its JSON body `{"error":{"code","message"}}`.

use serde_json::json;
use std::fmt;

/// An error answer: HTTP status, a stable machine-readable code and a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// Stable code clients can switch on (snake_case, never reworded).
    pub code: &'static str,
    /// Human-readable detail; never contains secrets.
    pub message: String,
    /// Seconds a client should wait before retrying (429, 503).
    pub retry_after: Option<u32>,
    /// The `Allow` header of a 405.
    pub allow: Option<String>,
}

impl ApiError {
    /// A new error.
    #[must_use]
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            allow: None,
        }
    }

    /// 400 with `code`.
    #[must_use]
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    /// 404 for an unknown route.
    #[must_use]
    pub fn not_found(path: &str) -> Self {
        Self::new(404, "not_found", format!("no route for {path}"))
    }

    /// 405 with the `Allow` header's value.
    #[must_use]
    pub fn method_not_allowed(method: &str, allowed: &str) -> Self {
        ApiError {
            allow: Some(allowed.to_owned()),
            ..Self::new(
                405,
                "method_not_allowed",
                format!("{method} not allowed; use {allowed}"),
            )
        }
    }

    /// 503 for a missing or invalid asset; the worker keeps running and retries on the next call.
    #[must_use]
    pub fn unavailable(code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            retry_after: Some(5),
            ..Self::new(503, code, message)
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}
