//! The HTTP surface as plain functions (parse, render); the worker adapter wires them to
//! `worker::Request`/`Response`. Platform-free so its rules are unit-tested natively.

pub mod console;
mod error;
pub mod geo;
pub mod idempotency;
pub mod ip;
pub mod notify;
pub mod notify_routes;
pub mod openapi;
pub mod query;
pub mod routes;

pub use error::{ApiError, ErrorCode};
pub use notify_routes::{NotifyRoutes, Reply};

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
