//! Coordinates → country, native: our tiled index vs the `country-boundaries` crate and `geo`'s
//! interval-tree point-in-polygon (the oracle), same points, same process.
//!
//! `cargo bench --bench ctc [-- near_border]` (assets must be built: `bash
//! scripts/build-assets.sh`). Point sets: `ctc_points.rs`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use egn_tools::geo::{build::Layer, oracle::Oracle, CountryIndex, GridPoint, LatLon, Tile};

#[path = "ctc_points.rs"]
mod ctc_points;
use ctc_points::N;

/// Points per `lookup_batch` call in the batched group.
const BATCH: usize = 256;

struct Fixture {
    index: CountryIndex<Vec<u8>>,
    tiles: Vec<Option<Tile<Vec<u8>>>>,
    oracle: Oracle,
    cb: country_boundaries::CountryBoundaries,
    sets: Vec<(&'static str, Vec<(f64, f64)>)>,
    index_bytes: Vec<u8>,
}

fn fixture() -> Fixture {
    let root = ctc_points::repo_root();
    let geo = root.join("assets/geo");
    let index_bytes = std::fs::read(geo.join("index.bin")).expect("assets built");
    let index = CountryIndex::from_bytes(index_bytes.clone()).expect("index");
    let tiles = (0..egn_tools::geo::format::N_TILES)
        .map(|t| {
            let name = egn_tools::geo::format::tile_file_name(t);
            std::fs::read(geo.join(name))
                .ok()
                .map(|b| index.open_tile(t, b).expect("tile"))
        })
        .collect();
    let cb = country_boundaries::CountryBoundaries::from_reader(
        country_boundaries::BOUNDARIES_ODBL_360X180,
    )
    .expect("country-boundaries data");
    Fixture {
        index,
        tiles,
        oracle: Oracle::new(&ctc_points::features(), Layer::Countries.overlap_rule()),
        cb,
        sets: ctc_points::all_sets(),
        index_bytes,
    }
}

fn bench(c: &mut Criterion) {
    let f = fixture();
    for (name, pts) in &f.sets {
        let n = pts.len().min(N);
        let pts = &pts[..n];
        let grid: Vec<GridPoint> = pts
            .iter()
            .map(|&(la, lo)| LatLon::new(la, lo).unwrap().into())
            .collect();
        let cbp: Vec<country_boundaries::LatLon> = pts
            .iter()
            .map(|&(la, lo)| country_boundaries::LatLon::new(la, lo).unwrap())
            .collect();
        let mut g = c.benchmark_group(*name);
        let mut i = 0;
        g.bench_function("ours_tiled_quadtree", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                black_box(f.index.lookup_with(grid[i], |t| f.tiles[t].as_ref()))
            })
        });
        g.bench_function("ours_from_latlon", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                let p = GridPoint::from(LatLon::new(pts[i].0, pts[i].1).unwrap());
                black_box(f.index.lookup_with(p, |t| f.tiles[t].as_ref()))
            })
        });
        g.bench_function("country_boundaries_crate", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                black_box(f.cb.ids(cbp[i]))
            })
        });
        g.bench_function("geo_interval_tree_oracle", |b| {
            b.iter(|| {
                i = (i + 1) % n;
                black_box(f.oracle.lookup(pts[i].0, pts[i].1))
            })
        });
        g.finish();
        // The batch API: 256 points per call, reported per point (criterion's time / 256).
        let mut g = c.benchmark_group(format!("{name}_batched"));
        g.throughput(Throughput::Elements(BATCH as u64));
        let mut out = vec![Ok(None); BATCH];
        let mut j = 0;
        g.bench_function("ours_lookup_batch", |b| {
            b.iter(|| {
                j = (j + BATCH) % (n - BATCH);
                f.index
                    .lookup_batch(&grid[j..j + BATCH], |t| f.tiles[t].as_ref(), &mut out);
                black_box(&out);
            })
        });
        g.finish();
    }
    let mut g = c.benchmark_group("cold_open");
    g.bench_function("index_from_bytes", |b| {
        b.iter(|| black_box(CountryIndex::from_bytes(f.index_bytes.as_slice()).is_ok()))
    });
    let (largest, bytes) = (0..f.tiles.len())
        .filter_map(|t| {
            let name = egn_tools::geo::format::tile_file_name(t);
            std::fs::read(ctc_points::repo_root().join("assets/geo").join(name))
                .ok()
                .map(|b| (t, b))
        })
        .max_by_key(|(_, b)| b.len())
        .expect("tiles");
    eprintln!("largest tile {largest}: {} bytes", bytes.len());
    g.bench_function("largest_tile_open", |b| {
        b.iter(|| black_box(f.index.open_tile(largest, bytes.as_slice()).is_ok()))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
