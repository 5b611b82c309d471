//! IP → country in the worker: the bundled default IPDB, and hot swap from a KV version record
//! pointing at R2 objects, re-checked at most every `IPDB_CHECK_INTERVAL_SECONDS` per isolate.
//! The serving decisions (when to check, which version serves, swap, fallback, the broken-version
//! memo) are `egn_core::ip::serving`; this module gives it the bindings (`store`), runs the check
//! after the answer (`wait_until`), logs what it reports and renders the answers. The cron's
//! download and publish are in `publish`.

mod publish;
mod store;

pub use publish::publish_from_source;

use super::assets::corrupt;
use super::{ok_json, ApiResult};
use egn_core::config::Config;
use egn_core::ip::serving::{Checked, Clock, PageError, Served, Serving, Start};
use egn_core::ip::table::page_name;
use egn_core::ip::update::Probe;
use egn_core::ip::IpdbSettings;
use egn_http::health::IpdbReport;
use egn_http::ip as ip_api;
use egn_http::ApiError;
#[cfg(feature = "bench")]
use serde_json::json;
use std::net::IpAddr;
use std::rc::Rc;
use store::{EdgeStore, StoreError, WorkerClock};
use worker::{Context, Env, Request, Response};

/// KV namespace holding the version record.
pub const IPDB_CONFIG: &str = "IPDB_CONFIG";
/// R2 bucket holding published databases.
pub const IPDB_BUCKET: &str = "IPDB_BUCKET";
/// The bundled table's pages (converted from `ip/default.mmdb` by the asset build).
const BUNDLED_PAGES: &str = "ip/country";
/// The bundled table's directory, embedded at worker build time (`scripts/build-worker.sh`
/// builds the assets first and stamps this file as an input): a fresh isolate opens it with
/// no I/O and reads one page through `ASSETS` for its first answer.
static EMBEDDED_DIR: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/ip/country/dir.bin"
));

thread_local! {
    /// The isolate's serving state (an isolate runs one thread; requests share it).
    static IPDB: Rc<Serving> = Rc::new(Serving::new());
}

fn ipdb() -> Rc<Serving> {
    IPDB.with(Rc::clone)
}

fn store(env: &Env, cfg: &IpdbSettings) -> EdgeStore {
    EdgeStore {
        env: env.clone(),
        kv_key: cfg.kv_key.clone(),
    }
}

fn now_iso() -> String {
    String::from(js_sys::Date::new_0().to_iso_string())
}

/// The isolate's database, with the pages that `ips` need loaded ([`Serving::start`] decides
/// warm or cold, and whether a check runs after the answer).
pub async fn ip_state(
    env: &Env,
    ctx: &Context,
    cfg: &IpdbSettings,
    ips: &[IpAddr],
) -> ApiResult<Rc<Served>> {
    let every_ms = u64::from(cfg.check_interval_s) * 1000;
    let s = start(env, cfg, Some(every_ms), ips).await?;
    if s.check_after {
        // Off the request path: this request is answered with the current database.
        let (serving, st) = (ipdb(), store(env, cfg));
        ctx.wait_until(async move {
            log_checked(&serving.check(&st, &WorkerClock).await);
        });
    }
    ready(&ipdb(), &store(env, cfg), s.served, ips).await
}

/// [`Serving::start`] over the bindings, with the bundled table as the cold start's default.
async fn start(
    env: &Env,
    cfg: &IpdbSettings,
    check_every_ms: Option<u64>,
    ips: &[IpAddr],
) -> ApiResult<Start<StoreError>> {
    // Copied (~164 KB, microseconds; only on a cold start) so bundled and swapped tables are
    // one type, the one the native bench times.
    let bundled = || {
        Served::bundled(EMBEDDED_DIR.to_vec(), &WorkerClock)
            .map_err(|e| corrupt("ip/country/dir.bin (embedded)", e))
    };
    let s = ipdb()
        .start(&store(env, cfg), &WorkerClock, check_every_ms, bundled, ips)
        .await?;
    s.checked.iter().for_each(log_checked);
    Ok(s)
}

/// Loads the pages `ips` need, logging each fallback to the version a failed one replaced.
async fn ready(
    serving: &Serving,
    st: &EdgeStore,
    s: Rc<Served>,
    ips: &[IpAddr],
) -> ApiResult<Rc<Served>> {
    let ready = serving.ready(st, &WorkerClock, s, ips).await;
    for f in ready.fell_back {
        let e = page_error(f.error);
        worker::console_error!("ipdb {} page rejected, serving {}: {e}", f.from, f.to);
    }
    ready.result.map_err(page_error)
}

/// The cron's probe: this isolate checks the record now (so it serves what is published), then
/// loads and verifies every page of what it serves ([`Serving::cron_probe`] decides what the
/// probe says); the serving version is returned for vetting.
async fn probe_serving(
    env: &Env,
    cfg: &IpdbSettings,
    published: Option<&egn_core::ip::IpdbRecord>,
) -> (ApiResult<Rc<Served>>, Option<Probe>) {
    let serving = ipdb();
    let st = store(env, cfg);
    let checked = serving.check_now(&st, &WorkerClock).await;
    checked.iter().for_each(log_checked);
    let rejected = checked.and_then(|c| c.rejection());
    let s = match start(env, cfg, None, &[]).await {
        Ok(s) => s.served,
        Err(e) => return (Err(e), None),
    };
    // Why the record's version does not serve, as of now (requests may check meanwhile).
    let rejected = rejected.or_else(|| serving.health().last_check_outcome);
    let all = ready_all(env, cfg, s.clone()).await;
    let loaded = all.as_ref().map(|_| ()).map_err(|e| e.message.clone());
    let probe = serving.cron_probe(&s, published, rejected, loaded, now_iso());
    (all, Some(probe))
}

/// Every page of `s` (the cron vets candidates against the whole table).
async fn ready_all(env: &Env, cfg: &IpdbSettings, s: Rc<Served>) -> ApiResult<Rc<Served>> {
    let serving = ipdb();
    serving
        .ready_all(&store(env, cfg), &WorkerClock, &s)
        .await
        .map_err(page_error)?;
    Ok(s)
}

fn log_checked(c: &Checked<StoreError>) {
    match c {
        Checked::Rejected(e) => worker::console_error!("ipdb refresh rejected: {e}"),
        Checked::Swapped { version, ms } => {
            worker::console_log!("ipdb swapped to {version} in {ms} ms");
        }
        _ => {}
    }
}

/// A page that could not be loaded, as `egn_http` answers it; a corrupt one is logged.
fn page_error(e: PageError<StoreError>) -> ApiError {
    if let PageError::Corrupt { page, source } = &e {
        worker::console_error!(
            "asset {BUNDLED_PAGES}/{} rejected: {source}",
            page_name(*page)
        );
    }
    ip_api::page_error(e, BUNDLED_PAGES)
}

/// `GET /v1/geo/ip`.
pub async fn get_ip(env: &Env, ctx: &Context, cfg: &Config, query: &str) -> ApiResult<Response> {
    let ip = ip_api::parse_ip_query(query)?;
    let s = ip_state(env, ctx, &cfg.ipdb, &[ip]).await?;
    ok_json(&ip_api::lookup(&s, ip))
}

/// `POST /v1/geo/ip`.
pub async fn post_ip(env: &Env, ctx: &Context, cfg: &Config, body: &[u8]) -> ApiResult<Response> {
    let ips = ip_api::parse_ip_batch(body)?;
    let s = ip_state(env, ctx, &cfg.ipdb, &ips).await?;
    ok_json(&ip_api::lookups(&s, &ips))
}

/// `GET /v1/geo/me`: edge country, IPDB answer for the caller and (optionally) the coordinates'
/// country, with whether the sources that answered agree.
pub async fn me(
    req: &Request,
    env: &Env,
    ctx: &Context,
    cfg: &Config,
    query: &str,
) -> ApiResult<Response> {
    let ip_header = req.headers().get("CF-Connecting-IP").ok().flatten();
    let country = req.cf().and_then(|cf| cf.country());
    let edge = ip_api::Edge::new(country, ip_header.as_deref(), cf_timezone(req));
    let s = ip_state(env, ctx, &cfg.ipdb, edge.ip.as_slice()).await?;
    let (layers, tiles) = (super::geo::layers(), super::geo::Assets(env));
    ok_json(&ip_api::me(&s, &layers, &tiles, edge, query).await?)
}

/// `request.cf.timezone`, read from the raw `cf` object: worker's `Cf::timezone_name` panics
/// when the field is absent (local runs, some test clients).
fn cf_timezone(req: &Request) -> Option<String> {
    let cf = js_sys::Reflect::get(req.inner(), &"cf".into()).ok()?;
    js_sys::Reflect::get(&cf, &"timezone".into())
        .ok()?
        .as_string()
}

/// Health fragment: what serves, where it came from, and how fresh it is (stale past
/// `IPDB_STALE_AFTER_DAYS`).
pub fn health(stale_after_days: u32) -> IpdbReport {
    let serving = ipdb();
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
pub async fn bench(env: &Env, ctx: &Context, cfg: &Config, query: &str) -> ApiResult<Response> {
    let num = |k: &str, d: usize| egn_http::query::count(query, k, d, 1_000_000);
    let (n, reps, all) = (num("n", 0)?, num("reps", 1)?, num("all", 0)? == 1);
    let ips = egn_core::ip::workload::addresses(n);
    let mut s = ip_state(env, ctx, &cfg.ipdb, &ips).await?;
    if all {
        s = ready_all(env, &cfg.ipdb, s).await?;
    }
    let mut countries = 0;
    for _ in 0..reps {
        countries += egn_core::ip::workload::count_countries(s.db(), &ips);
    }
    ok_json(&json!({
        "n": n,
        "reps": reps,
        "countries": countries,
        "loaded_page_bytes": s.db().loaded_len(),
    }))
}
