//! Coordinates → country in the worker: the index per isolate, tiles fetched on first use.

use super::assets::{corrupt, fetch_asset};
use super::{ok_json, ApiResult};
use crate::api::geo::{self as geo_api, CountryCodes, CountryResults, PointResult};
use crate::api::health::{GeoHealth, GeoIndexHealth, GeoStatus};
use crate::geo::{format, CountryIndex, GridPoint, LatLon, Tile};
#[cfg(feature = "bench")]
use serde_json::json;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use worker::{Date, Env, Response};

const INDEX_PATH: &str = "geo/index.bin";
/// `index.bin`, embedded at worker build time (`scripts/build-worker.sh` builds the assets first
/// and stamps this file as an input): a fresh isolate answers most points with no asset read,
/// and only tiles come from `ASSETS`. ~17 KB of the gzip bundle.
static EMBEDDED_INDEX: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/geo/index.bin"));

/// A tile once fetched and verified, shared by the requests of one isolate.
type TileSlot = Option<Rc<Tile<Vec<u8>>>>;

/// The isolate's geo data.
pub struct GeoState {
    /// The top-level index.
    pub index: CountryIndex<&'static [u8]>,
    tiles: RefCell<Vec<TileSlot>>,
    /// Wall time (ms) spent opening (validating) the embedded `index.bin` in this isolate.
    open_ms: f64,
    index_bytes: usize,
    tile_bytes: Cell<usize>,
}

thread_local! {
    // One per isolate: Workers run one thread per isolate, so no locking is needed.
    static GEO: RefCell<Option<Rc<GeoState>>> = const { RefCell::new(None) };
}

/// The isolate's index, opened on first use from the embedded bytes.
pub async fn geo_state(_env: &Env) -> ApiResult<Rc<GeoState>> {
    if let Some(s) = GEO.with(|g| g.borrow().clone()) {
        return Ok(s);
    }
    let started = Date::now().as_millis();
    let bytes = EMBEDDED_INDEX;
    let index_bytes = bytes.len();
    let index = CountryIndex::from_bytes(bytes).map_err(|e| corrupt(INDEX_PATH, e))?;
    let state = Rc::new(GeoState {
        index,
        tiles: RefCell::new((0..format::N_TILES).map(|_| None).collect()),
        open_ms: (Date::now().as_millis() - started) as f64,
        index_bytes,
        tile_bytes: Cell::new(0),
    });
    // Two concurrent cold requests may both load; the first stored wins and both are valid.
    Ok(GEO.with(|g| g.borrow_mut().get_or_insert(state).clone()))
}

async fn tile(state: &GeoState, env: &Env, id: usize) -> ApiResult<Rc<Tile<Vec<u8>>>> {
    if let Some(t) = state.tiles.borrow().get(id).cloned().flatten() {
        return Ok(t);
    }
    let path = format!("geo/{}", format::tile_file_name(id));
    let bytes = fetch_asset(env, &path).await?;
    let n = bytes.len();
    let t = Rc::new(
        state
            .index
            .open_tile(id, bytes)
            .map_err(|e| corrupt(&path, e))?,
    );
    let mut tiles = state.tiles.borrow_mut();
    if tiles[id].is_none() {
        tiles[id] = Some(t.clone());
        state.tile_bytes.set(state.tile_bytes.get() + n);
    }
    Ok(t)
}

/// Answers every point (one interleaved batch over the loaded tiles), then fetches each missing
/// tile once for the points that need it.
pub async fn lookup(state: &GeoState, env: &Env, points: &[LatLon]) -> ApiResult<Vec<Option<u16>>> {
    let grid: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
    let mut found = vec![Ok(None); grid.len()];
    {
        let tiles = state.tiles.borrow();
        state.index.lookup_batch(
            &grid,
            |t| tiles.get(t).and_then(|t| t.as_deref()),
            &mut found,
        );
    }
    let mut out = Vec::with_capacity(grid.len());
    for (r, &g) in found.into_iter().zip(&grid) {
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

/// The country JSON of one point (used by `/v1/geo/me` too).
pub async fn country_of(env: &Env, p: LatLon) -> ApiResult<Option<CountryCodes>> {
    let state = geo_state(env).await?;
    let id = lookup(&state, env, &[p]).await?[0];
    Ok(CountryCodes::of(id.and_then(|i| state.index.country(i))))
}

/// `GET /v1/geo/country`.
pub async fn get_country(env: &Env, query: &str) -> ApiResult<Response> {
    let p = geo_api::parse_point_query(query)?;
    let c = country_of(env, p).await?;
    ok_json(&PointResult::new(p, c))
}

/// `POST /v1/geo/country`.
pub async fn post_country(env: &Env, body: &[u8]) -> ApiResult<Response> {
    let points = geo_api::parse_batch(body)?;
    let state = geo_state(env).await?;
    let ids = lookup(&state, env, &points).await?;
    let results = ids
        .iter()
        .map(|id| CountryCodes::of(id.and_then(|i| state.index.country(i))))
        .collect();
    ok_json(&CountryResults { results })
}

/// Health fragment.
pub async fn health(env: &Env) -> GeoHealth {
    match geo_state(env).await {
        Ok(s) => GeoHealth {
            status: GeoStatus::Ok,
            error: None,
            index: Some(GeoIndexHealth {
                format_version: format::FORMAT_VERSION,
                countries: s.index.len(),
                index_bytes: s.index_bytes,
                index_source: "embedded",
                index_open_ms: s.open_ms,
                tiles_loaded: s.tiles.borrow().iter().filter(|t| t.is_some()).count(),
                tile_bytes_loaded: s.tile_bytes.get(),
            }),
        },
        Err(e) => GeoHealth {
            status: GeoStatus::Unavailable,
            error: Some(e.body()["error"].clone()),
            index: None,
        },
    }
}

#[cfg(feature = "bench")]
/// Bench: body is little-endian f64 (lat, lon) pairs; runs `repeat` passes of lookups (one at a
/// time, or with `batched` through the interleaved batch) so an external timer can subtract the
/// `repeat=0` request (parse + transfer) from the total.
pub async fn bench(body: &[u8], env: &Env, repeat: usize, batched: bool) -> ApiResult<Response> {
    use super::internal;
    use crate::api::{ApiError, ErrorCode};
    let mut latlons = Vec::with_capacity(body.len() / 16);
    for c in body.chunks_exact(16) {
        let (lat, lon) = c.split_at(8);
        let lat = f64::from_le_bytes(lat.try_into().map_err(internal)?);
        let lon = f64::from_le_bytes(lon.try_into().map_err(internal)?);
        let p = LatLon::new(lat, lon)
            .map_err(|e| ApiError::new(ErrorCode::InvalidPoint, e.to_string()))?;
        latlons.push(p);
    }
    let pts: Vec<GridPoint> = latlons.iter().map(|&p| GridPoint::from(p)).collect();
    let state = geo_state(env).await?;
    // Warm every tile the points need, outside the timed passes.
    lookup(&state, env, &latlons).await?;
    let tiles = state.tiles.borrow();
    let mut checksum: u64 = 0;
    let mut found = vec![Ok(None); pts.len()];
    for _ in 0..repeat {
        if batched {
            let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
            state.index.lookup_batch(&pts, get, &mut found);
            for id in &found {
                checksum = checksum
                    .wrapping_mul(31)
                    .wrapping_add(id.ok().flatten().map_or(0xFFFF, u64::from));
            }
            continue;
        }
        for &g in &pts {
            let id = state
                .index
                .lookup_with(g, |t| tiles.get(t).and_then(|t| t.as_deref()));
            checksum = checksum
                .wrapping_mul(31)
                .wrapping_add(id.ok().flatten().map_or(0xFFFF, u64::from));
        }
    }
    ok_json(&json!({ "points": pts.len(), "repeat": repeat, "checksum": checksum.to_string() }))
}
