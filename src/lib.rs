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
#[doc(hidden)]
pub mod fuzzing;
pub mod geo;
pub mod ip;
pub mod notify;
