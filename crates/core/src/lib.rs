//! The platform-free core: coordinates → country, IP → country, the notification center, event
//! de-duplication, the backend clients, token verification and configuration parsing. Nothing
//! here knows about Workers or HTTP answers: operations take typed inputs and return typed
//! results and errors; the `egn-http` crate maps them to statuses and bodies, and the worker
//! crate (the repository's root package) wires them to bindings.

pub mod auth;
pub mod backend;
pub mod config;
pub mod dedup;
pub mod geo;
pub mod ip;
pub mod notify;
