//! IP → country in the worker: the bundled default IPDB, and hot swap from a KV version record
//! pointing at an R2 object, re-checked at most every `IPDB_CHECK_INTERVAL_SECONDS` per isolate.
//! The decisions (which record to follow, which object to accept, which download to publish)
//! are in `crate::ip::{refresh, update}`; this module only reads and writes KV, R2, assets and
//! the network, and keeps the outcome for `/healthz`. The cron's download and publish are in
//! `publish`.

mod publish;

pub use publish::publish_from_source;

use super::assets::{corrupt, fetch_asset};
use super::{internal, ok_json, ApiResult};
use crate::api::{geo as geo_api, ip as ip_api};
use crate::api::{ApiError, ErrorCode};
use crate::config::{Config, IpdbSettings};
use crate::ip::refresh::{self, Check};
use crate::ip::table::{page_name, IpTable};
use crate::ip::update::{self, UpdateStatus};
use crate::ip::{Attribution, IpdbRecord};
use futures_util::future::{join, join_all};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::rc::Rc;
use worker::{Context, Date, Env, Request, Response};

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

/// Where a table's pages come from.
enum PageSource {
    /// The bundled pages, through `ASSETS`.
    Assets,
    /// A hot-swapped version's pages in R2, named and checksummed by its record.
    R2(Box<IpdbRecord>),
    /// Converted in this isolate: every page is in memory already.
    Loaded,
}

/// The database an isolate serves: the compact table's directory, its pages fetched on first
/// need and kept for the isolate's life.
pub struct IpState {
    db: IpTable<Vec<u8>>,
    pages: PageSource,
    version: String,
    source: &'static str,
    attribution: Option<Attribution>,
    /// Fetch (R2 only) + open time of the directory (ms).
    load_ms: f64,
    /// Fetch + validation time of the pages loaded so far (ms).
    page_ms: Cell<f64>,
    /// What served before a swap: serves again if a page of this version cannot be loaded.
    fallback: RefCell<Option<Rc<IpState>>>,
}

/// What a table says about its source (written by `update::table_meta`).
#[derive(serde::Deserialize, Default)]
struct TableMeta {
    #[serde(default)]
    database_type: String,
    #[serde(default)]
    build_epoch: u64,
    #[serde(default)]
    attribution: Option<Attribution>,
}

fn meta_of<S: AsRef<[u8]>>(t: &IpTable<S>) -> TableMeta {
    serde_json::from_slice(t.meta()).unwrap_or_default()
}

#[derive(Default)]
struct Watch {
    last_check_ms: f64,
    checking: bool,
    checks: u64,
    last_outcome: Option<String>,
    last_swap_ms: Option<f64>,
    last_update: Option<UpdateStatus>,
    /// A version whose pages failed after it was swapped in: not tried again.
    broken: Option<String>,
}

thread_local! {
    static IP: RefCell<Option<Rc<IpState>>> = const { RefCell::new(None) };
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
}

fn current() -> Option<Rc<IpState>> {
    IP.with(|s| s.borrow().clone())
}

fn now_iso() -> String {
    String::from(js_sys::Date::new_0().to_iso_string())
}

/// The isolate's database, with the pages that `ips` need loaded. A cold isolate asks the
/// config store first (so it never serves a stale default when a newer one is published) and
/// falls back to the bundled table.
pub async fn ip_state(
    env: &Env,
    ctx: &Context,
    cfg: &IpdbSettings,
    ips: &[IpAddr],
) -> ApiResult<Rc<IpState>> {
    let s = match current() {
        Some(s) => {
            maybe_refresh(env, ctx, cfg);
            s
        }
        None => serving(env, cfg, ips).await?,
    };
    ready(env, s, ips).await
}

/// The database being served. An isolate that has none yet reads the config store and, at the
/// same time, the bundled pages `ips` need (so the common cold start pays one round trip, not
/// two in a row); the bundled table serves when no newer version is published.
async fn serving(env: &Env, cfg: &IpdbSettings, ips: &[IpAddr]) -> ApiResult<Rc<IpState>> {
    if let Some(s) = current() {
        return Ok(s);
    }
    let bundled = bundled()?;
    let need = missing_pages(&bundled, ips);
    // A page that fails here is fetched again by `ready` (and its error answered there).
    let (_, _) = join(refresh(env, cfg), load_pages(env, &bundled, &need)).await;
    Ok(IP.with(|s| s.borrow_mut().get_or_insert(bundled).clone()))
}

/// The bundled table, opened from the directory embedded in the wasm (no I/O).
fn bundled() -> ApiResult<Rc<IpState>> {
    let started = Date::now().as_millis();
    let dir = "ip/country/dir.bin (embedded)";
    // Copied (~164 KB, microseconds) so bundled and swapped tables are one type, the one the
    // native bench times.
    let db = IpTable::from_bytes(EMBEDDED_DIR.to_vec()).map_err(|e| corrupt(dir, e))?;
    let meta = meta_of(&db);
    Ok(Rc::new(IpState {
        db,
        pages: PageSource::Assets,
        version: format!("bundled:{}:{}", meta.database_type, meta.build_epoch),
        source: "bundled",
        attribution: meta.attribution,
        load_ms: (Date::now().as_millis() - started) as f64,
        page_ms: Cell::new(0.0),
        fallback: RefCell::new(None),
    }))
}

/// The pages of `s` that `ips` need and that are not loaded yet, each once.
fn missing_pages(s: &IpState, ips: &[IpAddr]) -> Vec<usize> {
    let mut need: Vec<usize> = ips.iter().filter_map(|&ip| s.db.missing_page(ip)).collect();
    need.sort_unstable();
    need.dedup();
    need
}

/// Loads the pages `ips` need into `s` (concurrently, once per isolate). When a swapped-in
/// version's page cannot be loaded, the version it replaced serves again (and this one is not
/// retried); the bundled table's pages failing is a 503.
async fn ready(env: &Env, s: Rc<IpState>, ips: &[IpAddr]) -> ApiResult<Rc<IpState>> {
    let mut s = s;
    loop {
        let need = missing_pages(&s, ips);
        let Err(e) = load_pages(env, &s, &need).await else {
            return Ok(s);
        };
        let Some(old) = s.fallback.borrow_mut().take() else {
            return Err(e);
        };
        worker::console_error!(
            "ipdb {} page rejected, serving {}: {e}",
            s.version,
            old.version
        );
        WATCH.with(|w| {
            let mut w = w.borrow_mut();
            w.last_outcome = Some(format!("rejected: {}: {}", s.version, e.message));
            w.broken = Some(s.version.clone());
        });
        IP.with(|c| *c.borrow_mut() = Some(old.clone()));
        s = old;
    }
}

async fn load_pages(env: &Env, s: &IpState, need: &[usize]) -> ApiResult<()> {
    if need.is_empty() {
        return Ok(());
    }
    let started = Date::now().as_millis();
    let fetches = need.iter().map(|&p| async move {
        match &s.pages {
            PageSource::Assets => {
                let path = format!("{BUNDLED_PAGES}/{}", page_name(p));
                let bytes = fetch_asset(env, &path).await?;
                s.db.insert_page(p, bytes).map_err(|e| corrupt(&path, e))
            }
            PageSource::R2(record) => {
                let fail = |m: String| ApiError::new(ErrorCode::AssetUnavailable, m);
                let bucket = env
                    .bucket(IPDB_BUCKET)
                    .map_err(|e| fail(format!("R2 binding: {e}")))?;
                let key = record.table_page_key(p).unwrap_or_default();
                let bytes = r2_bytes(&bucket, &key).await.map_err(fail)?;
                refresh::accept_page(record, &s.db, p, bytes).map_err(|e| fail(e.to_string()))
            }
            PageSource::Loaded => Err(internal(format!("page {p} of a loaded table missing"))),
        }
    });
    let results = join_all(fetches).await;
    s.page_ms
        .set(s.page_ms.get() + (Date::now().as_millis() - started) as f64);
    results.into_iter().collect()
}

/// Every page of `s` (the cron vets candidates against the whole table).
async fn ready_all(env: &Env, s: Rc<IpState>) -> ApiResult<Rc<IpState>> {
    let all: Vec<usize> = (0..s.db.page_count()).collect();
    load_pages(env, &s, &all).await?;
    Ok(s)
}

fn maybe_refresh(env: &Env, ctx: &Context, cfg: &IpdbSettings) {
    let interval_ms = f64::from(cfg.check_interval_s) * 1000.0;
    let due = WATCH.with(|w| {
        let mut w = w.borrow_mut();
        let due = !w.checking && Date::now().as_millis() as f64 - w.last_check_ms >= interval_ms;
        if due {
            w.checking = true;
        }
        due
    });
    if due {
        let env = env.clone();
        let cfg = cfg.clone();
        // Off the request path: this request is answered with the current database.
        ctx.wait_until(async move {
            refresh(&env, &cfg).await;
            WATCH.with(|w| w.borrow_mut().checking = false);
        });
    }
}

/// Reads the record and swaps in a new database when its version changed, and reads the last
/// scheduled update's status. Never fails: the outcome is logged and kept for `/healthz`.
async fn refresh(env: &Env, cfg: &IpdbSettings) {
    let (outcome, status) = join(try_refresh(env, cfg), read_status(env, cfg)).await;
    let outcome = outcome.unwrap_or_else(|e| {
        worker::console_error!("ipdb refresh rejected: {e}");
        format!("rejected: {e}")
    });
    WATCH.with(|w| {
        let mut w = w.borrow_mut();
        w.last_check_ms = Date::now().as_millis() as f64;
        w.checks += 1;
        w.last_outcome = Some(outcome);
        if status.is_some() {
            w.last_update = status;
        }
    });
}

async fn r2_bytes(bucket: &worker::Bucket, key: &str) -> Result<Option<Vec<u8>>, String> {
    let Some(o) = bucket
        .get(key)
        .execute()
        .await
        .map_err(|e| format!("R2 read: {e}"))?
    else {
        return Ok(None);
    };
    o.body()
        .ok_or("object has no body")?
        .bytes()
        .await
        .map(Some)
        .map_err(|e| format!("R2 body: {e}"))
}

async fn read_status(env: &Env, cfg: &IpdbSettings) -> Option<UpdateStatus> {
    let kv = env.kv(IPDB_CONFIG).ok()?;
    let text = kv
        .get(&update::status_key(&cfg.kv_key))
        .text()
        .await
        .ok()??;
    serde_json::from_str(&text).ok()
}

async fn try_refresh(env: &Env, cfg: &IpdbSettings) -> Result<String, String> {
    let kv = env
        .kv(IPDB_CONFIG)
        .map_err(|e| format!("KV binding: {e}"))?;
    let text = kv
        .get(&cfg.kv_key)
        .text()
        .await
        .map_err(|e| format!("KV read: {e}"))?;
    let serving = current().map(|s| s.version.clone());
    let record = match refresh::check(text.as_deref(), serving.as_deref()) {
        Ok(Check::NoRecord) => return Ok("no record; serving the bundled database".into()),
        Ok(Check::UpToDate(v)) => return Ok(format!("up to date ({v})")),
        Ok(Check::Fetch(r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    if WATCH.with(|w| w.borrow().broken.as_deref() == Some(record.version.as_str())) {
        return Err(format!(
            "{}: a page failed to load; not retried",
            record.version
        ));
    }
    let started = Date::now().as_millis();
    let bucket = env
        .bucket(IPDB_BUCKET)
        .map_err(|e| format!("R2 binding: {e}"))?;
    let (db, pages) = match record.table_dir_key() {
        // The publisher stored the converted table: read its directory now, pages on need.
        Some(key) => {
            let bytes = r2_bytes(&bucket, &key).await?;
            let db = refresh::accept_table(&record, bytes).map_err(|e| e.to_string())?;
            (db, PageSource::R2(record.clone()))
        }
        // Older records name only the mmdb: convert here (off the request path when warm),
        // with every page in memory.
        None => {
            let bytes = r2_bytes(&bucket, &record.object_key).await?;
            let mmdb = refresh::accept(&record, bytes).map_err(|e| e.to_string())?;
            let (db_type, epoch) = mmdb.describe();
            let meta = crate::ip::update::table_meta(&db_type, epoch, record.attribution.as_ref());
            let t = crate::ip::convert::table(&mmdb, &meta).map_err(|e| e.to_string())?;
            let db = IpTable::from_parts(t.dir, t.pages).map_err(|e| e.to_string())?;
            (db, PageSource::Loaded)
        }
    };
    let attribution = record.attribution.clone().or_else(|| {
        let m = meta_of(&db);
        m.attribution
            .or_else(|| Attribution::for_database_type(&m.database_type))
    });
    let load_ms = (Date::now().as_millis() - started) as f64;
    // One step back at most: what serves now, without what it replaced.
    let fallback = current();
    if let Some(f) = &fallback {
        f.fallback.borrow_mut().take();
    }
    let state = Rc::new(IpState {
        db,
        pages,
        version: record.version.clone(),
        source: "r2",
        attribution,
        load_ms,
        page_ms: Cell::new(0.0),
        fallback: RefCell::new(fallback),
    });
    IP.with(|s| *s.borrow_mut() = Some(state));
    let ms = (Date::now().as_millis() - started) as f64;
    WATCH.with(|w| w.borrow_mut().last_swap_ms = Some(ms));
    worker::console_log!("ipdb swapped to {} in {ms} ms", record.version);
    Ok(format!("swapped to {}", record.version))
}

/// The `ipdb` object of every IP answer: which database answered, and the credit its licence
/// asks for (the console shows `attribution.text` linked to `attribution.url`).
fn ipdb_json(s: &IpState) -> Value {
    json!({ "version": s.version, "source": s.source, "attribution": s.attribution })
}

/// `GET /v1/geo/ip`.
pub async fn get_ip(env: &Env, ctx: &Context, cfg: &Config, query: &str) -> ApiResult<Response> {
    let ip = ip_api::parse_ip_query(query)?;
    let s = ip_state(env, ctx, &cfg.ipdb, &[ip]).await?;
    let mut body = ip_api::ip_json(ip, s.db.lookup(ip));
    body["ipdb"] = ipdb_json(&s);
    ok_json(&body)
}

/// `POST /v1/geo/ip`.
pub async fn post_ip(env: &Env, ctx: &Context, cfg: &Config, body: &[u8]) -> ApiResult<Response> {
    let ips = ip_api::parse_ip_batch(body)?;
    let s = ip_state(env, ctx, &cfg.ipdb, &ips).await?;
    let results: Vec<Value> = ips
        .iter()
        .map(|&ip| ip_api::ip_json(ip, s.db.lookup(ip)))
        .collect();
    ok_json(&json!({ "results": results, "ipdb": ipdb_json(&s) }))
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
    let cf_country = req.cf().and_then(|cf| cf.country()).filter(|c| c != "XX");
    let caller: Option<IpAddr> = req
        .headers()
        .get("CF-Connecting-IP")
        .ok()
        .flatten()
        .and_then(|v| crate::ip::parse_ip(&v).ok());
    let s = ip_state(env, ctx, &cfg.ipdb, caller.as_slice()).await?;
    let ip = caller.map(|ip| ip_api::ip_json(ip, s.db.lookup(ip)));
    let has_coords = crate::api::query::pairs(query).any(|(k, _)| k == "lat" || k == "lon");
    let coords = if has_coords {
        let p = geo_api::parse_point_query(query)?;
        let c = super::geo::country_of(env, p).await?;
        Some(json!({ "lat": p.lat(), "lon": p.lon(), "country": c }))
    } else {
        None
    };
    let mut answers: Vec<String> = Vec::new();
    // "T1" is Tor: a real answer, but not a country to compare.
    answers.extend(cf_country.clone().filter(|c| c != "T1"));
    answers.extend(
        ip.as_ref()
            .and_then(|v| v["country"].as_str().map(String::from)),
    );
    answers.extend(
        coords
            .as_ref()
            .and_then(|v| v["country"]["alpha2"].as_str().map(String::from)),
    );
    let agree = (answers.len() >= 2).then(|| answers.windows(2).all(|w| w[0] == w[1]));
    ok_json(&json!({
        "cf_country": cf_country,
        "ip": ip,
        "coordinates": coords,
        "agree": agree,
        "sources": answers.len(),
        "ipdb": ipdb_json(&s),
    }))
}

/// Health fragment.
pub fn health() -> Value {
    let s = current();
    WATCH.with(|w| {
        let w = w.borrow();
        json!({
            "loaded": s.is_some(),
            "version": s.as_ref().map(|s| s.version.clone()),
            "source": s.as_ref().map(|s| s.source),
            "attribution": s.as_ref().and_then(|s| s.attribution.clone()),
            "table": s.as_ref().map(|s| json!({
                "dir_bytes": s.db.dir_len(),
                "pages": s.db.page_count(),
                "page_bytes": s.db.pages_len(),
                "loaded_pages": s.db.loaded_pages(),
                "loaded_page_bytes": s.db.loaded_len(),
                "page_load_ms": s.page_ms.get(),
                "derived_bytes": s.db.derived_len(),
            })),
            "load_ms": s.as_ref().map(|s| s.load_ms),
            "checks": w.checks,
            "last_check_outcome": w.last_outcome,
            "last_swap_ms": w.last_swap_ms,
            "last_update": w.last_update,
        })
    })
}

#[cfg(feature = "bench")]
/// Bench: `reps` passes of lookups over the `n` addresses of the shared benchmark mix (the
/// native bench times the same list and work), timed from outside against `reps=0` in the
/// same isolate; pages are loaded before either. `all=1` loads every page first (in a fresh
/// isolate: the whole-table load the lazy pages replace).
pub async fn bench(env: &Env, ctx: &Context, cfg: &Config, query: &str) -> ApiResult<Response> {
    let num = |k: &str, d: usize| -> ApiResult<usize> {
        crate::api::query::param(query, k)
            .map_or(Ok(d), |v| v.parse())
            .ok()
            .filter(|&v| v <= 1_000_000)
            .ok_or_else(|| ApiError::new(ErrorCode::InvalidParameter, format!("{k}: 0..=1000000")))
    };
    let (n, reps, all) = (num("n", 0)?, num("reps", 1)?, num("all", 0)? == 1);
    let ips = crate::ip::workload::addresses(n);
    let mut s = ip_state(env, ctx, &cfg.ipdb, &ips).await?;
    if all {
        s = ready_all(env, s).await?;
    }
    let mut countries = 0;
    for _ in 0..reps {
        countries += crate::ip::workload::count_countries(&s.db, &ips);
    }
    ok_json(&json!({
        "n": n,
        "reps": reps,
        "countries": countries,
        "loaded_page_bytes": s.db.loaded_len(),
    }))
}
