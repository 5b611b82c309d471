//! Coordinates → country and time zone in the worker: the isolate's [`Layers`] over the two
//! embedded indexes, and their tiles read from `ASSETS`. What is opened when, which tiles are
//! kept and what a bad one answers is `egn_core::geo::Layers`'s; the routes are `egn_http::geo`'s.

use super::assets::fetch_asset;
use super::{ok_json, ApiResult};
use egn_core::geo::{Layers, TileSource};
use egn_http::geo as geo_api;
use egn_http::health::GeoHealth;
use egn_http::ApiError;
use std::rc::Rc;
use worker::{Date, Env, Response};

/// `index.bin`, embedded at worker build time (`scripts/build-worker.sh` builds the assets first
/// and stamps this file as an input): a fresh isolate answers most points with no asset read,
/// and only tiles come from `ASSETS`. ~17 KB of the gzip bundle.
static EMBEDDED_INDEX: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/geo/index.bin"));
/// The combined (country, zone) layer's `index.bin`, embedded for the same reason (and stamped
/// the same way).
static EMBEDDED_ZONE_INDEX: &[u8] =
    include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/tz/index.bin"));

fn now_ms() -> u64 {
    Date::now().as_millis()
}

thread_local! {
    // One per isolate: Workers run one thread per isolate, so no locking is needed.
    static GEO: Rc<Layers<&'static [u8]>> =
        Rc::new(Layers::new(EMBEDDED_INDEX, EMBEDDED_ZONE_INDEX, now_ms));
}

/// The isolate's layers.
pub fn layers() -> Rc<Layers<&'static [u8]>> {
    GEO.with(Rc::clone)
}

/// Tiles from the assets binding.
pub struct Assets<'a>(pub &'a Env);

impl TileSource for Assets<'_> {
    type Error = ApiError;
    async fn fetch(&self, path: &str) -> ApiResult<Vec<u8>> {
        fetch_asset(self.0, path).await
    }
}

/// `GET /v1/geo/country`.
pub async fn get_country(env: &Env, query: &str) -> ApiResult<Response> {
    ok_json(&geo_api::get_country(&layers(), &Assets(env), query).await?)
}

/// `POST /v1/geo/country`.
pub async fn post_country(env: &Env, query: &str, body: &[u8]) -> ApiResult<Response> {
    ok_json(&geo_api::post_country(&layers(), &Assets(env), query, body).await?)
}

/// Health fragment.
pub fn health() -> GeoHealth {
    GeoHealth::of(&layers())
}

#[cfg(feature = "bench")]
/// Bench: body is little-endian f64 (lat, lon) pairs; runs `repeat` passes of lookups
/// ([`Layers::bench`]) so an external timer can subtract the `repeat=0` request (parse +
/// transfer) from the total.
pub async fn bench(
    body: &[u8],
    env: &Env,
    repeat: usize,
    batched: bool,
    zones: bool,
) -> ApiResult<Response> {
    use super::internal;
    let mut points = Vec::with_capacity(body.len() / 16);
    for c in body.chunks_exact(16) {
        let (lat, lon) = c.split_at(8);
        let lat = f64::from_le_bytes(lat.try_into().map_err(internal)?);
        let lon = f64::from_le_bytes(lon.try_into().map_err(internal)?);
        points.push(egn_core::geo::LatLon::new(lat, lon).map_err(geo_api::invalid_point)?);
    }
    let layers = layers();
    let checksum = layers
        .bench(&Assets(env), &points, repeat, batched, zones)
        .await?;
    let n = points.len();
    ok_json(&serde_json::json!({ "points": n, "repeat": repeat, "checksum": checksum.to_string() }))
}
