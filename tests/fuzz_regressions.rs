//! Replays every kept fuzz input — `fuzz/seeds/<target>/*` and the crash inputs in
//! `fuzz/regressions/<target>/*` — through the same function the `cargo fuzz` target calls, so
//! CI checks them on stable without cargo-fuzz or nightly. Fuzzing itself is `scripts/fuzz.sh`.

use egn_tools::fuzzing;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Replays `fuzz/<kind>/<target>/*`; panics on a directory that names no target.
fn replay(kind: &str) -> usize {
    let dir = root().join(kind);
    let Ok(targets) = std::fs::read_dir(&dir) else {
        return 0;
    };
    let mut n = 0;
    for t in targets {
        let t = t.expect("read dir").path();
        if !t.is_dir() {
            continue;
        }
        let name = t.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            fuzzing::TARGETS.contains(&name.as_str()),
            "{} names no fuzz target (known: {:?})",
            t.display(),
            fuzzing::TARGETS
        );
        let mut files: Vec<PathBuf> = std::fs::read_dir(&t)
            .expect("read target dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for f in files {
            let data = std::fs::read(&f).expect("read input");
            eprintln!("{kind}/{name}/{}", f.file_name().unwrap().to_string_lossy());
            assert!(fuzzing::run(&name, &data));
            n += 1;
        }
    }
    n
}

#[test]
fn seeds_replay_and_every_target_has_one() {
    let n = replay("seeds");
    for t in fuzzing::TARGETS {
        let dir = root().join("seeds").join(t);
        let count = std::fs::read_dir(&dir)
            .map(|d| d.count())
            .unwrap_or_default();
        assert!(count > 0, "no seed inputs in {}", dir.display());
    }
    assert!(n >= fuzzing::TARGETS.len());
}

#[test]
fn crash_regressions_replay() {
    // Zero is fine for a target that never crashed; the seeds test keeps the suite non-vacuous.
    replay("regressions");
}

#[test]
fn fuzz_targets_and_the_crate_list_agree() {
    let mut bins: Vec<String> = std::fs::read_dir(root().join("fuzz_targets"))
        .expect("fuzz/fuzz_targets")
        .map(|e| {
            let p = e.expect("entry").path();
            p.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    bins.sort();
    let mut known: Vec<String> = fuzzing::TARGETS.iter().map(|s| s.to_string()).collect();
    known.sort();
    assert_eq!(bins, known);
    assert!(!fuzzing::run("no_such_target", b""));
}

/// Writes the generated seeds (synthetic geo world, cursors): run once after a format change with
/// `cargo test --test fuzz_regressions -- --ignored write_generated_seeds`.
#[test]
#[ignore = "writes files; run by hand"]
fn write_generated_seeds() {
    let world = fuzzing::synthetic_world();
    let seeds = root().join("seeds");
    let write = |target: &str, name: &str, data: &[u8]| {
        let dir = seeds.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), data).unwrap();
    };
    // geo_tile: first byte 2·k picks the k-th present tile.
    let present: Vec<usize> = (0..world.tiles.len())
        .filter(|&t| world.tiles[t].is_some())
        .collect();
    for (k, &t) in present.iter().enumerate() {
        let mut d = vec![(2 * k) as u8];
        d.extend_from_slice(world.tiles[t].as_ref().unwrap());
        write("geo_tile", &format!("tile-{t:03}"), &d);
    }
    // geo_index: an edit list that leaves the index valid (rewrites byte 48 with its own value).
    let mut edit = 48u32.to_le_bytes().to_vec();
    edit.push(world.index[48]);
    write("geo_index", "edit-noop", &edit);
    // ip_table: a small table (IPv4 ranges, IPv6 exception /64s) with each of its pages.
    let p6 = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap());
    let ranges = egn_core::ip::convert::Ranges {
        v4: vec![
            (0, None),
            (0x0808_0800, Some(*b"US")),
            (0x0808_0900, None),
            (0x5102_0000, Some(*b"GB")),
        ],
        v6: vec![
            (0, None),
            (p6("2a00:1::"), Some(*b"DE")),
            (p6("2a00:1::8000"), Some(*b"FR")),
            (p6("2a00:1:0:1::4"), Some(*b"IT")),
            (p6("2a00:1:0:2::"), None),
        ],
    };
    let t = egn_core::ip::table::build(&ranges, br#"{"database_type":"seed"}"#);
    for (i, page) in t.pages.iter().enumerate() {
        let mut d = vec![i as u8];
        d.extend((t.dir.len() as u32).to_le_bytes());
        d.extend(&t.dir);
        d.extend(page);
        write("ip_table", &format!("page-{i}"), &d);
    }
}
