//! Shared fixtures: the source loaded once, the index built in memory once, the oracle.
#![allow(dead_code)]

use egn_tools::geo::{build, oracle::Oracle, source, CountryIndex, GridPoint, LatLon, Tile};
use std::path::Path;
use std::sync::OnceLock;

pub struct World {
    pub features: Vec<source::SourceFeature>,
    pub built: build::Built,
    pub index: CountryIndex<Vec<u8>>,
    pub tiles: Vec<Option<Tile<Vec<u8>>>>,
}

pub fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let nm = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules");
        let (features, _) = source::load(
            &nm.join("@geo-maps/countries-maritime-10m/map.geo.json"),
            &nm.join("i18n-iso-countries/codes.json"),
        )
        .expect("source data: run the README setup (npm ci) first");
        let built = build::build(&features);
        let index = CountryIndex::from_bytes(built.index.clone()).expect("index opens");
        let tiles = built
            .tiles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_ref()
                    .map(|b| index.open_tile(i, b.clone()).expect("tile opens"))
            })
            .collect();
        World {
            features,
            built,
            index,
            tiles,
        }
    })
}

/// `n` points within ±0.01° of random source edges, as (lat, lon).
pub fn near_edge_points(seed: u64, n: usize) -> Vec<(f64, f64)> {
    near_edge_points_of(&world().features, seed, n)
}

/// `n` points within ±0.01° of random edges of `features`, as (lat, lon).
pub fn near_edge_points_of(
    features: &[source::SourceFeature],
    seed: u64,
    n: usize,
) -> Vec<(f64, f64)> {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let edges: Vec<([f64; 2], [f64; 2])> = features
        .iter()
        .flat_map(|f| f.parts.iter().flatten())
        .flat_map(|r| r.windows(2).map(|e| (e[0], e[1])))
        .collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (a, b) = edges[rng.gen_range(0..edges.len())];
            let t: f64 = rng.gen();
            let lon = a[0] + t * (b[0] - a[0]) + rng.gen_range(-0.01..0.01);
            let lat = a[1] + t * (b[1] - a[1]) + rng.gen_range(-0.01..0.01);
            (lat.clamp(-90.0, 90.0), lon.clamp(-180.0, 179.999_999_9))
        })
        .collect()
}

pub fn oracle() -> &'static Oracle {
    static O: OnceLock<Oracle> = OnceLock::new();
    O.get_or_init(|| Oracle::new(&world().features, build::Layer::Countries.overlap_rule()))
}

impl World {
    pub fn lookup(&self, lat: f64, lon: f64) -> Option<u16> {
        let p = GridPoint::from(LatLon::new(lat, lon).expect("valid coordinate"));
        self.index
            .lookup_with(p, |t| self.tiles[t].as_ref())
            .expect("all tiles loaded")
    }

    pub fn alpha2(&self, id: Option<u16>) -> Option<&str> {
        id.map(|i| self.index.country(i).expect("known id").alpha2)
    }
}

/// The zone layer as the worker reads it: geo-tz's full set read back into polygons, built
/// in memory once together with the countries (the combined layer: one walk answers both).
pub struct Zones {
    pub features: Vec<source::SourceFeature>,
    pub built: build::Built,
    pub index: egn_tools::geo::ZoneIndex<Vec<u8>>,
    pub tiles: Vec<Option<Tile<Vec<u8>>>>,
}

pub fn zones() -> &'static Zones {
    static Z: OnceLock<Zones> = OnceLock::new();
    Z.get_or_init(|| {
        let nm = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules");
        let (features, _) = egn_tools::geo::zones::load(&nm.join("geo-tz"))
            .expect("zone data: run the README setup (npm ci) first");
        let built = build::build_combined(&world().features, &features);
        let index = CountryIndex::from_bytes(built.index.clone()).expect("zone index opens");
        let tiles = built
            .tiles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                t.as_ref()
                    .map(|b| index.open_tile(i, b.clone()).expect("tile opens"))
            })
            .collect();
        Zones {
            features,
            built,
            index,
            tiles,
        }
    })
}

pub fn zone_oracle() -> &'static Oracle {
    static O: OnceLock<Oracle> = OnceLock::new();
    O.get_or_init(|| Oracle::new(&zones().features, build::Layer::Zones.overlap_rule()))
}

impl Zones {
    /// The zone of a point.
    pub fn lookup(&self, lat: f64, lon: f64) -> Option<u16> {
        self.lookup_pair(lat, lon).1
    }

    /// The (country, zone) pair of a point.
    pub fn lookup_pair(&self, lat: f64, lon: f64) -> (Option<u16>, Option<u16>) {
        let p = GridPoint::from(LatLon::new(lat, lon).expect("valid coordinate"));
        self.index
            .lookup_pair_with(p, |t| self.tiles[t].as_ref())
            .expect("all tiles loaded")
    }

    pub fn name(&self, id: Option<u16>) -> Option<&str> {
        id.map(|i| self.index.zone(i).expect("known id"))
    }
}
