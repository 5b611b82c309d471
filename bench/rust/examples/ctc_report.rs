//! Coordinates → country, native, for `BENCHMARKS.md` (`bash bench/report.sh`): ns per
//! lookup on the four point sets for ours (from a grid point, from lat/lon, and batched), the
//! `country-boundaries` crate and the `geo` interval-tree oracle, interleaved batch by batch so
//! machine noise hits every contender alike; each peer's agreement with our answers on the
//! cities. Prints markdown; writes the batch timings (for the chart), the point sets and our
//! cities answers (for the Python and Node peers) to the directory given.
//!
//! `cargo run --release -p edge-geo-notify-benches --example ctc_report -- OUT_DIR`

use egn_tools::geo::{build::Layer, format, oracle::Oracle, CountryIndex, GridPoint, LatLon, Tile};
use std::hint::black_box;
use std::time::Instant;

#[path = "../benches/ctc_points.rs"]
mod ctc_points;

const BATCH: usize = 1000;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("OUT_DIR"));
    std::fs::create_dir_all(out.join("points")).expect("mkdir");
    let geo = ctc_points::repo_root().join("assets/geo");
    let index = CountryIndex::from_bytes(std::fs::read(geo.join("index.bin")).expect("assets"))
        .expect("index");
    let tiles: Vec<Option<Tile<Vec<u8>>>> = (0..format::N_TILES)
        .map(|t| {
            std::fs::read(geo.join(format::tile_file_name(t)))
                .ok()
                .map(|b| index.open_tile(t, b).expect("tile"))
        })
        .collect();
    let cb = country_boundaries::CountryBoundaries::from_reader(
        country_boundaries::BOUNDARIES_ODBL_360X180,
    )
    .expect("country-boundaries data");
    let oracle = Oracle::new(&ctc_points::features(), Layer::Countries.overlap_rule());
    let ours = |p: GridPoint| index.lookup_with(p, |t| tiles[t].as_ref()).ok().flatten();
    let alpha2 = |id: Option<u16>| id.and_then(|i| index.country(i)).map(|c| c.alpha2);

    let names = [
        "ours",
        "ours_from_latlon",
        "country_boundaries",
        "geo_oracle",
        "ours_batch",
    ];
    let mut json = String::from("{");
    println!("| point set (points) | ours, grid point | ours, from lat/lon | ours, batched | `country-boundaries` | `geo` interval trees (oracle) |");
    println!("|---|---|---|---|---|---|");
    let mut cities_agreement = String::new();
    for (si, (set, pts)) in ctc_points::all_sets().into_iter().enumerate() {
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
        let cbp: Vec<_> = pts
            .iter()
            .map(|&(a, b)| country_boundaries::LatLon::new(a, b).expect("valid"))
            .collect();
        let mut t: [Vec<f64>; 5] = Default::default();
        let mut answers = vec![Ok(None); BATCH];
        // One whole pass per contender, contenders alternating, so none runs on cache lines
        // another has just warmed for the same batch. The oracle (~50× slower) times every
        // 10th batch once.
        let batches: Vec<Vec<usize>> = (0..pts.len())
            .collect::<Vec<_>>()
            .chunks(BATCH)
            .map(<[usize]>::to_vec)
            .collect();
        let mut pass = |k: usize, keep: bool, f: &mut dyn FnMut(&[usize])| {
            for (bi, chunk) in batches.iter().enumerate() {
                if k == 3 && bi % 10 != 0 {
                    continue;
                }
                let s = Instant::now();
                f(chunk);
                if keep {
                    t[k].push(s.elapsed().as_nanos() as f64 / chunk.len() as f64);
                }
            }
        };
        for round in 0..=3 {
            let keep = round > 0;
            pass(0, keep, &mut |c| {
                c.iter().for_each(|&i| {
                    black_box(ours(grid[i]));
                })
            });
            pass(1, keep, &mut |c| {
                c.iter().for_each(|&i| {
                    let p = GridPoint::from(LatLon::new(pts[i].0, pts[i].1).expect("valid"));
                    black_box(ours(p));
                })
            });
            // The batch API (what `POST /v1/geo/country` uses): a chunk is a contiguous range.
            pass(4, keep, &mut |c| {
                let out = &mut answers[..c.len()];
                index.lookup_batch(&grid[c[0]..c[0] + c.len()], |t| tiles[t].as_ref(), out);
                black_box(out);
            });
            pass(2, keep, &mut |c| {
                c.iter().for_each(|&i| {
                    black_box(cb.ids(cbp[i]));
                })
            });
            if round == 1 {
                pass(3, true, &mut |c| {
                    c.iter().for_each(|&i| {
                        black_box(oracle.lookup(pts[i].0, pts[i].1));
                    })
                });
            }
        }
        let med: Vec<f64> = t.iter().map(|v| median(&mut v.clone())).collect();
        println!(
            "| {set} ({}) | **{:.0} ns** | {:.0} ns | {:.0} ns ({:.2}× ours) | {:.0} ns ({:.2}× ours) | {:.0} ns ({:.1}× ours) |",
            pts.len(),
            med[0],
            med[1],
            med[4],
            med[4] / med[0],
            med[2],
            med[2] / med[0],
            med[3],
            med[3] / med[0]
        );
        json += &format!("{}\"{set}\":{{", if si > 0 { "," } else { "" });
        for (k, name) in names.iter().enumerate() {
            let v: Vec<String> = t[k].iter().map(|x| format!("{x:.1}")).collect();
            json += &format!(
                "{}\"{name}\":[{}]",
                if k > 0 { "," } else { "" },
                v.join(",")
            );
        }
        json += "}";
        if set == "cities" {
            let answers: Vec<Option<&str>> = grid.iter().map(|&g| alpha2(ours(g))).collect();
            let lines: Vec<&str> = answers.iter().map(|a| a.unwrap_or("-")).collect();
            std::fs::write(out.join("points/cities.ours.txt"), lines.join("\n") + "\n")
                .expect("write");
            let agree = |f: &dyn Fn(usize) -> Option<String>| {
                let n = (0..pts.len())
                    .filter(|&i| f(i).as_deref() == answers[i])
                    .count();
                100.0 * n as f64 / pts.len() as f64
            };
            // country-boundaries answers subdivisions too ("US-TX"); its country is the 2-letter id.
            let cb_agree = agree(&|i| {
                cb.ids(cbp[i])
                    .into_iter()
                    .find(|s| s.len() == 2)
                    .map(str::to_owned)
            });
            let or_agree = agree(&|i| alpha2(oracle.lookup(pts[i].0, pts[i].1)).map(str::to_owned));
            cities_agreement = format!(
                "| `country-boundaries` | {cb_agree:.3}% |\n| `geo` interval trees (oracle) | {or_agree:.3}% |"
            );
        }
    }
    json += "}";
    std::fs::write(out.join("ctc_native.json"), json).expect("write");
    println!();
    println!(
        "Agreement with our answers on the {} cities (same alpha-2, or both none):",
        ctc_points::cities().len()
    );
    println!();
    println!("| peer | agreement |\n|---|---|\n{cities_agreement}");
}
