//! An asset layer read from disk with every tile open: shared by the benches and examples (via
//! `ctc_points`) and by the tzf-rs anchor (`bench/rust/tz_anchor`, a workspace of its own that
//! includes this file), so it names only `egn-core`.

use egn_core::geo::{format, CountryIndex, Tile};
use std::path::Path;

/// An asset layer read from disk with every tile open.
pub type Layer = (CountryIndex<Vec<u8>>, Vec<Option<Tile<Vec<u8>>>>);

/// Opens the layer in `dir` (`assets/geo`, `assets/tz`): `index.bin` and every tile.
pub fn open_layer(dir: &Path) -> Layer {
    let index = CountryIndex::from_bytes(std::fs::read(dir.join("index.bin")).expect("assets"))
        .expect("index");
    let tiles = (0..format::N_TILES)
        .map(|t| {
            std::fs::read(dir.join(format::tile_file_name(t)))
                .ok()
                .map(|b| index.open_tile(t, b).expect("tile"))
        })
        .collect();
    (index, tiles)
}
