//! IP → country in the worker: the bundled default IPDB, and hot swap from a KV version record
//! pointing at R2 objects, re-checked at most every `IPDB_CHECK_INTERVAL_SECONDS` per isolate.
//! The decisions are `egn_core::ip::serving`'s, run by `egn_http::ipdb`; this module gives them
//! the bindings (`store`), the isolate's state and the embedded directory. The cron's download
//! and publish are in `publish`.

mod publish;
mod store;

pub use publish::publish_from_source;

use super::ApiResult;
use super::Edge;
use egn_core::ip::serving::{Clock, Served, Serving};
use egn_core::ip::IpdbSettings;
use egn_http::health::IpdbReport;
use egn_http::ipdb::Ipdb;
use std::net::IpAddr;
use std::rc::Rc;
use store::{EdgeStore, WorkerClock};
use worker::Env;

/// KV namespace holding the version record.
pub const IPDB_CONFIG: &str = "IPDB_CONFIG";
/// R2 bucket holding published databases.
pub const IPDB_BUCKET: &str = "IPDB_BUCKET";
/// The bundled table's directory, embedded at worker build time (`scripts/build-worker.sh`
/// builds the assets first and stamps this file as an input).
static EMBEDDED_DIR: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/ip/country/dir.bin"
));

thread_local! {
    /// The isolate's serving state (an isolate runs one thread; requests share it).
    static IPDB: Rc<Serving> = Rc::new(Serving::new());
}

fn serving() -> Rc<Serving> {
    IPDB.with(Rc::clone)
}

/// The isolate's database over the bindings.
fn ipdb(env: &Env, cfg: &IpdbSettings) -> Ipdb<EdgeStore, WorkerClock> {
    Ipdb {
        serving: serving(),
        store: EdgeStore {
            env: env.clone(),
            kv_key: cfg.kv_key.clone(),
        },
        clock: WorkerClock,
        bundled_dir: EMBEDDED_DIR,
    }
}

/// The isolate's database, with the pages that `ips` need loaded.
pub async fn ip_state(
    edge: &Edge<'_>,
    cfg: &IpdbSettings,
    ips: &[IpAddr],
) -> ApiResult<Rc<Served>> {
    let every_ms = u64::from(cfg.check_interval_s) * 1000;
    ipdb(edge.env, cfg).served(edge, every_ms, ips).await
}

/// `s` with every page loaded (`/__bench/ip?all=1`).
#[cfg(feature = "bench")]
pub async fn served_all(env: &Env, cfg: &IpdbSettings, s: Rc<Served>) -> ApiResult<Rc<Served>> {
    ipdb(env, cfg).ready_all(&super::log_at, s).await
}

/// Health fragment: what serves, where it came from, and how fresh it is (stale past
/// `IPDB_STALE_AFTER_DAYS`).
pub fn health(stale_after_days: u32) -> IpdbReport {
    let serving = serving();
    IpdbReport {
        serving: serving.health(),
        freshness: serving.freshness(WorkerClock.now_ms(), stale_after_days),
    }
}
