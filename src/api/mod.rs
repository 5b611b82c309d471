//! The HTTP surface as plain functions (parse, render); the worker adapter wires them to
//! `worker::Request`/`Response`. Platform-free so its rules are unit-tested natively.

mod error;
pub mod geo;
pub mod idempotency;
pub mod ip;
pub mod notify;

pub use error::ApiError;
