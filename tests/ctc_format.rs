//! The asset format: reproducible bytes, versioning and every rejection path at open.

mod common;

use common::world;
use egn_tools::geo::{build, format, CountryIndex, LoadError};

fn hex(b: &[u8]) -> String {
    egn_core::ip::sha256_hex(b)
}

#[test]
fn same_input_gives_same_bytes_as_the_committed_manifest() {
    let w = world();
    let again = build::build(&w.features);
    assert_eq!(
        again.index, w.built.index,
        "index differs between two builds"
    );
    assert_eq!(
        again.tiles, w.built.tiles,
        "tiles differ between two builds"
    );
    let manifest_path = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/manifest.json");
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(manifest_path).expect("assets/manifest.json (run scripts/build-assets.sh)"),
    )
    .unwrap();
    let files = manifest["geo"]["files"].as_array().unwrap();
    assert_eq!(files[0]["path"], "geo/index.bin");
    assert_eq!(files[0]["sha256"], hex(&w.built.index));
    let tiles: Vec<(usize, &Vec<u8>)> = w
        .built
        .tiles
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.as_ref().map(|t| (i, t)))
        .collect();
    assert_eq!(files.len(), 1 + tiles.len());
    for (f, (id, bytes)) in files[1..].iter().zip(tiles) {
        assert_eq!(f["path"], format!("geo/{}", format::tile_file_name(id)));
        assert_eq!(f["sha256"], hex(bytes), "tile {id}");
    }
}

#[test]
fn rejects_damaged_or_foreign_assets() {
    let w = world();
    let good = w.built.index.clone();
    let mut bad = good.clone();
    bad[200] ^= 1;
    assert_eq!(
        CountryIndex::from_bytes(bad).err(),
        Some(LoadError::ChecksumMismatch)
    );
    let mut v = good.clone();
    v[8] = 99;
    assert_eq!(
        CountryIndex::from_bytes(v).err(),
        Some(LoadError::WrongVersion {
            expected: format::FORMAT_VERSION,
            actual: 99
        })
    );
    assert_eq!(
        CountryIndex::from_bytes(good[..100].to_vec()).err(),
        Some(LoadError::Truncated)
    );
    assert_eq!(
        CountryIndex::from_bytes(
            b"not an index at all, not at all.........................".to_vec()
        )
        .err(),
        Some(LoadError::BadMagic)
    );

    let (id, tile) = w
        .built
        .tiles
        .iter()
        .enumerate()
        .find_map(|(i, t)| t.as_ref().map(|t| (i, t)))
        .unwrap();
    let mut t = tile.clone();
    let last = t.len() - 1;
    t[last] ^= 0x55;
    assert_eq!(
        w.index.open_tile(id, t).err(),
        Some(LoadError::TileMismatch { tile: id })
    );
    // A valid tile offered for another slot is refused too.
    assert!(w.index.open_tile(id + 1, tile.clone()).is_err());
    assert!(w.index.open_tile(id, tile.clone()).is_ok());
}
