//! How much of the zone source a simplification at its own precision would drop (issue 44: can
//! the zone layer shrink toward the country layer's size and stay exact?). Douglas–Peucker per
//! ring at tolerances up to the source's 1e-6° grid; exactness is checked to 1e-7°
//! (`tests/tz_exact.rs`), so only what a tolerance ≤ 1e-7° drops could go without changing an
//! answer beyond it. Not a report section.
//!
//! `cargo run --release -p edge-geo-notify-benches --example tz_simplify`

#[path = "../benches/ctc_points.rs"]
mod ctc_points;

fn main() {
    let nm = ctc_points::repo_root().join("node_modules/geo-tz");
    let (features, _) = egn_tools::geo::zones::load(&nm).expect("geo-tz (npm ci)");
    let rings: Vec<&Vec<[f64; 2]>> = features
        .iter()
        .filter(|f| f.area.is_finite()) // the ocean bands are no polygons
        .flat_map(|f| f.parts.iter().flatten())
        .collect();
    let before: usize = rings.iter().map(|r| r.len()).sum();
    println!("land zone vertices: {before}");
    for eps in [1e-8, 1e-7, 5e-7, 1e-6] {
        let after: usize = rings.iter().map(|r| kept(r, eps)).sum();
        println!(
            "Douglas-Peucker at {eps:e} deg keeps {after} ({:.1} %)",
            100.0 * after as f64 / before as f64
        );
    }
}

fn distance(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let l2 = dx * dx + dy * dy;
    let t = if l2 == 0.0 {
        0.0
    } else {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / l2).clamp(0.0, 1.0)
    };
    ((a[0] + t * dx - p[0]).powi(2) + (a[1] + t * dy - p[1]).powi(2)).sqrt()
}

/// Vertices Douglas–Peucker keeps of ring `r` at tolerance `eps` (both ends always).
fn kept(r: &[[f64; 2]], eps: f64) -> usize {
    let mut keep = 2;
    let mut stack = vec![(0, r.len() - 1)];
    while let Some((i, j)) = stack.pop() {
        let Some((k, d)) = (i + 1..j)
            .map(|k| (k, distance(r[k], r[i], r[j])))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            continue;
        };
        if d > eps {
            keep += 1;
            stack.push((i, k));
            stack.push((k, j));
        }
    }
    keep
}
