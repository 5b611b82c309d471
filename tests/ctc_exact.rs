//! Exactness of the built index against the oracle (plain point-in-polygon on the source with
//! the same overlap rule), plus named places. Disagreements are allowed only within 1e-7° of an
//! edge of one of the two answers, the resolution of the source data.

mod common;

use common::{oracle, world};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const TOLERANCE_DEG: f64 = 1e-7;

fn check(points: &[(f64, f64)]) -> (usize, usize) {
    let (w, o) = (world(), oracle());
    let chunks: Vec<&[(f64, f64)]> = points.chunks(points.len().div_ceil(2)).collect();
    let results: Vec<(usize, usize, Vec<String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                s.spawn(move || {
                    let (mut near_edge, mut agree, mut bad) = (0, 0, Vec::new());
                    for &(lat, lon) in *chunk {
                        let (got, want) = (w.lookup(lat, lon), o.lookup(lat, lon));
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
                                "({lat}, {lon}): index {:?} oracle {:?}, {d:.2e}° from an edge",
                                w.alpha2(got),
                                w.alpha2(want)
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
fn agrees_with_oracle_on_a_million_uniform_points() {
    let mut rng = SmallRng::seed_from_u64(20261130);
    let pts: Vec<(f64, f64)> = (0..1_000_000)
        .map(|_| (rng.gen_range(-90.0..90.0), rng.gen_range(-180.0..180.0)))
        .collect();
    let (agree, near) = check(&pts);
    eprintln!("uniform: {agree} agree, {near} differ within {TOLERANCE_DEG}° of an edge");
    assert_eq!(agree + near, pts.len());
}

#[test]
fn agrees_with_oracle_near_edges() {
    let w = world();
    let edges: Vec<([f64; 2], [f64; 2])> = w
        .features
        .iter()
        .flat_map(|f| f.parts.iter().flatten())
        .flat_map(|r| r.windows(2).map(|e| (e[0], e[1])))
        .collect();
    let mut rng = SmallRng::seed_from_u64(7);
    let pts: Vec<(f64, f64)> = (0..200_000)
        .map(|_| {
            let (a, b) = edges[rng.gen_range(0..edges.len())];
            let t: f64 = rng.gen();
            let lon = a[0] + t * (b[0] - a[0]) + rng.gen_range(-0.01..0.01);
            let lat = a[1] + t * (b[1] - a[1]) + rng.gen_range(-0.01..0.01);
            (lat.clamp(-90.0, 90.0), lon.clamp(-180.0, 179.999_999_9))
        })
        .collect();
    let (agree, near) = check(&pts);
    eprintln!("near edges: {agree} agree, {near} differ within {TOLERANCE_DEG}° of an edge");
}

#[test]
fn named_places() {
    let w = world();
    let cases: &[(&str, f64, f64, Option<&str>)] = &[
        ("Büsingen (DE enclave in CH)", 47.6970, 8.6910, Some("DE")),
        ("Vatican City", 41.9030, 12.4533, Some("VA")),
        ("Lesotho interior", -29.5, 28.5, Some("LS")),
        (
            "Baarle-Hertog enclave H1 (BE in NL)",
            51.4362,
            4.92188,
            Some("BE"),
        ),
        ("Baarle-Nassau (NL around it)", 51.4452, 4.9070, Some("NL")),
        ("Monaco", 43.7384, 7.4246, Some("MC")),
        ("Strait of Gibraltar, Spanish side", 36.0, -5.6, Some("ES")),
        (
            "Strait of Gibraltar, Moroccan side",
            35.88,
            -5.6,
            Some("MA"),
        ),
        ("Gulf of Guinea 0/0", 0.0, 0.0, None),
        ("Taveuni, Fiji, west of 180°", -16.85, 179.98, Some("FJ")),
        ("Taveuni, Fiji, east of 180°", -16.85, -179.98, Some("FJ")),
        ("South Pole", -90.0, 0.0, Some("AQ")),
        ("Near the South Pole", -89.5, 123.0, Some("AQ")),
        ("Mid Pacific", 0.0, -150.0, None),
        ("Tahiti (PF over FR)", -17.65, -149.45, Some("PF")),
        ("Svalbard (SJ over NO)", 78.2, 15.6, Some("SJ")),
        ("San Juan (PR over US)", 18.4, -66.1, Some("PR")),
    ];
    let mut wrong = Vec::new();
    for &(name, lat, lon, want) in cases {
        let got = w.alpha2(w.lookup(lat, lon));
        if got != want {
            wrong.push(format!("{name} ({lat}, {lon}): got {got:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
