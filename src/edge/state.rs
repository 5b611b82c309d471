//! Per-isolate state: the configuration parsed once, the token verifier with its key caches, and
//! what `/healthz` remembers (`egn_http::dispatch::Isolate`).

use super::http_client::WorkerHttp;
use super::webcrypto::WebCrypto;
use egn_core::auth::Verifier;
use egn_core::config::{Config, Vars};
use egn_http::dispatch::Isolate;
use std::cell::RefCell;
use std::rc::Rc;
use worker::Env;

/// What an isolate keeps between requests.
pub type State = Isolate<Verifier<WebCrypto, WorkerHttp>>;

thread_local! {
    static STATE: RefCell<Option<Rc<State>>> = const { RefCell::new(None) };
}

/// A secret, or a var of the same name (local runs); empty counts as unset.
pub fn lookup(env: &Env, name: &str) -> Option<String> {
    env.secret(name)
        .map(|s| s.to_string())
        .or_else(|_| env.var(name).map(|v| v.to_string()))
        .ok()
        .filter(|s| !s.trim().is_empty())
}

/// The isolate's state, built on first use. Bindings cannot change within an isolate (a new
/// secret or var means a new deployment, hence new isolates), so parsing once is exact.
pub fn get(env: &Env) -> Rc<State> {
    if let Some(s) = STATE.with(|s| s.borrow().clone()) {
        return s;
    }
    let get = |n: &str| lookup(env, n);
    let config = Config::from_vars(&Vars::new(&get));
    let verifier = config
        .as_ref()
        .ok()
        .and_then(|c| c.auth.clone())
        .map(|a| Verifier::new(a, WebCrypto, WorkerHttp));
    let state = Rc::new(Isolate::new(config, verifier));
    STATE.with(|s| s.borrow_mut().get_or_insert(state).clone())
}
