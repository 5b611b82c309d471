//! The HTTP surface as plain functions (parse, render); the worker adapter wires them to
//! `worker::Request`/`Response`. Platform-free so its rules are unit-tested natively.

pub mod assets;
pub mod backends;
pub mod console;
pub mod consumer;
pub mod cron;
pub mod dispatch;
mod error;
pub mod geo;
pub mod health;
pub mod hub;
pub mod idempotency;
pub mod ip;
pub mod ipdb;
pub mod notify;
pub mod notify_bodies;
pub mod notify_routes;
#[cfg(not(target_arch = "wasm32"))]
pub mod openapi;
pub mod pipeline;
pub mod privacy;
pub mod query;
pub mod routes;
#[cfg(not(target_arch = "wasm32"))]
pub mod schemas;
pub mod user_writes;

#[cfg(test)]
mod testing;

pub use dispatch::{handle, Answer};
pub use error::{ApiError, ErrorBody, ErrorCode, ErrorDetail, Issue};
pub use notify_routes::Reply;

/// Rejects an empty batch (`empty_batch`) or one over `max` items (`batch_too_large`), both 400.
fn check_batch_len(n: usize, max: usize, what: &str) -> Result<(), ApiError> {
    if n == 0 {
        return Err(ApiError::new(
            ErrorCode::EmptyBatch,
            format!("{what} must not be empty"),
        ));
    }
    if n > max {
        return Err(ApiError::new(
            ErrorCode::BatchTooLarge,
            format!("{n} {what}; at most {max} per request"),
        ));
    }
    Ok(())
}

/// A JSON body that must be an object. serde's derived structs also take a JSON array (their
/// fields in order), which no document allows: `[]` would read as every field's default.
///
/// # Errors
/// Not JSON, not an object, or not `T`.
fn from_object<T: serde::de::DeserializeOwned>(body: &[u8]) -> serde_json::Result<T> {
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => serde_json::from_slice(body),
        // Real JSON errors first ("EOF while parsing"), then the shape.
        _ => serde_json::from_slice::<serde_json::Value>(body)
            .and_then(|_| Err(serde::de::Error::custom("expected a JSON object"))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn bodies_are_objects() {
        use super::notify::{parse_mark, parse_replay, parse_retraction};
        assert_eq!(parse_replay(b"[]").unwrap_err().code, "invalid_json");
        assert_eq!(parse_replay(b" {}").unwrap().limit, None);
        assert_eq!(
            parse_mark(br#"[null, true, "read", true]"#)
                .unwrap_err()
                .code,
            "invalid_json"
        );
        assert_eq!(
            parse_retraction(br#"["a", "b", "c"]"#).unwrap_err().code,
            "invalid_json"
        );
        assert_eq!(
            super::geo::parse_batch(b"[[[1, 2]]]").unwrap_err().code,
            "invalid_json"
        );
        assert_eq!(
            super::notify::parse_event(b"[]").unwrap_err().code,
            "invalid_json"
        );
    }
}
