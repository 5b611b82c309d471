//! `/__bench/*`: lookups and token checks timed inside the isolate, for the bench scripts
//! (`bench/`). Compiled only with the cargo feature `bench` (`bash scripts/build-worker.sh
//! --bench`, which writes `build-bench/`), so the deployed wasm has neither these routes nor
//! their code; inside that build they are still served only with `ENABLE_BENCH=true`.

use super::Call;
use crate::assets::Tiles;
use crate::dispatch::{Answer, Isolate, Ports};
use crate::pipeline::{self, RequestHeaders, UserTokens};
use crate::{geo, ApiError};
use egn_core::auth::AuthError;
use egn_core::geo::LatLon;
use egn_core::ip::workload;
use serde_json::json;

type Result<T> = std::result::Result<T, ApiError>;

/// Largest `n` a `/__bench/*` call may ask for (keeps one call far below the CPU limit).
const MAX_BENCH_N: usize = 1_000_000;

fn bench_n(query: &str, name: &str, default: usize) -> Result<usize> {
    crate::query::count(query, name, default, MAX_BENCH_N)
}

/// The body's little-endian f64 (lat, lon) pairs (a trailing partial pair is ignored).
fn points(body: &[u8]) -> Result<Vec<LatLon>> {
    let f = |b: &[u8]| f64::from_le_bytes(std::array::from_fn(|i| b[i]));
    (body.chunks_exact(16))
        .map(|c| LatLon::new(f(&c[..8]), f(&c[8..])).map_err(geo::invalid_point))
        .collect()
}

/// `POST /__bench/geo`: `repeat` passes of lookups ([`egn_core::geo::Layers::bench`]) so an
/// external timer can subtract the `repeat=0` request (parse + transfer) from the total.
pub(super) async fn geo<P: Ports>(c: &Call<'_, P>) -> Result<Answer> {
    let batched = bench_n(c.query, "batch", 0)? != 0;
    let zones = bench_n(c.query, "zones", 0)? != 0;
    let repeat = bench_n(c.query, "repeat", 1)?;
    let points = points(c.body)?;
    let layers = c.ports.layers();
    let tiles = Tiles(c.ports);
    let checksum = (layers.bench(&tiles, &points, repeat, batched, zones)).await?;
    let n = points.len();
    Answer::ok(&json!({ "points": n, "repeat": repeat, "checksum": checksum.to_string() }))
}

/// `GET /__bench/ip`: `reps` passes of lookups over the `n` addresses of the shared benchmark
/// mix (the native bench times the same list and work), timed from outside against `reps=0` in
/// the same isolate; pages are loaded before either. `all=1` loads every page first (in a fresh
/// isolate: the whole-table load the lazy pages replace).
pub(super) async fn ip<P: Ports>(c: &Call<'_, P>) -> Result<Answer> {
    let num = |k: &str, d: usize| bench_n(c.query, k, d);
    let (n, reps, all) = (num("n", 0)?, num("reps", 1)?, num("all", 0)? == 1);
    let ips = workload::addresses(n);
    let mut s = c.ports.served(&c.cfg.ipdb, &ips).await?;
    if all {
        s = c.ports.served_all(&c.cfg.ipdb, s).await?;
    }
    let mut countries = 0;
    for _ in 0..reps {
        countries += workload::count_countries(s.db(), &ips);
    }
    Answer::ok(&json!({
        "n": n,
        "reps": reps,
        "countries": countries,
        "loaded_page_bytes": s.db().loaded_len(),
    }))
}

/// `GET /__bench/auth`: verifies the request's own bearer token `n` times with warm caches
/// (timed from outside against `n=0`).
pub(super) async fn auth<P: Ports, U: UserTokens>(
    c: &Call<'_, P>,
    req: &impl RequestHeaders,
    isolate: &Isolate<U>,
) -> Result<Answer> {
    let n = bench_n(c.query, "n", 0)?;
    let v = (isolate.verifier.as_ref())
        .ok_or_else(|| ApiError::not_configured("user authentication"))?;
    let token = pipeline::bearer(req).ok_or(AuthError::Missing)?;
    let now = c.ports.now_ms();
    let mut ok = 0;
    for _ in 0..n {
        if v.verify(&token, now).await.is_ok() {
            ok += 1;
        }
    }
    Answer::ok(&json!({ "n": n, "ok": ok }))
}
