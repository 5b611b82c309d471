//! Exactness of the zone layer against the oracle (plain point-in-polygon on geo-tz's full zone
//! set read back into polygons, ocean bands included, smallest zone wins), plus named places.
//! Same rules as `ctc_exact.rs`: disagreements only within 1e-7° of an edge of one of the two
//! answers (the data is stored to 1e-6°), and only near edges.

mod common;

use common::{zone_oracle, zones};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TOLERANCE_DEG: f64 = 1e-7;
/// Near-edge points that may differ (all within `TOLERANCE_DEG` of an edge) out of 200 000.
const MAX_NEAR_EDGE_DIFFERENCES: usize = 20;

fn check(points: &[(f64, f64)]) -> (usize, usize) {
    let z = zones();
    check_layer(
        points,
        zone_oracle(),
        &|lat, lon| z.lookup(lat, lon),
        &|id| format!("{:?}", z.name(id)),
    )
}

/// Agreement of `index` with `oracle` on `points`: (agree, differ within the tolerance of an
/// edge); panics on any difference farther from an edge.
fn check_layer(
    points: &[(f64, f64)],
    o: &egn_tools::geo::oracle::Oracle,
    index: &(dyn Fn(f64, f64) -> Option<u16> + Sync),
    name: &(dyn Fn(Option<u16>) -> String + Sync),
) -> (usize, usize) {
    let chunks: Vec<&[(f64, f64)]> = points.chunks(points.len().div_ceil(2)).collect();
    let results: Vec<(usize, usize, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(move || {
                    let (mut near_edge, mut agree, mut bad) = (0, 0, Vec::new());
                    for &(lat, lon) in *chunk {
                        let (got, want) = (index(lat, lon), o.lookup(lat, lon));
                        if got == want {
                            agree += 1;
                            continue;
                        }
                        let d = [got, want]
                            .into_iter()
                            .flatten()
                            .map(|f| o.edge_distance(f, lat, lon))
                            .fold(f64::MAX, f64::min);
                        if d <= TOLERANCE_DEG {
                            near_edge += 1;
                        } else {
                            bad.push(format!(
                                "({lat}, {lon}): index {} oracle {}, {d:.2e}° from an edge",
                                name(got),
                                name(want)
                            ));
                        }
                    }
                    (agree, near_edge, bad)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread"))
            .collect()
    });
    let bad: Vec<String> = results.iter().flat_map(|r| r.2.clone()).collect();
    assert!(
        bad.is_empty(),
        "{} disagreements away from edges, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
    (
        results.iter().map(|r| r.0).sum(),
        results.iter().map(|r| r.1).sum(),
    )
}

#[test]
fn every_point_has_a_zone() {
    let z = zones();
    let mut rng = SmallRng::seed_from_u64(44);
    for _ in 0..100_000 {
        let (lat, lon) = (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..=180.0));
        assert!(z.lookup(lat, lon).is_some(), "({lat}, {lon}) has no zone");
    }
}

#[test]
fn agrees_with_oracle_on_a_million_uniform_points() {
    let mut rng = SmallRng::seed_from_u64(20261203);
    let pts: Vec<(f64, f64)> = (0..1_000_000)
        .map(|_| (rng.gen_range(-90.0..90.0), rng.gen_range(-180.0..180.0)))
        .collect();
    let (agree, near) = check(&pts);
    eprintln!("uniform: {agree} agree, {near} differ within {TOLERANCE_DEG}° of an edge");
    assert_eq!(
        near, 0,
        "uniform points that differ within {TOLERANCE_DEG}° of an edge"
    );
    assert_eq!(agree, pts.len());
}

#[test]
fn agrees_with_oracle_near_edges() {
    let pts = near_zone_edge_points(44, 200_000);
    let (agree, near) = check(&pts);
    eprintln!("near edges: {agree} agree, {near} differ within {TOLERANCE_DEG}° of an edge");
    assert!(
        near <= MAX_NEAR_EDGE_DIFFERENCES,
        "{near} near-edge differences (bound {MAX_NEAR_EDGE_DIFFERENCES})"
    );
}

/// The combined layer's country half against the country oracle (the checks of
/// `ctc_exact.rs`): a cell splits for either layer's edges, so its country part is clipped to
/// other cells than the country layer's, and must still be exact.
#[test]
fn combined_layer_countries_agree_with_oracle() {
    let (z, w) = (zones(), common::world());
    assert_eq!(z.index.pair_countries(), Some(w.index.len()));
    let pair = |lat, lon| {
        let (c, zone) = z.lookup_pair(lat, lon);
        (w.alpha2(c), z.name(zone))
    };
    assert_eq!(pair(47.6970, 8.6910), (Some("DE"), Some("Europe/Busingen")));
    assert_eq!(pair(0.0, -150.0), (None, Some("Etc/GMT+10")));
    let country = |lat, lon| z.lookup_pair(lat, lon).0;
    let name = |id: Option<u16>| format!("{:?}", w.alpha2(id));
    let mut rng = SmallRng::seed_from_u64(4401);
    let uniform: Vec<(f64, f64)> = (0..500_000)
        .map(|_| (rng.gen_range(-90.0..90.0), rng.gen_range(-180.0..180.0)))
        .collect();
    let (agree, near) = check_layer(&uniform, common::oracle(), &country, &name);
    eprintln!("combined, countries, uniform: {agree} agree, {near} differ near an edge");
    assert_eq!(agree, uniform.len());
    let edges = common::near_edge_points(4402, 200_000);
    let (agree, near) = check_layer(&edges, common::oracle(), &country, &name);
    eprintln!("combined, countries, near edges: {agree} agree, {near} differ near an edge");
    assert!(
        near <= MAX_NEAR_EDGE_DIFFERENCES,
        "{near} near-edge differences"
    );
}

/// `n` points within ±0.01° of random zone edges (geo-tz's quad cuts included), as (lat, lon).
fn near_zone_edge_points(seed: u64, n: usize) -> Vec<(f64, f64)> {
    common::near_edge_points_of(&zones().features, seed, n)
}

/// The answers geo-tz 8.1.9 (`geo-tz/all`) gives for the same points; where it names two
/// overlapping zones (Xinjiang: Urumqi and Shanghai), the one whose name sorts first, by the
/// zones' overlap rule (`OverlapRule::FirstName`).
#[test]
fn named_places() {
    let z = zones();
    let cases: &[(&str, f64, f64, &str)] = &[
        (
            "Büsingen (DE enclave in CH)",
            47.6970,
            8.6910,
            "Europe/Busingen",
        ),
        (
            "Baarle-Hertog enclave H1 (BE in NL)",
            51.4362,
            4.92188,
            "Europe/Brussels",
        ),
        (
            "Baarle-Nassau (NL around it)",
            51.4452,
            4.9070,
            "Europe/Amsterdam",
        ),
        (
            "Wakhan, Afghan side of the Chinese border",
            37.1,
            74.3,
            "Asia/Kabul",
        ),
        (
            "Xinjiang, Chinese side of the Afghan border (Shanghai and Urumqi overlap)",
            37.2,
            75.2,
            "Asia/Shanghai",
        ),
        (
            "Window Rock, Navajo Nation (DST)",
            35.6803,
            -109.0526,
            "America/Denver",
        ),
        (
            "Tuba City, Navajo Nation",
            36.135,
            -111.24,
            "America/Denver",
        ),
        (
            "Kykotsmovi, Hopi (in the Navajo Nation, no DST)",
            35.8745,
            -110.6237,
            "America/Phoenix",
        ),
        ("Lord Howe Island", -31.55, 159.08, "Australia/Lord_Howe"),
        (
            "Kiritimati, Kiribati (UTC+14)",
            1.87,
            -157.43,
            "Pacific/Kiritimati",
        ),
        ("Kanton, Kiribati", -2.8, -171.7, "Pacific/Kanton"),
        ("Tarawa, Kiribati", 1.33, 172.98, "Pacific/Tarawa"),
        (
            "Taveuni, Fiji, west of 180°",
            -16.85,
            179.98,
            "Pacific/Fiji",
        ),
        (
            "Taveuni, Fiji, east of 180°",
            -16.85,
            -179.98,
            "Pacific/Fiji",
        ),
        ("Nairobi", -1.286, 36.817, "Africa/Nairobi"),
        (
            "Near the South Pole, east",
            -89.99,
            0.5,
            "Antarctica/McMurdo",
        ),
        (
            "Near the South Pole, west",
            -89.99,
            -0.5,
            "Antarctica/McMurdo",
        ),
        (
            "Near the South Pole, across the date line",
            -89.99,
            -170.0,
            "Antarctica/McMurdo",
        ),
        ("Near the North Pole", 89.99, 0.5, "Etc/GMT"),
        ("Open Pacific", 0.0, -150.0, "Etc/GMT+10"),
        ("Gulf of Guinea 0/0", 0.0, 0.0, "Etc/GMT"),
        ("Open sea west of the date line", -40.0, 179.0, "Etc/GMT-12"),
        (
            "Open sea east of the date line",
            -40.0,
            -179.0,
            "Etc/GMT+12",
        ),
    ];
    let mut wrong = Vec::new();
    for &(name, lat, lon, want) in cases {
        let got = z.name(z.lookup(lat, lon));
        let oracle = z.name(zone_oracle().lookup(lat, lon));
        if got != Some(want) || oracle != Some(want) {
            wrong.push(format!(
                "{name} ({lat}, {lon}): index {got:?}, oracle {oracle:?}, want {want}"
            ));
        }
    }
    // The poles and the prime meridian lie on zone edges (geo-tz cut its quads along lon 0), where
    // the oracle's strict interior test has no answer: the index's half-open rule (edges belong
    // to the cell to their north-east) answers, and what geo-tz answers.
    for (name, lat, lon, want) in [
        ("South Pole", -90.0, 0.0, "Antarctica/McMurdo"),
        (
            "South Pole, any longitude",
            -90.0,
            123.0,
            "Antarctica/McMurdo",
        ),
        (
            "On lon 0 near the South Pole",
            -89.99,
            0.0,
            "Antarctica/McMurdo",
        ),
        (
            "North Pole: the ocean band of its longitude",
            90.0,
            0.0,
            "Etc/GMT",
        ),
        ("North Pole at lon 179", 90.0, 179.0, "Etc/GMT-12"),
    ] {
        let got = z.name(z.lookup(lat, lon));
        if got != Some(want) {
            wrong.push(format!("{name} ({lat}, {lon}): index {got:?}, want {want}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The zone layer's table: every id names a valid IANA-style zone, the layer is not a country
/// index, the built bytes are the ones the committed manifest pins, and a damaged name table is
/// refused at open.
#[test]
fn zone_layer_format() {
    use egn_tools::geo::{format, CountryIndex, LoadError};
    let z = zones();
    let n = z.index.len();
    assert_eq!(n, z.features.len());
    for id in 0..n as u16 {
        let name = z.index.zone(id).expect("every id has a name");
        assert_eq!(name, z.features[id as usize].alpha3);
        assert!(
            z.index.country(id).is_none(),
            "a zone index names no country"
        );
    }
    assert!(z.index.zone(n as u16).is_none());
    assert!(
        common::world().index.zone(0).is_none(),
        "a country index names no zone"
    );

    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/manifest.json"))
            .expect("assets/manifest.json (run scripts/build-assets.sh)"),
    )
    .unwrap();
    let files = manifest["tz"]["files"]
        .as_array()
        .expect("tz files in the manifest");
    assert_eq!(files[0]["path"], "tz/index.bin");
    assert_eq!(files[0]["sha256"], egn_core::ip::sha256_hex(&z.built.index));
    let tiles: Vec<(usize, &Vec<u8>)> = z
        .built
        .tiles
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
        .collect();
    assert_eq!(files.len(), 1 + tiles.len());
    for (f, (id, bytes)) in files[1..].iter().zip(tiles) {
        assert_eq!(f["path"], format!("tz/{}", format::tile_file_name(id)));
        assert_eq!(f["sha256"], egn_core::ip::sha256_hex(bytes), "tile {id}");
    }

    // A name byte that is no IANA character, with the checksum recomputed so only the name
    // check can catch it; and a names length past the end.
    let mut bad = z.built.index.clone();
    let names_len = u32::from_le_bytes(bad[40..44].try_into().unwrap()) as usize;
    let at = bad.len() - names_len;
    bad[at] = b' ';
    let crc = crc32fast::hash(&bad[format::INDEX_HEADER..]);
    bad[32..36].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(
        CountryIndex::from_bytes(bad).err(),
        Some(LoadError::Corrupt("zone name out of bounds or not ASCII"))
    );
    let mut long = z.built.index.clone();
    long[40..44].copy_from_slice(&(names_len as u32 + 1).to_le_bytes());
    assert_eq!(
        CountryIndex::from_bytes(long).err(),
        Some(LoadError::Truncated)
    );
}
