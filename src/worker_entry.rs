//! The Workers adapter: routing, bindings, per-isolate asset state. Everything else is core.

use crate::api::{geo as geo_api, ApiError};
use crate::geo::{CountryIndex, GridPoint, LatLon, LoadError, Tile};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use worker::{event, Context, Date, Env, Headers, Method, Request, Response, Result};

/// Static-assets binding (wrangler.toml `[assets]`).
const ASSETS: &str = "ASSETS";
/// Var that enables the `/__bench` endpoints (off in production).
const ENABLE_BENCH: &str = "ENABLE_BENCH";
/// Asset paths inside the assets directory.
const INDEX_PATH: &str = "geo/index.bin";
const MANIFEST_PATH: &str = "manifest.json";

struct GeoState {
    index: CountryIndex<Vec<u8>>,
    tiles: RefCell<Vec<Option<Rc<Tile<Vec<u8>>>>>>,
    /// Wall time (ms) spent fetching and opening `index.bin` in this isolate.
    open_ms: f64,
    index_bytes: usize,
    tile_bytes: RefCell<usize>,
}

thread_local! {
    // One per isolate: Workers run one thread per isolate, so no locking is needed.
    static GEO: RefCell<Option<Rc<GeoState>>> = const { RefCell::new(None) };
}

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let result = route(req, &env).await;
    match result {
        Ok(resp) => Ok(resp),
        Err(e) => error_response(&e),
    }
}

async fn route(mut req: Request, env: &Env) -> std::result::Result<Response, ApiError> {
    let url = req.url().map_err(|_| ApiError::bad_request("invalid_url", "unparseable URL"))?;
    let method = req.method();
    let path = url.path().to_string();
    let query = url.query().unwrap_or("").to_string();
    match (path.as_str(), method) {
        ("/healthz", Method::Get) => healthz(env).await,
        ("/v1/geo/country", Method::Get) => {
            let p = geo_api::parse_point_query(&query)?;
            let state = geo_state(env).await?;
            let id = lookup(&state, env, &[p]).await?[0];
            json(&geo_api::point_response(p, id.and_then(|i| state.index.country(i))))
        }
        ("/v1/geo/country", Method::Post) => {
            let body = read_body(&mut req).await?;
            let points = geo_api::parse_batch(&body)?;
            let state = geo_state(env).await?;
            let ids = lookup(&state, env, &points).await?;
            let results: Vec<Value> =
                ids.iter().map(|id| geo_api::country_json(id.and_then(|i| state.index.country(i)))).collect();
            json(&json!({ "results": results }))
        }
        ("/v1/geo/country", m) => Err(ApiError::method_not_allowed(&m.to_string(), "GET, POST")),
        ("/__bench/noop", Method::Get) if bench_enabled(env) => json(&json!({"ok": true})),
        ("/__bench/geo", Method::Post) if bench_enabled(env) => bench_geo(&mut req, env, &query).await,
        ("/", Method::Get) | ("/index.html", Method::Get) => static_page(env).await,
        ("/healthz", m) => Err(ApiError::method_not_allowed(&m.to_string(), "GET")),
        _ => Err(ApiError::not_found(&path)),
    }
}

fn bench_enabled(env: &Env) -> bool {
    env.var(ENABLE_BENCH).map(|v| v.to_string() == "true").unwrap_or(false)
}

fn json(v: &Value) -> std::result::Result<Response, ApiError> {
    Response::from_json(v).map_err(internal)
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(500, "internal", format!("internal error: {e}"))
}

fn error_response(e: &ApiError) -> Result<Response> {
    let mut resp = Response::from_json(&e.body())?.with_status(e.status);
    if let Some(s) = e.retry_after {
        resp.headers_mut().set("Retry-After", &s.to_string())?;
    }
    if e.status == 405 {
        if let Some((_, allowed)) = e.message.split_once("use ") {
            resp.headers_mut().set("Allow", allowed)?;
        }
    }
    Ok(resp)
}

async fn read_body(req: &mut Request) -> std::result::Result<Vec<u8>, ApiError> {
    let declared = req.headers().get("content-length").ok().flatten().and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > geo_api::MAX_BODY_BYTES) {
        return Err(ApiError::new(413, "payload_too_large", "request body too large"));
    }
    req.bytes().await.map_err(|e| ApiError::bad_request("unreadable_body", e.to_string()))
}

async fn fetch_asset(env: &Env, path: &str) -> std::result::Result<Vec<u8>, ApiError> {
    let unavailable = |m: String| ApiError::unavailable("asset_unavailable", m);
    let assets = env.assets(ASSETS).map_err(|e| unavailable(format!("ASSETS binding: {e}")))?;
    let mut resp = assets
        .fetch(format!("https://assets.invalid/{path}"), None)
        .await
        .map_err(|e| unavailable(format!("fetching {path}: {e}")))?;
    if resp.status_code() != 200 {
        return Err(unavailable(format!("asset {path} answered {}", resp.status_code())));
    }
    resp.bytes().await.map_err(|e| unavailable(format!("reading {path}: {e}")))
}

fn corrupt(path: &str, e: LoadError) -> ApiError {
    worker::console_error!("asset {path} rejected: {e}");
    ApiError::unavailable("asset_corrupt", format!("{path}: {e}"))
}

/// The isolate's index, fetched and opened on first use; failures are not cached, so a fixed
/// deployment recovers without a restart.
async fn geo_state(env: &Env) -> std::result::Result<Rc<GeoState>, ApiError> {
    if let Some(s) = GEO.with(|g| g.borrow().clone()) {
        return Ok(s);
    }
    let started = Date::now().as_millis();
    let bytes = fetch_asset(env, INDEX_PATH).await?;
    let index_bytes = bytes.len();
    let index = CountryIndex::from_bytes(bytes).map_err(|e| corrupt(INDEX_PATH, e))?;
    let tiles = (0..crate::geo::format::N_TILES).map(|_| None).collect();
    let state = Rc::new(GeoState {
        index,
        tiles: RefCell::new(tiles),
        open_ms: (Date::now().as_millis() - started) as f64,
        index_bytes,
        tile_bytes: RefCell::new(0),
    });
    // Two concurrent cold requests may both load; the first stored wins and both are valid.
    Ok(GEO.with(|g| g.borrow_mut().get_or_insert(state).clone()))
}

async fn tile(state: &GeoState, env: &Env, id: usize) -> std::result::Result<Rc<Tile<Vec<u8>>>, ApiError> {
    if let Some(t) = state.tiles.borrow().get(id).cloned().flatten() {
        return Ok(t);
    }
    let path = format!("geo/{}", crate::geo::format::tile_file_name(id));
    let bytes = fetch_asset(env, &path).await?;
    let n = bytes.len();
    let t = Rc::new(state.index.open_tile(id, bytes).map_err(|e| corrupt(&path, e))?);
    let mut tiles = state.tiles.borrow_mut();
    if tiles[id].is_none() {
        tiles[id] = Some(t.clone());
        *state.tile_bytes.borrow_mut() += n;
    }
    Ok(t)
}

/// Answers every point, fetching each missing tile once.
async fn lookup(state: &GeoState, env: &Env, points: &[LatLon]) -> std::result::Result<Vec<Option<u16>>, ApiError> {
    let mut out = Vec::with_capacity(points.len());
    for &p in points {
        let g = GridPoint::from(p);
        let tiles = state.tiles.borrow();
        let r = state.index.lookup_with(g, |t| tiles.get(t).and_then(|t| t.as_deref()));
        drop(tiles);
        out.push(match r {
            Ok(id) => id,
            Err(t) => {
                let tile = tile(state, env, t).await?;
                state.index.lookup_in_tile(&tile, g)
            }
        });
    }
    Ok(out)
}

async fn healthz(env: &Env) -> std::result::Result<Response, ApiError> {
    let manifest: Value = match fetch_asset(env, MANIFEST_PATH).await {
        Ok(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    let (geo_status, status) = match geo_state(env).await {
        Ok(s) => (
            json!({
                "status": "ok",
                "format_version": crate::geo::format::FORMAT_VERSION,
                "countries": s.index.len(),
                "index_bytes": s.index_bytes,
                "index_open_ms": s.open_ms,
                "tiles_loaded": s.tiles.borrow().iter().filter(|t| t.is_some()).count(),
                "tile_bytes_loaded": *s.tile_bytes.borrow(),
            }),
            200,
        ),
        Err(e) => (json!({ "status": "unavailable", "error": e.body()["error"] }), 503),
    };
    let body = json!({
        "status": if status == 200 { "ok" } else { "degraded" },
        "geo": geo_status,
        "assets": {
            "geo_source": manifest["geo"]["source"],
            "ip_source": manifest["ip"]["source"],
            "format_version": manifest["format_version"],
        },
    });
    Response::from_json(&body).map(|r| r.with_status(status)).map_err(internal)
}

async fn static_page(env: &Env) -> std::result::Result<Response, ApiError> {
    let bytes = fetch_asset(env, "www/index.html").await?;
    let headers = Headers::new();
    headers.set("content-type", "text/html; charset=utf-8").map_err(internal)?;
    Ok(Response::from_bytes(bytes).map_err(internal)?.with_headers(headers))
}

/// Bench: body is little-endian f64 (lat, lon) pairs; runs `repeat` passes of lookups so an
/// external timer can subtract the `repeat=0` request (parse + transfer) from the total.
async fn bench_geo(req: &mut Request, env: &Env, query: &str) -> std::result::Result<Response, ApiError> {
    let repeat: usize = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("repeat="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let body = req.bytes().await.map_err(internal)?;
    let mut latlons = Vec::with_capacity(body.len() / 16);
    for c in body.chunks_exact(16) {
        let (lat, lon) = c.split_at(8);
        let lat = f64::from_le_bytes(lat.try_into().map_err(internal)?);
        let lon = f64::from_le_bytes(lon.try_into().map_err(internal)?);
        latlons.push(LatLon::new(lat, lon).map_err(|e| ApiError::bad_request("invalid_point", e.to_string()))?);
    }
    let pts: Vec<GridPoint> = latlons.iter().map(|&p| GridPoint::from(p)).collect();
    let state = geo_state(env).await?;
    // Warm every tile the points need, outside the timed passes.
    lookup(&state, env, &latlons).await?;
    let tiles = state.tiles.borrow();
    let mut checksum: u64 = 0;
    for _ in 0..repeat {
        for &g in &pts {
            let id = state.index.lookup_with(g, |t| tiles.get(t).and_then(|t| t.as_deref()));
            checksum = checksum.wrapping_mul(31).wrapping_add(id.ok().flatten().map_or(0xFFFF, u64::from));
        }
    }
    json(&json!({ "points": pts.len(), "repeat": repeat, "checksum": checksum.to_string() }))
}
