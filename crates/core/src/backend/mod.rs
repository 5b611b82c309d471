//! Backend clients (MongoDB Data API, Upstash-style Redis REST) over one small HTTP trait.
//!
//! Nothing here knows about Workers: the adapter supplies an [`http::HttpClient`].

pub mod data_api;
pub mod ejson;
pub mod http;
#[cfg(not(target_arch = "wasm32"))]
pub mod native;
pub mod redis_rest;

pub use data_api::{DataApiAuth, DataApiClient, DataApiConfig, FindOptions, UpdateResult};
pub use http::{HttpClient, HttpRequest, HttpResponse, TransportError};
pub use redis_rest::{RedisRestClient, RedisRestConfig, Script};

/// Every backend failure, classified so callers can decide retry vs. give up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("{}", unavailable_text(*.status, *.timed_out, .message))]
    /// Transport failure, timeout or 5xx: retryable (the write may or may not have applied).
    Unavailable {
        /// HTTP status when there was a response (5xx, 429).
        status: Option<u16>,
        /// The deadline fired.
        timed_out: bool,
        /// Cause, for logs.
        message: String,
    },
    #[error("backend rejected (HTTP {status} {code}): {message}")]
    /// The backend refused the request (4xx other than duplicate key): retrying won't help.
    Rejected {
        /// HTTP status.
        status: u16,
        /// Backend error code (`InvalidParameter`, `NOSCRIPT`, `WRONGTYPE`, …).
        code: String,
        /// Backend message.
        message: String,
    },
    #[error("duplicate key: {message}")]
    /// A unique index rejected the write; nothing was applied.
    DuplicateKey {
        /// Backend message.
        message: String,
    },
    #[error("undecodable backend response: {0}")]
    /// The response was not what the protocol promises.
    Decode(String),
}

fn unavailable_text(status: Option<u16>, timed_out: bool, message: &str) -> String {
    match (status, timed_out) {
        (Some(s), _) => format!("backend unavailable (HTTP {s}): {message}"),
        (None, true) => format!("backend timed out: {message}"),
        (None, false) => format!("backend unavailable: {message}"),
    }
}

impl BackendError {
    /// True when the same request may succeed later.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable { .. })
    }

    pub(crate) fn from_transport(e: TransportError) -> Self {
        Self::Unavailable {
            status: None,
            timed_out: e.timed_out,
            message: e.message,
        }
    }

    pub(crate) fn decode(what: &str, body: &[u8]) -> Self {
        let shown = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
        Self::Decode(format!("{what}: {shown}"))
    }
}

/// Status classes shared by both clients: 5xx and 429 are retryable, other 4xx are final.
pub(crate) fn status_error(status: u16, code: String, message: String) -> BackendError {
    if status >= 500 || status == 429 {
        BackendError::Unavailable {
            status: Some(status),
            timed_out: false,
            message: format!("{code}: {message}"),
        }
    } else {
        BackendError::Rejected {
            status,
            code,
            message,
        }
    }
}
