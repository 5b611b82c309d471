//! Where the zone layer's time goes, per point set: the share of points each layer answers from
//! the top grid alone, the four classes (country grid/tile × zone grid/tile) and the zone
//! lookup's median ns in each. A profiling driver for issue 44, not a report section.
//!
//! `cargo run --release -p edge-geo-notify-benches --example tz_profile`

use egn_tools::geo::{GridPoint, LatLon, Probe};
use std::hint::black_box;
use std::time::Instant;

#[path = "../benches/ctc_points.rs"]
mod ctc_points;
use ctc_points::{open_layer as open, Layer};

fn main() {
    let root = ctc_points::repo_root();
    let c = open(&root.join("assets/geo"));
    let z = open(&root.join("assets/tz"));
    for (set, pts) in ctc_points::all_sets() {
        let grid: Vec<GridPoint> = pts
            .iter()
            .map(|&(a, b)| LatLon::new(a, b).expect("valid").into())
            .collect();
        let tile = |l: &Layer, p| matches!(l.0.probe(p), Probe::NeedTile(_));
        let mut classes: [Vec<GridPoint>; 4] = Default::default();
        for &p in &grid {
            classes[(tile(&c, p) as usize) << 1 | tile(&z, p) as usize].push(p);
        }
        let time = |pts: &[GridPoint], pair: bool| -> f64 {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let s = Instant::now();
                if pair {
                    for &p in pts {
                        black_box(z.0.lookup_pair_with(p, |t| z.1[t].as_ref()).ok());
                    }
                } else {
                    for &p in pts {
                        black_box(c.0.lookup_with(p, |t| c.1[t].as_ref()).ok());
                    }
                }
                best = best.min(s.elapsed().as_nanos() as f64 / pts.len().max(1) as f64);
            }
            best
        };
        println!(
            "{set} ({} points): country {:.1} ns, country + zone (one walk) {:.1} ns",
            grid.len(),
            time(&grid, false),
            time(&grid, true)
        );
        for (k, name) in [
            "c grid, z grid",
            "c grid, z tile",
            "c tile, z grid",
            "c tile, z tile",
        ]
        .iter()
        .enumerate()
        {
            let share = classes[k].len() as f64 / grid.len() as f64 * 100.0;
            println!(
                "  {name}: {share:5.1}%  country {:6.1} ns  both {:6.1} ns",
                time(&classes[k], false),
                time(&classes[k], true)
            );
        }
    }
}
