//! The console's world outline against the full geometry: reproducible (the committed manifest
//! pins it), every feature kept, the builder's error bound checked by a separate measurement,
//! and a point painted on the map in the country the worker answers, except within that bound
//! of a border.

mod common;

use common::world;
use egn_tools::geo::outline::{self, OutlineFeature, EPSILON_DEG, UNITS_PER_DEGREE};
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::HashMap;

fn seg_dist(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 == 0.0 {
        0.0
    } else {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    };
    (p[0] - a[0] - t * dx).hypot(p[1] - a[1] - t * dy)
}

/// Distance from `p` to the nearest edge (or lone vertex) of a decoded feature.
fn dist_to(f: &OutlineFeature, p: [f64; 2]) -> f64 {
    let mut best = f64::INFINITY;
    for r in &f.rings {
        if r.len() == 1 {
            best = best.min(seg_dist(p, r[0], r[0]));
        }
        for w in r.windows(2) {
            best = best.min(seg_dist(p, w[0], w[1]));
        }
    }
    best
}

/// Even-odd over all of a feature's rings, as the console fills them.
fn inside(f: &OutlineFeature, p: [f64; 2]) -> bool {
    let mut odd = false;
    for r in &f.rings {
        for w in r.windows(2) {
            let (a, b) = (w[0], w[1]);
            if (a[1] > p[1]) != (b[1] > p[1])
                && p[0] < a[0] + (p[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0])
            {
                odd = !odd;
            }
        }
    }
    odd
}

#[test]
fn outline_is_reproducible_complete_and_within_its_reported_error() {
    let w = world();
    let (bytes, stats) = outline::build(&w.features, EPSILON_DEG, UNITS_PER_DEGREE);
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/manifest.json")).unwrap(),
    )
    .unwrap();
    let hex = egn_core::ip::sha256_hex(&bytes);
    assert_eq!(manifest["outline"]["file"]["sha256"], hex.as_str());
    assert_eq!(manifest["outline"]["stats"]["bytes"], bytes.len());

    let decoded = outline::decode(&bytes).expect("decodes");
    assert_eq!(decoded.len(), w.features.len());
    let rings: usize = w
        .features
        .iter()
        .map(|f| f.parts.iter().map(Vec::len).sum::<usize>())
        .sum();
    assert_eq!(stats.rings, rings, "every ring is kept");
    let by_a3: HashMap<&str, &OutlineFeature> =
        decoded.iter().map(|f| (f.alpha3.as_str(), f)).collect();

    // The bound is what RDP promises plus half a quantisation cell's diagonal.
    let q = std::f64::consts::SQRT_2 / 2.0 / f64::from(UNITS_PER_DEGREE);
    assert!(
        stats.hausdorff_deg_max <= EPSILON_DEG + q + 1e-9,
        "{stats:?}"
    );
    // A separate measurement of one direction: sampled source vertices, nearest outline edge of
    // their own feature (not the edge RDP replaced them by), stay within the reported bound.
    let mut measured: f64 = 0.0;
    let mut n = 0;
    for f in &w.features {
        let o = by_a3[f.alpha3.as_str()];
        assert_eq!(o.alpha2, f.alpha2);
        for v in f.parts.iter().flatten().flatten().step_by(53) {
            measured = measured.max(dist_to(o, *v));
            n += 1;
        }
    }
    assert!(n > 30_000);
    eprintln!("{n} sampled source vertices: farthest {measured:.4}° from the outline; reported bound {:.4}°", stats.hausdorff_deg_max);
    assert!(
        measured <= stats.hausdorff_deg_max + 1e-9,
        "measured {measured} > reported {}",
        stats.hausdorff_deg_max
    );
    assert!(
        measured > EPSILON_DEG / 2.0,
        "a simplification this coarse must show some error: {measured}"
    );
}

#[test]
fn the_map_paints_points_in_the_country_the_worker_answers_except_near_borders() {
    let w = world();
    let (bytes, stats) = outline::build(&w.features, EPSILON_DEG, UNITS_PER_DEGREE);
    let decoded = outline::decode(&bytes).unwrap();
    let boxes: Vec<[f64; 4]> = decoded
        .iter()
        .map(|f| {
            f.rings
                .iter()
                .flatten()
                .fold([180.0_f64, 90.0, -180.0, -90.0], |b, p| {
                    [
                        b[0].min(p[0]),
                        b[1].min(p[1]),
                        b[2].max(p[0]),
                        b[3].max(p[1]),
                    ]
                })
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(11);
    let (mut agree, mut total) = (0, 0);
    for _ in 0..20_000 {
        let p = [rng.gen_range(-180.0..180.0), rng.gen_range(-90.0..90.0)];
        // Painted largest first, so the last feature containing the point is what one sees.
        let painted = (0..decoded.len()).rev().find(|&i| {
            let b = boxes[i];
            p[0] >= b[0] && p[0] <= b[2] && p[1] >= b[1] && p[1] <= b[3] && inside(&decoded[i], p)
        });
        let answer = w
            .lookup(p[1], p[0])
            .and_then(|id| w.index.country(id))
            .map(|c| c.alpha2.to_string());
        total += 1;
        let painted_a2 = painted.map(|i| decoded[i].alpha2.clone());
        if painted_a2 == answer {
            agree += 1;
            continue;
        }
        // A disagreement lies between a true border and its simplification.
        let near = [painted_a2, answer]
            .iter()
            .flatten()
            .flat_map(|a2| decoded.iter().filter(move |f| &f.alpha2 == a2))
            .map(|f| dist_to(f, p))
            .fold(f64::INFINITY, f64::min);
        assert!(
            near <= stats.hausdorff_deg_max + 1e-9,
            "{p:?}: painted and answered differ {near}° from any border"
        );
    }
    eprintln!("{agree}/{total} uniform points painted in the country the index answers");
    assert!(agree * 1000 >= total * 995, "{agree}/{total} agree");
}
