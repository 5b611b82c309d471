//! Coordinates → country and time zone in the worker: each layer's index per isolate (both
//! embedded), tiles fetched on first use. A request that asks for a zone walks the combined
//! layer (`assets/tz`: country and zone in one walk); `fields=country` walks the country layer
//! alone and never opens the other, so it costs what it did before zones existed.

use super::assets::{corrupt, fetch_asset};
use super::{ok_json, ApiResult};
use egn_core::geo::{format, CountryIndex, GridPoint, LatLon, Tile, ZoneIndex};
use egn_http::geo::{self as geo_api, CountryCodes, CountryResults, Fields, PointResult};
use egn_http::health::{GeoHealth, GeoIndexHealth, GeoStatus};
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
const ZONE_INDEX_PATH: &str = "tz/index.bin";
/// The combined (country, zone) layer's `index.bin`, embedded for the same reason (and stamped
/// the same way).
static EMBEDDED_ZONE_INDEX: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/tz/index.bin"));

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

/// The combined layer of an isolate: its index and the tiles fetched so far.
pub struct ZoneState {
    /// The combined layer's top-level index (zone names; country ids as the country layer's).
    pub index: ZoneIndex<&'static [u8]>,
    tiles: RefCell<Vec<TileSlot>>,
}

thread_local! {
    // One per isolate: Workers run one thread per isolate, so no locking is needed.
    static GEO: RefCell<Option<Rc<GeoState>>> = const { RefCell::new(None) };
    static ZONES: RefCell<Option<Rc<ZoneState>>> = const { RefCell::new(None) };
}

/// The isolate's combined layer, opened on first use from the embedded bytes; its pairs name
/// the countries of `countries` (checked: both are built by one asset build).
pub fn zone_state(countries: &GeoState) -> ApiResult<Rc<ZoneState>> {
    if let Some(s) = ZONES.with(|z| z.borrow().clone()) {
        return Ok(s);
    }
    let index =
        ZoneIndex::from_bytes(EMBEDDED_ZONE_INDEX).map_err(|e| corrupt(ZONE_INDEX_PATH, e))?;
    if index.pair_countries() != Some(countries.index.len()) {
        let e = egn_core::geo::LoadError::Corrupt("not the combined layer of these countries");
        return Err(corrupt(ZONE_INDEX_PATH, e));
    }
    let state = Rc::new(ZoneState {
        index,
        tiles: RefCell::new((0..format::N_TILES).map(|_| None).collect()),
    });
    Ok(ZONES.with(|z| z.borrow_mut().get_or_insert(state).clone()))
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

/// One layer's tile `id`, from the isolate's slots or fetched from `ASSETS` under `dir/`;
/// `fetched` learns the bytes of a newly stored tile.
async fn layer_tile(
    index: &CountryIndex<&'static [u8]>,
    slots: &RefCell<Vec<TileSlot>>,
    dir: &str,
    env: &Env,
    id: usize,
    fetched: impl FnOnce(usize),
) -> ApiResult<Rc<Tile<Vec<u8>>>> {
    if let Some(t) = slots.borrow().get(id).cloned().flatten() {
        return Ok(t);
    }
    let path = format!("{dir}/{}", format::tile_file_name(id));
    let bytes = fetch_asset(env, &path).await?;
    let n = bytes.len();
    let t = Rc::new(index.open_tile(id, bytes).map_err(|e| corrupt(&path, e))?);
    let mut tiles = slots.borrow_mut();
    if tiles[id].is_none() {
        tiles[id] = Some(t.clone());
        fetched(n);
    }
    Ok(t)
}

/// Answers every point of one layer (one interleaved batch over the loaded tiles), then
/// fetches each missing tile once for the points that need it.
async fn lookup_layer(
    index: &CountryIndex<&'static [u8]>,
    slots: &RefCell<Vec<TileSlot>>,
    dir: &str,
    env: &Env,
    grid: &[GridPoint],
    fetched: &dyn Fn(usize),
) -> ApiResult<Vec<Option<u16>>> {
    let mut found = vec![Ok(None); grid.len()];
    {
        let tiles = slots.borrow();
        index.lookup_batch(
            grid,
            |t| tiles.get(t).and_then(|t| t.as_deref()),
            &mut found,
        );
    }
    let mut out = Vec::with_capacity(grid.len());
    for (r, &g) in found.into_iter().zip(grid) {
        out.push(match r {
            Ok(id) => id,
            Err(t) => {
                let tile = layer_tile(index, slots, dir, env, t, fetched).await?;
                index.lookup_in_tile(&tile, g)
            }
        });
    }
    Ok(out)
}

/// Countries of `points`.
pub async fn lookup(state: &GeoState, env: &Env, points: &[LatLon]) -> ApiResult<Vec<Option<u16>>> {
    let grid: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
    let fetched = |n| state.tile_bytes.set(state.tile_bytes.get() + n);
    lookup_layer(&state.index, &state.tiles, "geo", env, &grid, &fetched).await
}

/// Countries and time zones of `points`, one walk of the combined layer (every point has a
/// zone; `None` only from a damaged asset), as country codes and zone names.
pub async fn pairs_of(
    state: &GeoState,
    env: &Env,
    points: &[LatLon],
) -> ApiResult<Vec<(Option<CountryCodes>, Option<String>)>> {
    let z = zone_state(state)?;
    let grid: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
    let mut found = vec![Ok((None, None)); grid.len()];
    {
        let tiles = z.tiles.borrow();
        let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
        z.index.lookup_pair_batch(&grid, get, &mut found);
    }
    let mut out = Vec::with_capacity(grid.len());
    for (r, &g) in found.into_iter().zip(&grid) {
        let (country, zone) = match r {
            Ok(pair) => pair,
            Err(t) => {
                let tile = layer_tile(&z.index, &z.tiles, "tz", env, t, |_| {}).await?;
                z.index.lookup_pair_in_tile(&tile, g)
            }
        };
        out.push((
            CountryCodes::of(country.and_then(|i| state.index.country(i))),
            zone.and_then(|i| z.index.zone(i)).map(str::to_owned),
        ));
    }
    Ok(out)
}

/// The country and (with `fields.time_zone`) zone JSON of one point (`/v1/geo/me` too).
pub async fn point_of(env: &Env, p: LatLon, fields: Fields) -> ApiResult<PointResult> {
    let state = geo_state(env).await?;
    if fields.time_zone {
        let (country, zone) = pairs_of(&state, env, &[p]).await?.swap_remove(0);
        return Ok(PointResult::new(p, country).with_time_zone(zone.as_deref()));
    }
    let id = lookup(&state, env, &[p]).await?[0];
    let country = CountryCodes::of(id.and_then(|i| state.index.country(i)));
    Ok(PointResult::new(p, country))
}

/// `GET /v1/geo/country`.
pub async fn get_country(env: &Env, query: &str) -> ApiResult<Response> {
    let p = geo_api::parse_point_query(query)?;
    let fields = geo_api::parse_fields(query)?;
    ok_json(&point_of(env, p, fields).await?)
}

/// `POST /v1/geo/country`.
pub async fn post_country(env: &Env, query: &str, body: &[u8]) -> ApiResult<Response> {
    let fields = geo_api::parse_fields(query)?;
    let points = geo_api::parse_batch(body)?;
    let state = geo_state(env).await?;
    if fields.time_zone {
        let (results, zones): (Vec<_>, Vec<_>) =
            pairs_of(&state, env, &points).await?.into_iter().unzip();
        let time_zones = Some(zones.into_iter().map(Option::unwrap_or_default).collect());
        return ok_json(&CountryResults {
            results,
            time_zones,
        });
    }
    let ids = lookup(&state, env, &points).await?;
    let results = ids
        .iter()
        .map(|id| CountryCodes::of(id.and_then(|i| state.index.country(i))))
        .collect();
    ok_json(&CountryResults {
        results,
        time_zones: None,
    })
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
/// time, or with `batched` through the interleaved batch; with `zones`, the country and zone of
/// each point from one walk of the combined layer, else the country layer alone) so an external
/// timer can subtract the `repeat=0` request (parse + transfer) from the total.
pub async fn bench(
    body: &[u8],
    env: &Env,
    repeat: usize,
    batched: bool,
    zones: bool,
) -> ApiResult<Response> {
    use super::internal;
    let mut latlons = Vec::with_capacity(body.len() / 16);
    for c in body.chunks_exact(16) {
        let (lat, lon) = c.split_at(8);
        let lat = f64::from_le_bytes(lat.try_into().map_err(internal)?);
        let lon = f64::from_le_bytes(lon.try_into().map_err(internal)?);
        let p = LatLon::new(lat, lon).map_err(geo_api::invalid_point)?;
        latlons.push(p);
    }
    let pts: Vec<GridPoint> = latlons.iter().map(|&p| GridPoint::from(p)).collect();
    let state = geo_state(env).await?;
    // Warm every tile the points need, outside the timed passes.
    lookup(&state, env, &latlons).await?;
    let z = zone_state(&state)?;
    if zones {
        pairs_of(&state, env, &latlons).await?;
    }
    let tiles = state.tiles.borrow();
    let ztiles = z.tiles.borrow();
    let mut checksum: u64 = 0;
    let mut found = vec![Ok(None); pts.len()];
    let mut pfound = vec![Ok((None, None)); pts.len()];
    let mix = |c: u64, id: Option<u16>| {
        c.wrapping_mul(31)
            .wrapping_add(id.map_or(0xFFFF, u64::from))
    };
    let mix_pair = |c: u64, (country, zone): (Option<u16>, Option<u16>)| mix(mix(c, country), zone);
    let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
    let zget = |t: usize| ztiles.get(t).and_then(|t| t.as_deref());
    for _ in 0..repeat {
        match (batched, zones) {
            (true, false) => {
                state.index.lookup_batch(&pts, get, &mut found);
                for &id in &found {
                    checksum = mix(checksum, id.ok().flatten());
                }
            }
            (true, true) => {
                z.index.lookup_pair_batch(&pts, zget, &mut pfound);
                for &pair in &pfound {
                    checksum = mix_pair(checksum, pair.unwrap_or((None, None)));
                }
            }
            (false, false) => {
                for &g in &pts {
                    let id = state.index.lookup_with(g, get);
                    checksum = mix(checksum, id.ok().flatten());
                }
            }
            (false, true) => {
                for &g in &pts {
                    let pair = z.index.lookup_pair_with(g, zget);
                    checksum = mix_pair(checksum, pair.unwrap_or((None, None)));
                }
            }
        }
    }
    ok_json(&json!({ "points": pts.len(), "repeat": repeat, "checksum": checksum.to_string() }))
}
