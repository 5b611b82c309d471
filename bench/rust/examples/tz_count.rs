//! Per-lookup cost of country only against country + zone (one walk of `assets/tz`), counted
//! rather than timed: on a shared machine wall-clock ratios drift with the neighbours' load, an
//! instruction count does not. A profiling driver for issue 44, not a report section.
//!
//! ```text
//! cargo build --release -p edge-geo-notify-benches --example tz_count
//! target/release/examples/tz_count gen DIR          # the five point sets, as f64 (lat, lon)
//! valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*tz_count*pass*' \
//!     target/release/examples/tz_count run DIR SET country|pair|country_batch|pair_batch [N]
//! ```
//! Instructions per lookup = the collected `Ir` / N (default 20 000 points of the set). Only the
//! tiles the points need are opened, so the run under valgrind stays short. `tz_count build DIR`
//! writes the combined layer as the builder now makes it to `DIR/tz` (with `gen`'s points in
//! `DIR` too), and `TZ_DIR=DIR/tz` makes `run` read that layer instead of `assets/tz`: a builder
//! change measured before the assets are rebuilt.

use egn_tools::geo::{format, CountryIndex, GridPoint, LatLon, Probe, Tile};
use std::hint::black_box;
use std::path::Path;

#[path = "../benches/ctc_points.rs"]
mod ctc_points;

type Layer = (CountryIndex<Vec<u8>>, Vec<Option<Tile<Vec<u8>>>>);

/// The layer in `dir` with the tiles `pts` need.
fn open(dir: &Path, pts: &[GridPoint]) -> Layer {
    let index = CountryIndex::from_bytes(std::fs::read(dir.join("index.bin")).expect("assets"))
        .expect("index");
    let mut tiles: Vec<Option<Tile<Vec<u8>>>> = (0..format::N_TILES).map(|_| None).collect();
    for &p in pts {
        if let Probe::NeedTile(t) = index.probe(p) {
            if tiles[t].is_none() {
                let b = std::fs::read(dir.join(format::tile_file_name(t))).expect("tile");
                tiles[t] = Some(index.open_tile(t, b).expect("tile"));
            }
        }
    }
    (index, tiles)
}

fn mix(c: u64, id: Option<u16>) -> u64 {
    c.wrapping_mul(31)
        .wrapping_add(id.map_or(0xFFFF, u64::from))
}

#[inline(never)]
fn country_pass(l: &Layer, pts: &[GridPoint]) -> u64 {
    pts.iter().fold(0, |c, &p| {
        mix(c, l.0.lookup_with(p, |t| l.1[t].as_ref()).ok().flatten())
    })
}

#[inline(never)]
fn pair_pass(l: &Layer, pts: &[GridPoint]) -> u64 {
    pts.iter().fold(0, |c, &p| {
        let (a, b) =
            l.0.lookup_pair_with(p, |t| l.1[t].as_ref())
                .unwrap_or((None, None));
        mix(mix(c, a), b)
    })
}

#[inline(never)]
fn country_batch_pass(l: &Layer, pts: &[GridPoint]) -> u64 {
    let mut out = vec![Ok(None); pts.len()];
    l.0.lookup_batch(pts, |t| l.1[t].as_ref(), &mut out);
    out.iter().fold(0, |c, r| mix(c, r.ok().flatten()))
}

#[inline(never)]
fn pair_batch_pass(l: &Layer, pts: &[GridPoint]) -> u64 {
    let mut out = vec![Ok((None, None)); pts.len()];
    l.0.lookup_pair_batch(pts, |t| l.1[t].as_ref(), &mut out);
    out.iter().fold(0, |c, r| {
        let (a, b) = r.unwrap_or((None, None));
        mix(mix(c, a), b)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(args.get(2).expect("DIR"));
    if args[1] == "build" {
        let nm = ctc_points::repo_root().join("node_modules/geo-tz");
        let (zones, _) = egn_tools::geo::zones::load(&nm).expect("geo-tz (npm ci)");
        let built = egn_tools::geo::build::build_combined(&ctc_points::features(), &zones);
        let tz = dir.join("tz");
        std::fs::create_dir_all(&tz).expect("mkdir");
        std::fs::write(tz.join("index.bin"), &built.index).expect("write");
        let mut total = built.index.len();
        for (t, b) in built.tiles.iter().enumerate() {
            let path = tz.join(format::tile_file_name(t));
            let _ = std::fs::remove_file(&path);
            if let Some(b) = b {
                std::fs::write(path, b).expect("write");
                total += b.len();
            }
        }
        println!("{total} bytes: {:?}", built.stats);
        return;
    }
    if args[1] == "gen" {
        std::fs::create_dir_all(dir).expect("mkdir");
        let mut sets = ctc_points::all_sets();
        sets.push(("near_zone_border", ctc_points::near_zone_borders()));
        for (set, pts) in sets {
            let bytes: Vec<u8> = pts
                .iter()
                .flat_map(|&(a, b)| [a.to_le_bytes(), b.to_le_bytes()])
                .flatten()
                .collect();
            std::fs::write(dir.join(format!("{set}.bin")), bytes).expect("write");
        }
        return;
    }
    let (set, mode) = (&args[3], args[4].as_str());
    let n: usize = args.get(5).map_or(20_000, |v| v.parse().expect("N"));
    let raw = std::fs::read(dir.join(format!("{set}.bin"))).expect("points (gen first)");
    let pts: Vec<GridPoint> = raw
        .chunks_exact(16)
        .take(n)
        .map(|c| {
            let f = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes"));
            LatLon::new(f(&c[..8]), f(&c[8..])).expect("valid").into()
        })
        .collect();
    let root = ctc_points::repo_root();
    if mode == "time" {
        // Wall clock, for a check of the counts' direction: the two passes alternate, 7 rounds,
        // and the least ns per lookup of each is kept (the one least disturbed by neighbours).
        let c = open(&root.join("assets/geo"), &pts);
        let z = match std::env::var_os("TZ_DIR") {
            Some(dir) => open(Path::new(&dir), &pts),
            None => open(&root.join("assets/tz"), &pts),
        };
        let (mut tc, mut tz) = (f64::MAX, f64::MAX);
        for _ in 0..7 {
            let s = std::time::Instant::now();
            black_box(country_pass(&c, &pts));
            tc = tc.min(s.elapsed().as_nanos() as f64 / pts.len() as f64);
            let s = std::time::Instant::now();
            black_box(pair_pass(&z, &pts));
            tz = tz.min(s.elapsed().as_nanos() as f64 / pts.len() as f64);
        }
        println!(
            "{set}: country {tc:.1} ns, pair {tz:.1} ns, ratio {:.2}",
            tz / tc
        );
        return;
    }
    let layer = match mode {
        "country" | "country_batch" => open(&root.join("assets/geo"), &pts),
        _ => match std::env::var_os("TZ_DIR") {
            Some(dir) => open(Path::new(&dir), &pts),
            None => open(&root.join("assets/tz"), &pts),
        },
    };
    let sum = match mode {
        "country" => country_pass(&layer, &pts),
        "pair" => pair_pass(&layer, &pts),
        "country_batch" => country_batch_pass(&layer, &pts),
        "pair_batch" => pair_batch_pass(&layer, &pts),
        _ => panic!("mode: country, pair, country_batch or pair_batch"),
    };
    println!(
        "{set} {mode} {} points, checksum {:x}",
        pts.len(),
        black_box(sum)
    );
}
