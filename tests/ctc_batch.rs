//! The interleaved batch lookup answers exactly what point-by-point lookups answer: on uniform
//! and near-edge points, on batches of every length around the lane count, and with tiles
//! missing (the same `Err(tile)` as `lookup_with`).

mod common;

use common::world;
use egn_core::geo::{GridPoint, LatLon, LANES};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// 40 000 near-edge points, then 20 000 uniform ones.
fn points(seed: u64) -> Vec<GridPoint> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let uniform = (0..20_000).map(|_| (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..180.0)));
    common::near_edge_points(seed, 40_000)
        .into_iter()
        .chain(uniform)
        .map(|(lat, lon)| LatLon::new(lat, lon).expect("valid").into())
        .collect()
}

#[test]
fn batch_equals_point_by_point_with_all_tiles() {
    let w = world();
    let pts = points(11);
    let want: Vec<_> = pts
        .iter()
        .map(|&p| w.index.lookup_with(p, |t| w.tiles[t].as_ref()))
        .collect();
    let mut got = vec![Ok(None); pts.len()];
    w.index
        .lookup_batch(&pts, |t| w.tiles[t].as_ref(), &mut got);
    assert_eq!(got, want);
    // Some answers are countries, some sea, none missing: the comparison is not vacuous.
    assert!(got.iter().any(|r| matches!(r, Ok(Some(_)))));
    assert!(got.iter().any(|r| matches!(r, Ok(None))));
}

#[test]
fn batch_reports_missing_tiles_like_lookup_with() {
    let w = world();
    let pts = points(12);
    // Hide every third tile.
    let get = |t: usize| w.tiles[t].as_ref().filter(|_| !t.is_multiple_of(3));
    let want: Vec<_> = pts.iter().map(|&p| w.index.lookup_with(p, get)).collect();
    assert!(
        want.iter().any(|r| r.is_err()),
        "some points need a hidden tile"
    );
    for len in [0, 1, LANES - 1, LANES, LANES + 1, 3 * LANES + 5] {
        let mut got = vec![Ok(Some(u16::MAX)); len];
        w.index.lookup_batch(&pts[..len], get, &mut got);
        assert_eq!(got, want[..len], "batch of {len}");
    }
}
