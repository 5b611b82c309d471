//! Coordinates → country and time zone in the worker: the isolate's [`Layers`] over the two
//! embedded indexes, and their tiles read from `ASSETS`. What is opened when, which tiles are
//! kept and what a bad one answers is `egn_core::geo::Layers`'s; the routes are `egn_http::geo`'s.

use egn_core::geo::Layers;
use std::rc::Rc;
use worker::Date;

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

#[cfg(feature = "bench")]
/// Bench: body is little-endian f64 (lat, lon) pairs; runs `repeat` passes of lookups
/// ([`Layers::bench`]) so an external timer can subtract the `repeat=0` request (parse +
/// transfer) from the total.
pub async fn bench(
    body: &[u8],
    env: &worker::Env,
    repeat: usize,
    batched: bool,
    zones: bool,
) -> Result<egn_http::Answer, egn_http::ApiError> {
    use egn_http::geo as geo_api;
    use egn_http::ApiError;
    let internal = ApiError::internal;
    let mut points = Vec::with_capacity(body.len() / 16);
    for c in body.chunks_exact(16) {
        let (lat, lon) = c.split_at(8);
        let lat = f64::from_le_bytes(lat.try_into().map_err(internal)?);
        let lon = f64::from_le_bytes(lon.try_into().map_err(internal)?);
        points.push(egn_core::geo::LatLon::new(lat, lon).map_err(geo_api::invalid_point)?);
    }
    let layers = layers();
    let checksum = layers
        .bench(
            &egn_http::assets::Tiles(&super::assets::Files(env)),
            &points,
            repeat,
            batched,
            zones,
        )
        .await?;
    let n = points.len();
    egn_http::Answer::ok(
        &serde_json::json!({ "points": n, "repeat": repeat, "checksum": checksum.to_string() }),
    )
}
