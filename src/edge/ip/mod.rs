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
#[cfg(feature = "bench")]
use serde_json::json;
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

/// Health fragment: what serves, where it came from, and how fresh it is (stale past
/// `IPDB_STALE_AFTER_DAYS`).
pub fn health(stale_after_days: u32) -> IpdbReport {
    let serving = serving();
    IpdbReport {
        serving: serving.health(),
        freshness: serving.freshness(WorkerClock.now_ms(), stale_after_days),
    }
}

#[cfg(feature = "bench")]
/// Bench: `reps` passes of lookups over the `n` addresses of the shared benchmark mix (the
/// native bench times the same list and work), timed from outside against `reps=0` in the
/// same isolate; pages are loaded before either. `all=1` loads every page first (in a fresh
/// isolate: the whole-table load the lazy pages replace).
pub async fn bench(
    edge: &Edge<'_>,
    cfg: &egn_core::config::Config,
    query: &str,
) -> ApiResult<egn_http::Answer> {
    let num = |k: &str, d: usize| egn_http::query::count(query, k, d, 1_000_000);
    let (n, reps, all) = (num("n", 0)?, num("reps", 1)?, num("all", 0)? == 1);
    let ips = egn_core::ip::workload::addresses(n);
    let mut s = ip_state(edge, &cfg.ipdb, &ips).await?;
    if all {
        s = ipdb(edge.env, &cfg.ipdb)
            .ready_all(&super::log_at, s)
            .await?;
    }
    let mut countries = 0;
    for _ in 0..reps {
        countries += egn_core::ip::workload::count_countries(s.db(), &ips);
    }
    egn_http::Answer::ok(&json!({
        "n": n,
        "reps": reps,
        "countries": countries,
        "loaded_page_bytes": s.db().loaded_len(),
    }))
}
