//! The interleaved batch lookup answers exactly what point-by-point lookups answer: on uniform
//! and near-edge points, on batches of every length around the lane count, and with tiles
//! missing (the same `Err(tile)` as `lookup_with`).

mod common;

use common::world;
use edge_geo_notify::geo::{GridPoint, LatLon, LANES};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn points(seed: u64) -> Vec<GridPoint> {
    let w = world();
    let edges: Vec<([f64; 2], [f64; 2])> = w
        .features
        .iter()
        .flat_map(|f| f.parts.iter().flatten())
        .flat_map(|r| r.windows(2).map(|e| (e[0], e[1])))
        .collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..60_000)
        .map(|i| {
            let (lat, lon) = if i % 3 == 0 {
                (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..180.0))
            } else {
                let (a, b) = edges[rng.gen_range(0..edges.len())];
                let t: f64 = rng.gen();
                let lon = a[0] + t * (b[0] - a[0]) + rng.gen_range(-0.01..0.01);
                let lat = a[1] + t * (b[1] - a[1]) + rng.gen_range(-0.01..0.01);
                (lat.clamp(-90.0, 90.0), lon.clamp(-180.0, 179.999_999_9))
            };
            LatLon::new(lat, lon).expect("valid").into()
        })
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
