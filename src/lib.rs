//! The Cloudflare Worker: the Workers adapter (`edge`: bindings, routes, Durable Object, queue
//! consumer, cron) over the layers in `crates/`. It only wires: the rules are in `egn-core`
//! (platform-free, typed inputs and errors) and `egn-http` (the request pipeline, parsing,
//! rendering, the one error mapping), each named by its own crate name everywhere (the adapter,
//! the integration tests in `tests/`, the benches).

#[cfg(target_arch = "wasm32")]
mod edge;
