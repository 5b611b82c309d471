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
