//! Edge geo resolution and notification center, compiled to WebAssembly for Cloudflare Workers.
//!
//! The core modules know nothing about Workers; `api` and the entry points are the thin adapter.

pub mod api;
pub mod auth;
pub mod backend;
pub mod config;
pub mod dedup;
#[cfg(target_arch = "wasm32")]
mod edge;
/// Fuzz targets and the synthetic worlds they share with the tests: native only, so none of it
/// is in the worker's wasm (cargo fuzz and `tests/fuzz_regressions.rs` build natively).
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod geo;
pub mod ip;
pub mod notify;
