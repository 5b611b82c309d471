//! Coordinates → country and time zone, native, for `BENCHMARKS.md` (`bash bench/report.sh 25`):
//! ns per lookup on the point sets of `ctc_report` plus one near zone borders, country only
//! against country + zone in the two designs issue 44 asked to compare: one walk of the
//! combined layer (`assets/tz`, what the worker ships) and two walks (the country layer, then a
//! zone layer of its own, built here in memory by the same builder), one point at a time and
//! batched, contenders interleaved batch by batch. Writes the point sets
//! and our cities' zones to the directory given, for the tzf-rs anchor (`bench/rust/tz_anchor`)
//! and the Node peers (`bench/probes/tz_peers.mjs`).
//!
//! `cargo run --release -p edge-geo-notify-benches --example tz_report -- OUT_DIR`

use egn_tools::geo::{build, zones, CountryIndex, GridPoint, LatLon, ZoneIndex};
use std::hint::black_box;
use std::time::Instant;

#[path = "../benches/ctc_points.rs"]
mod ctc_points;
use ctc_points::{open_layer as open, Layer};

const BATCH: usize = 1000;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A layer from built bytes.
fn from_built(b: &build::Built) -> Layer {
    let index = CountryIndex::from_bytes(b.index.clone()).expect("index");
    let tiles = b
        .tiles
        .iter()
        .enumerate()
        .map(|(t, bytes)| bytes.clone().map(|b| index.open_tile(t, b).expect("tile")))
        .collect();
    (index, tiles)
}

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("OUT_DIR"));
    std::fs::create_dir_all(out.join("points")).expect("mkdir");
    let root = ctc_points::repo_root();
    let (countries, ctiles) = open(&root.join("assets/geo"));
    let (pairs, ptiles): (ZoneIndex<Vec<u8>>, _) = open(&root.join("assets/tz"));
    let nm = root.join("node_modules/geo-tz");
    let (zone_features, _) = zones::load(&nm).expect("geo-tz (npm ci)");
    let zone_only = build::build_layer(&zone_features, build::Layer::Zones);
    let zone_only_bytes = zone_only.index.len()
        + zone_only
            .tiles
            .iter()
            .flatten()
            .map(Vec::len)
            .sum::<usize>();
    let (zones_index, ztiles) = from_built(&zone_only);
    drop(zone_only);
    let country = |p: GridPoint| {
        countries
            .lookup_with(p, |t| ctiles[t].as_ref())
            .ok()
            .flatten()
    };
    let zone = |p: GridPoint| {
        zones_index
            .lookup_with(p, |t| ztiles[t].as_ref())
            .ok()
            .flatten()
    };
    let pair = |p: GridPoint| pairs.lookup_pair_with(p, |t| ptiles[t].as_ref()).ok();
    // The two designs answer alike (both are checked against the oracles in tests/); counted
    // and reported rather than assumed.
    let uniform = ctc_points::uniform(7);
    let differ = uniform
        .iter()
        .map(|&(a, b)| GridPoint::from(LatLon::new(a, b).expect("valid")))
        .filter(|&p| pair(p) != Some((country(p), zone(p))))
        .count();

    let mut sets = ctc_points::all_sets();
    sets.push(("near_zone_border", ctc_points::near_zone_borders()));
    let names = [
        "country",
        "country_zone",
        "country_zone_two_walks",
        "country_batch",
        "country_zone_batch",
        "country_zone_two_walks_batch",
    ];
    let mut json = String::from("{");
    // Caches swept before every batch: what a request finds on a server whose other work has
    // evicted the layers (each lookup pays for the lines it touches, not for what a set's
    // repetition kept cached). Printed after the main table.
    let mut sweep = vec![0u8; 64 << 20];
    let mut cold_rows = String::new();
    println!("| point set (points) | country only | country + zone, one walk | ratio | two walks | ratio | batched: country only | one walk | ratio | two walks | ratio |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for (si, (set, pts)) in sets.iter().enumerate() {
        let bytes: Vec<u8> = pts
            .iter()
            .flat_map(|&(a, b)| [a.to_le_bytes(), b.to_le_bytes()])
            .flatten()
            .collect();
        std::fs::write(out.join("points").join(format!("{set}.bin")), bytes).expect("write");
        let grid: Vec<GridPoint> = pts
            .iter()
            .map(|&(a, b)| LatLon::new(a, b).expect("valid").into())
            .collect();
        let batches: Vec<std::ops::Range<usize>> = (0..pts.len())
            .step_by(BATCH)
            .map(|s| s..(s + BATCH).min(pts.len()))
            .collect();
        let mut t: [Vec<f64>; 6] = Default::default();
        let (mut a1, mut a2) = (vec![Ok(None); BATCH], vec![Ok(None); BATCH]);
        let mut ap = vec![Ok((None, None)); BATCH];
        // Every timed pass follows an untimed pass of the same contender over the whole set, so
        // each is measured with its own data as warm as serving that traffic leaves it. (Timing
        // right after the other contenders measured how much of its data they had left cached:
        // the two-walks contenders read the country layer too, which kept it warm for country
        // only and not the combined layer for one walk.) Three rounds of that per contender.
        let n = t.len();
        let passes = (0..3 * n).flat_map(|i| [(i % n, false), (i % n, true)]);
        for (k, keep) in passes {
            for r in &batches {
                let s = Instant::now();
                let g = &grid[r.clone()];
                match k {
                    0 => g.iter().for_each(|&p| {
                        black_box(country(p));
                    }),
                    1 => g.iter().for_each(|&p| {
                        black_box(pair(p));
                    }),
                    2 => g.iter().for_each(|&p| {
                        black_box((country(p), zone(p)));
                    }),
                    3 => {
                        countries.lookup_batch(g, |t| ctiles[t].as_ref(), &mut a1[..g.len()]);
                        black_box(&a1);
                    }
                    4 => {
                        pairs.lookup_pair_batch(g, |t| ptiles[t].as_ref(), &mut ap[..g.len()]);
                        black_box(&ap);
                    }
                    _ => {
                        countries.lookup_batch(g, |t| ctiles[t].as_ref(), &mut a1[..g.len()]);
                        zones_index.lookup_batch(g, |t| ztiles[t].as_ref(), &mut a2[..g.len()]);
                        black_box((&a1, &a2));
                    }
                }
                if keep {
                    t[k].push(s.elapsed().as_nanos() as f64 / g.len() as f64);
                }
            }
        }
        let med: Vec<f64> = t.iter().map(|v| median(&mut v.clone())).collect();
        println!(
            "| {set} ({}) | {:.0} ns | **{:.0} ns** | **{:.2}×** | {:.0} ns | {:.2}× | {:.0} ns | {:.0} ns | {:.2}× | {:.0} ns | {:.2}× |",
            pts.len(),
            med[0],
            med[1],
            med[1] / med[0],
            med[2],
            med[2] / med[0],
            med[3],
            med[4],
            med[4] / med[3],
            med[5],
            med[5] / med[3]
        );
        let mut cold: [Vec<f64>; 2] = Default::default();
        for _round in 0..3 {
            for (k, times) in cold.iter_mut().enumerate() {
                for r in &batches {
                    // One write per 64-byte line of a buffer twice the last-level cache.
                    for line in sweep.chunks_mut(64) {
                        line[0] = line[0].wrapping_add(1);
                    }
                    black_box(&sweep);
                    let g = &grid[r.clone()];
                    let s = Instant::now();
                    if k == 0 {
                        g.iter().for_each(|&p| {
                            black_box(country(p));
                        });
                    } else {
                        g.iter().for_each(|&p| {
                            black_box(pair(p));
                        });
                    }
                    times.push(s.elapsed().as_nanos() as f64 / g.len() as f64);
                }
            }
        }
        let (cc, cp) = (median(&mut cold[0]), median(&mut cold[1]));
        cold_rows += &format!(
            "| {set} | {cc:.0} ns | **{cp:.0} ns** | **{:.2}×** |\n",
            cp / cc
        );
        json += &format!(
            "{}\"{set}\":{{\"cold_country\":{cc:.1},\"cold_country_zone\":{cp:.1},",
            if si > 0 { "," } else { "" }
        );
        for (k, name) in names.iter().enumerate() {
            json += &format!("{}\"{name}\":{:.1}", if k > 0 { "," } else { "" }, med[k]);
        }
        json += "}";
        if *set == "cities" {
            let lines: Vec<&str> = grid
                .iter()
                .map(|&g| {
                    let zone = pair(g).and_then(|p| p.1);
                    zone.and_then(|z| pairs.zone(z)).unwrap_or("-")
                })
                .collect();
            std::fs::write(
                out.join("points/cities.tz.ours.txt"),
                lines.join("\n") + "\n",
            )
            .expect("write");
        }
    }
    json += "}";
    std::fs::write(out.join("tz_native.json"), json).expect("write");
    let tile_bytes = |dir: &str| -> u64 {
        std::fs::read_dir(root.join(dir))
            .expect("assets")
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    };
    println!();
    println!("Caches swept (a 64 MB buffer written line by line) before every batch of 1 000 points, 3 rounds, median: each lookup pays for the lines it touches, as a request does on a server whose other work evicted the layers:");
    println!();
    println!("| point set | country only, cold | country + zone (one walk), cold | ratio |");
    println!("|---|---|---|---|");
    print!("{cold_rows}");
    println!();
    println!(
        "Index bytes: country layer {} (embedded `index.bin` {}), combined country + zone layer {} (embedded `index.bin` {}), all tiles included; a zone layer of its own (two walks, not shipped) would be {zone_only_bytes}.",
        tile_bytes("assets/geo"),
        std::fs::metadata(root.join("assets/geo/index.bin")).map_or(0, |m| m.len()),
        tile_bytes("assets/tz"),
        std::fs::metadata(root.join("assets/tz/index.bin")).map_or(0, |m| m.len()),
    );
    println!();
    println!(
        "One walk and two walks answer the same (country, zone) on {} of {} uniform points.",
        uniform.len() - differ,
        uniform.len()
    );
}
