//! IP → country in the worker: the bundled default IPDB, and hot swap from a KV version record
//! pointing at an R2 object, re-checked at most every `IPDB_CHECK_INTERVAL_SECONDS` per isolate.
//! A candidate is served only after its SHA-256 matches the record and it opens as an mmdb;
//! any failure keeps the current database and is logged and shown in `/healthz`.

use super::assets::{corrupt, fetch_asset};
use super::http_client::WorkerHttp;
use super::{ok_json, ApiResult};
use crate::api::{geo as geo_api, ip as ip_api};
use crate::backend::{HttpClient, HttpRequest};
use crate::config::{Config, IpdbSettings};
use crate::ip::{IpDb, IpdbRecord};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::net::IpAddr;
use std::rc::Rc;
use worker::{Context, Date, Env, Request, Response};

/// KV namespace holding the version record.
pub const IPDB_CONFIG: &str = "IPDB_CONFIG";
/// R2 bucket holding published databases.
pub const IPDB_BUCKET: &str = "IPDB_BUCKET";
const BUNDLED_PATH: &str = "ip/default.mmdb";

/// The database an isolate serves.
pub struct IpState {
    db: IpDb<Vec<u8>>,
    version: String,
    source: &'static str,
}

#[derive(Default)]
struct Watch {
    last_check_ms: f64,
    checking: bool,
    checks: u64,
    last_outcome: Option<String>,
    last_swap_ms: Option<f64>,
}

thread_local! {
    static IP: RefCell<Option<Rc<IpState>>> = const { RefCell::new(None) };
    static WATCH: RefCell<Watch> = RefCell::new(Watch::default());
}

fn current() -> Option<Rc<IpState>> {
    IP.with(|s| s.borrow().clone())
}

/// The isolate's database. A cold isolate asks the config store first (so it never serves a
/// stale default when a newer one is published) and falls back to the bundled file.
pub async fn ip_state(env: &Env, ctx: &Context, cfg: &IpdbSettings) -> ApiResult<Rc<IpState>> {
    if let Some(s) = current() {
        maybe_refresh(env, ctx, cfg);
        return Ok(s);
    }
    refresh(env, cfg).await;
    if let Some(s) = current() {
        return Ok(s);
    }
    let bytes = fetch_asset(env, BUNDLED_PATH).await?;
    let db = IpDb::from_bytes(bytes).map_err(|e| corrupt(BUNDLED_PATH, e))?;
    let (db_type, epoch) = db.describe();
    let state = Rc::new(IpState {
        db,
        version: format!("bundled:{db_type}:{epoch}"),
        source: "bundled",
    });
    Ok(IP.with(|s| s.borrow_mut().get_or_insert(state).clone()))
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

/// Reads the record and swaps in a new database when its version changed. Never fails: the
/// outcome is logged and kept for `/healthz`.
async fn refresh(env: &Env, cfg: &IpdbSettings) {
    let outcome = match try_refresh(env, cfg).await {
        Ok(m) => m,
        Err(e) => {
            worker::console_error!("ipdb refresh rejected: {e}");
            format!("rejected: {e}")
        }
    };
    WATCH.with(|w| {
        let mut w = w.borrow_mut();
        w.last_check_ms = Date::now().as_millis() as f64;
        w.checks += 1;
        w.last_outcome = Some(outcome);
    });
}

async fn try_refresh(env: &Env, cfg: &IpdbSettings) -> Result<String, String> {
    let key = &cfg.kv_key;
    let kv = env
        .kv(IPDB_CONFIG)
        .map_err(|e| format!("KV binding: {e}"))?;
    let Some(text) = kv
        .get(key)
        .text()
        .await
        .map_err(|e| format!("KV read: {e}"))?
    else {
        return Ok("no record; serving the bundled database".into());
    };
    let record = IpdbRecord::parse(&text).map_err(|e| e.to_string())?;
    if current().is_some_and(|s| s.version == record.version) {
        return Ok(format!("up to date ({})", record.version));
    }
    let started = Date::now().as_millis();
    let bucket = env
        .bucket(IPDB_BUCKET)
        .map_err(|e| format!("R2 binding: {e}"))?;
    let object = bucket
        .get(&record.object_key)
        .execute()
        .await
        .map_err(|e| format!("R2 read: {e}"))?
        .ok_or_else(|| format!("object {} missing", record.object_key))?;
    let bytes = object
        .body()
        .ok_or("object has no body")?
        .bytes()
        .await
        .map_err(|e| format!("R2 body: {e}"))?;
    if !record.matches(&bytes) {
        return Err(format!("checksum mismatch for {}", record.object_key));
    }
    let db = IpDb::from_bytes(bytes).map_err(|e| format!("{}: {e}", record.object_key))?;
    let state = Rc::new(IpState {
        db,
        version: record.version.clone(),
        source: "r2",
    });
    IP.with(|s| *s.borrow_mut() = Some(state));
    let ms = (Date::now().as_millis() - started) as f64;
    WATCH.with(|w| w.borrow_mut().last_swap_ms = Some(ms));
    worker::console_log!("ipdb swapped to {} in {ms} ms", record.version);
    Ok(format!("swapped to {}", record.version))
}

fn ipdb_json(s: &IpState) -> Value {
    json!({ "version": s.version, "source": s.source })
}

/// `GET /v1/geo/ip`.
pub async fn get_ip(env: &Env, ctx: &Context, cfg: &Config, query: &str) -> ApiResult<Response> {
    let ip = ip_api::parse_ip_query(query)?;
    let s = ip_state(env, ctx, &cfg.ipdb).await?;
    let mut body = ip_api::ip_json(ip, s.db.lookup(ip));
    body["ipdb"] = ipdb_json(&s);
    ok_json(&body)
}

/// `POST /v1/geo/ip`.
pub async fn post_ip(env: &Env, ctx: &Context, cfg: &Config, body: &[u8]) -> ApiResult<Response> {
    let ips = ip_api::parse_ip_batch(body)?;
    let s = ip_state(env, ctx, &cfg.ipdb).await?;
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
    let s = ip_state(env, ctx, &cfg.ipdb).await?;
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
            "checks": w.checks,
            "last_check_outcome": w.last_outcome,
            "last_swap_ms": w.last_swap_ms,
        })
    })
}

/// Cron job: download the configured IPDB, validate it, store it in R2 and point the KV record
/// at it. Readers pick it up on their next check; nothing is redeployed.
pub async fn publish_from_source(env: &Env, cfg: &Config) -> Result<String, String> {
    let settings = &cfg.ipdb;
    let Some(url) = &settings.source_url else {
        return Ok("IPDB_SOURCE_URL not set; nothing to publish".into());
    };
    // Bounded: a deadline on the whole download and a size cap on what is kept.
    let resp = WorkerHttp
        .send(HttpRequest::get(url.as_str(), settings.download_timeout_ms))
        .await
        .map_err(|e| format!("download: {e}"))?;
    if resp.status != 200 {
        return Err(format!("download answered {}", resp.status));
    }
    if resp.body.len() as u64 > settings.max_download_bytes {
        return Err(format!(
            "download is {} bytes, over IPDB_MAX_DOWNLOAD_BYTES ({})",
            resp.body.len(),
            settings.max_download_bytes
        ));
    }
    let bytes = resp.body;
    let db = IpDb::from_bytes(bytes.as_slice()).map_err(|e| format!("downloaded file: {e}"))?;
    let (_, epoch) = db.describe();
    let sha256 = crate::ip::sha256_hex(&bytes);
    let key = &settings.kv_key;
    let kv = env
        .kv(IPDB_CONFIG)
        .map_err(|e| format!("KV binding: {e}"))?;
    if let Ok(Some(old)) = kv.get(key).text().await {
        if IpdbRecord::parse(&old).is_ok_and(|r| r.sha256 == sha256) {
            return Ok("unchanged".into());
        }
    }
    let record = IpdbRecord::for_database(
        sha256,
        epoch,
        String::from(js_sys::Date::new_0().to_iso_string()),
    );
    let bucket = env
        .bucket(IPDB_BUCKET)
        .map_err(|e| format!("R2 binding: {e}"))?;
    bucket
        .put(&record.object_key, bytes)
        .execute()
        .await
        .map_err(|e| format!("R2 write: {e}"))?;
    let text = serde_json::to_string(&record).map_err(|e| e.to_string())?;
    // The object is written before the record, so a reader never sees a record without its file.
    kv.put(key, text)
        .map_err(|e| format!("KV write: {e}"))?
        .execute()
        .await
        .map_err(|e| format!("KV write: {e}"))?;
    Ok(format!("published {}", record.version))
}

/// Bench: `n` lookups of pseudo-random IPv4 addresses inside the isolate (timed from outside
/// against `n=0`).
pub async fn bench(env: &Env, ctx: &Context, cfg: &Config, n: usize) -> ApiResult<Response> {
    let s = ip_state(env, ctx, &cfg.ipdb).await?;
    let mut x: u32 = 0x9E37_79B9;
    let mut hits = 0u32;
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        if matches!(
            s.db.lookup(IpAddr::from(x.to_be_bytes())),
            crate::ip::IpAnswer::Country(_)
        ) {
            hits += 1;
        }
    }
    ok_json(&json!({ "n": n, "hits": hits }))
}
