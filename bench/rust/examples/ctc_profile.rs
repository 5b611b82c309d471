//! Profiling driver for the coordinates → country lookup (callgrind, cachegrind).
//!
//! `cargo run --release -p edge-geo-notify-benches --example ctc_profile -- gen DIR` writes the point sets once (parsing the
//! GeoJSON is too slow under valgrind); `... -- run DIR SET IMPL` then looks up every point of a
//! set, where IMPL is `ours`, `ours_latlon`, `ours_batch` (256 points per call) or `cb` (the `country-boundaries` crate).

use egn_core::geo::{format, CountryIndex, GridPoint, LatLon, Tile};
use std::hint::black_box;
use std::path::Path;

#[path = "../benches/ctc_points.rs"]
mod ctc_points;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(&args[2]);
    if args[1] == "gen" {
        std::fs::create_dir_all(dir).expect("mkdir");
        for (name, pts) in ctc_points::all_sets() {
            let bytes: Vec<u8> = pts
                .iter()
                .flat_map(|&(a, b)| [a.to_le_bytes(), b.to_le_bytes()])
                .flatten()
                .collect();
            std::fs::write(dir.join(format!("{name}.bin")), bytes).expect("write");
        }
        return;
    }
    let raw = std::fs::read(dir.join(format!("{}.bin", args[3]))).expect("points");
    let pts: Vec<(f64, f64)> = raw
        .chunks_exact(16)
        .map(|c| {
            (
                f64::from_le_bytes(c[..8].try_into().unwrap()),
                f64::from_le_bytes(c[8..].try_into().unwrap()),
            )
        })
        .collect();
    let root = ctc_points::repo_root().join("assets/geo");
    let index = CountryIndex::from_bytes(std::fs::read(root.join("index.bin")).unwrap()).unwrap();
    let tiles: Vec<Option<Tile<Vec<u8>>>> = (0..format::N_TILES)
        .map(|t| {
            std::fs::read(root.join(format::tile_file_name(t)))
                .ok()
                .map(|b| index.open_tile(t, b).unwrap())
        })
        .collect();
    let reps: usize = args.get(5).map_or(1, |s| s.parse().unwrap());
    let t = std::time::Instant::now();
    let sum = match args[4].as_str() {
        "ours" => {
            let g: Vec<GridPoint> = pts
                .iter()
                .map(|&(a, b)| LatLon::new(a, b).unwrap().into())
                .collect();
            run_ours(&index, &tiles, &g, reps)
        }
        "ours_latlon" => run_latlon(&index, &tiles, &pts, reps),
        "ours_batch" => {
            let g: Vec<GridPoint> = pts
                .iter()
                .map(|&(a, b)| LatLon::new(a, b).unwrap().into())
                .collect();
            run_batch(&index, &tiles, &g, reps)
        }
        "shape" => {
            shape(&root, &pts);
            0
        }
        _ => {
            let cb = country_boundaries::CountryBoundaries::from_reader(
                country_boundaries::BOUNDARIES_ODBL_360X180,
            )
            .unwrap();
            let p: Vec<_> = pts
                .iter()
                .map(|&(a, b)| country_boundaries::LatLon::new(a, b).unwrap())
                .collect();
            run_cb(&cb, &p, reps)
        }
    };
    let ns = t.elapsed().as_nanos() as f64 / (pts.len() * reps) as f64;
    eprintln!(
        "{} {} {ns:.1} ns/lookup (incl. setup) {sum}",
        args[3], args[4]
    );
}

#[inline(never)]
fn run_ours(
    index: &CountryIndex<Vec<u8>>,
    tiles: &[Option<Tile<Vec<u8>>>],
    g: &[GridPoint],
    reps: usize,
) -> usize {
    let mut s = 0;
    for _ in 0..reps {
        for &p in g {
            s += black_box(index.lookup_with(p, |t| tiles[t].as_ref()))
                .map_or(0, |c| c.map_or(1, |v| v as usize));
        }
    }
    s
}

#[inline(never)]
fn run_batch(
    index: &CountryIndex<Vec<u8>>,
    tiles: &[Option<Tile<Vec<u8>>>],
    g: &[GridPoint],
    reps: usize,
) -> usize {
    let mut s = 0;
    let mut out = vec![Ok(None); 256];
    for _ in 0..reps {
        for chunk in g.chunks(256) {
            let out = &mut out[..chunk.len()];
            index.lookup_batch(chunk, |t| tiles[t].as_ref(), out);
            s += out
                .iter()
                .map(|r| r.map_or(0, |c| c.map_or(1, |v| v as usize)))
                .sum::<usize>();
        }
    }
    s
}

#[inline(never)]
fn run_latlon(
    index: &CountryIndex<Vec<u8>>,
    tiles: &[Option<Tile<Vec<u8>>>],
    pts: &[(f64, f64)],
    reps: usize,
) -> usize {
    let mut s = 0;
    for _ in 0..reps {
        for &(a, b) in pts {
            let p = GridPoint::from(LatLon::new(a, b).unwrap());
            s += black_box(index.lookup_with(p, |t| tiles[t].as_ref()))
                .map_or(0, |c| c.map_or(1, |v| v as usize));
        }
    }
    s
}

#[inline(never)]
fn run_cb(
    cb: &country_boundaries::CountryBoundaries,
    p: &[country_boundaries::LatLon],
    reps: usize,
) -> usize {
    let mut s = 0;
    for _ in 0..reps {
        for &q in p {
            s += black_box(cb.ids(q)).len();
        }
    }
    s
}

/// Prints what a lookup walks through on average: quadtree steps, leaf candidates, chains and
/// vertices scanned (read from the raw layout in `format`, independent of the reader).
fn shape(root: &Path, pts: &[(f64, f64)]) {
    use format::*;
    let index = std::fs::read(root.join("index.bin")).unwrap();
    let tiles: Vec<Vec<u8>> = (0..N_TILES)
        .map(|t| std::fs::read(root.join(tile_file_name(t))).unwrap_or_default())
        .collect();
    let n_countries = u32_le(&index, 12) as usize;
    let grid_off = INDEX_HEADER + n_countries * 8 + N_TILES * 8;
    let (mut tiled, mut steps, mut leaves, mut cands, mut chains, mut verts) = (0, 0, 0, 0, 0, 0);
    let mut depth_hist = [0usize; 16];
    for &(lat, lon) in pts {
        let p = GridPoint::from(LatLon::new(lat, lon).unwrap());
        let (col, row) = ((p.x >> TOP_SHIFT) as usize, (p.y >> TOP_SHIFT) as usize);
        let g = u32_le(&index, grid_off + (row * GRID_COLS + col) * 4);
        if g & GRID_POINTER == 0 {
            continue;
        }
        tiled += 1;
        let t = &tiles[tile_of(col, row)];
        let n_nodes = u32_le(t, 16) as usize;
        let node = |i: usize| u32_le(t, TILE_HEADER + i * 4);
        let mut v = node((g & !GRID_POINTER) as usize);
        let mut shift = TOP_SHIFT;
        let mut d = 0;
        while v >> 30 == NODE_INTERNAL {
            let k = 1 + (v & NODE_WIDE != 0) as u32;
            shift -= k;
            let m = (1 << k) - 1;
            let q = ((((p.y >> shift) & m) << k) | ((p.x >> shift) & m)) as usize;
            v = node((v & NODE_CHILD) as usize + q);
            d += 1;
        }
        steps += d;
        depth_hist[d.min(15)] += 1;
        if v >> 30 != NODE_LEAF {
            continue;
        }
        leaves += 1;
        let lb = &t[TILE_HEADER + n_nodes * 4..];
        let mut off = (v & NODE_PAYLOAD) as usize;
        let n = u16_le(lb, off + 2);
        let width = 2 * (4 - (n >> LEAF_WIDTH_SHIFT) as usize);
        off += 4;
        for _ in 0..(n & LEAF_COUNT_MASK) {
            cands += 1;
            let c = u16_le(lb, off + 4);
            off += 6;
            for _ in 0..c {
                let len = u16_le(lb, off) as usize;
                chains += 1;
                verts += len;
                off += 2 + len * width;
            }
        }
    }
    let f = |a: usize, b: usize| a as f64 / b.max(1) as f64;
    eprintln!(
        "points {} in tiles {:.1}%; per tiled point: steps {:.2}; per leaf point: candidates {:.2}, chains {:.2}, vertices {:.1} (leaf hit {:.1}%); depth histogram {:?}",
        pts.len(),
        100.0 * f(tiled, pts.len()),
        f(steps, tiled),
        f(cands, leaves),
        f(chains, leaves),
        f(verts, leaves),
        100.0 * f(leaves, tiled),
        depth_hist
    );
}

fn u32_le(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}

fn u16_le(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
