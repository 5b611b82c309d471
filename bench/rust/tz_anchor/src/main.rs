//! tzf-rs 2.3 on our point sets: load time and median ns per lookup of `DefaultFinder` (the
//! preindexed finder the crate recommends) and `EmbeddedFinder` (reads its data in place), our
//! one walk of `assets/tz` timed in the same rounds (each contender's batches right after an
//! untimed pass of its own, as `tz_report` does), and agreement with our zones on the cities.
//! Prints markdown rows.
//!
//! `tz-anchor OUT_DIR` (the directory `tz_report` wrote: `points/*.bin`, `points/cities.tz.ours.txt`)

use egn_core::geo::{GridPoint, LatLon};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

const BATCH: usize = 1000;
const SETS: [&str; 5] = [
    "uniform",
    "near_border_maritime",
    "near_border_land",
    "cities",
    "near_zone_border",
];

fn points(dir: &Path, set: &str) -> Vec<(f64, f64)> {
    let b =
        std::fs::read(dir.join("points").join(format!("{set}.bin"))).expect("run tz_report first");
    b.chunks_exact(16)
        .map(|c| {
            let lat = f64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
            let lon = f64::from_le_bytes(c[8..].try_into().expect("8 bytes"));
            (lat, lon)
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[path = "../../benches/layer.rs"]
mod layer;

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("OUT_DIR"));
    let s = Instant::now();
    let default = tzf_rs::DefaultFinder::new();
    let default_load = s.elapsed();
    let s = Instant::now();
    let embedded = tzf_rs::EmbeddedFinder::new();
    let embedded_load = s.elapsed();
    println!(
        "tzf-rs 2.3.0 (data {}): `DefaultFinder` loads in {:.1} ms, `EmbeddedFinder` in {:.1} ms.",
        default.data_version(),
        default_load.as_secs_f64() * 1e3,
        embedded_load.as_secs_f64() * 1e3
    );
    let (index, tiles) =
        layer::open_layer(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../assets/tz"));
    let pair = |p: GridPoint| index.lookup_pair_with(p, |t| tiles[t].as_ref()).ok();
    println!();
    println!("| point set | tzf-rs `DefaultFinder` | tzf-rs `EmbeddedFinder` | ours, country + zone (one walk), same rounds | `DefaultFinder` ÷ ours |");
    println!("|---|---|---|---|---|");
    let mut json = String::from("{");
    for (si, set) in SETS.iter().enumerate() {
        let pts = points(&dir, set);
        let grid: Vec<GridPoint> = pts
            .iter()
            .map(|&(lat, lon)| LatLon::new(lat, lon).expect("valid").into())
            .collect();
        let mut t: [Vec<f64>; 3] = Default::default();
        // Three rounds; in each, every contender makes an untimed pass, then a timed one.
        for _round in 0..3 {
            for (k, times) in t.iter_mut().enumerate() {
                for keep in [false, true] {
                    for (c, g) in pts.chunks(BATCH).zip(grid.chunks(BATCH)) {
                        let s = Instant::now();
                        match k {
                            0 => c.iter().for_each(|&(lat, lon)| {
                                black_box(default.get_tz_name(lon, lat));
                            }),
                            1 => c.iter().for_each(|&(lat, lon)| {
                                black_box(embedded.get_tz_name(lon, lat));
                            }),
                            _ => g.iter().for_each(|&p| {
                                black_box(pair(p));
                            }),
                        }
                        if keep {
                            times.push(s.elapsed().as_nanos() as f64 / c.len() as f64);
                        }
                    }
                }
            }
        }
        let (d, e, o) = (median(&mut t[0]), median(&mut t[1]), median(&mut t[2]));
        println!(
            "| {set} | {d:.0} ns | {e:.0} ns | {o:.0} ns | **{:.1}×** |",
            d / o
        );
        json += &format!(
            "{}\"{set}\":{{\"tzf_default\":{d:.1},\"tzf_embedded\":{e:.1},\"ours\":{o:.1}}}",
            if si > 0 { "," } else { "" }
        );
        if *set == "cities" {
            let ours =
                std::fs::read_to_string(dir.join("points/cities.tz.ours.txt")).expect("ours");
            let ours: Vec<&str> = ours.lines().collect();
            let answers: Vec<&str> = pts
                .iter()
                .map(|&(lat, lon)| default.get_tz_name(lon, lat))
                .collect();
            let same = answers.iter().zip(&ours).filter(|(a, b)| a == b).count();
            let lines: Vec<String> = answers.iter().map(|a| a.to_string()).collect();
            std::fs::write(
                dir.join("points/cities.tz.tzf.txt"),
                lines.join("\n") + "\n",
            )
            .expect("write");
            json += &format!(",\"cities_agree\":{same},\"cities_n\":{}", pts.len());
        }
    }
    json += "}";
    std::fs::write(dir.join("tz_tzf.json"), json).expect("write");
}
