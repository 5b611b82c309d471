//! The Cloudflare Worker: the Workers adapter (`edge`: bindings, routes, Durable Object, queue
//! consumer, cron) over the layers in `crates/`. It only wires: the rules are in `egn-core`
//! (platform-free, typed inputs and errors) and `egn-http` (parsing, rendering, the one error
//! mapping). The layers are re-exported under their old paths, so the adapter and the
//! integration tests in `tests/` name one crate.

pub use egn_core::{auth, backend, config, dedup, geo, ip, notify};
pub use egn_http as api;

#[cfg(target_arch = "wasm32")]
mod edge;
