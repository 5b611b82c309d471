//! The on-disk layout of the country index, shared by the builder and the reader.
//!
//! All integers are little-endian and read in place; nothing is decoded at open beyond the
//! headers and one validation pass, so a cold isolate answers its first query right away.
//!
//! ```text
//! index.bin  header(48) | countries n×8 (alpha2[2] alpha3[3] 0[3]) | tiles t×8 (len u32, crc u32)
//!            | grid rows×cols u32 [| zone names, zone layer only: see ZONE_INDEX_MAGIC]
//! tile-NNN.bin header(32) | nodes u32… | leaf bytes
//! ```
//! A grid entry is `UNIFORM | value` (value = country or [`SEA`]) or `POINTER | root node`.
//! A node is `tag << 30 | payload` with tag [`NODE_UNIFORM`], [`NODE_INTERNAL`] or [`NODE_LEAF`]
//! (payload = byte offset of the leaf). An internal node's payload is the index of its first
//! child, plus [`NODE_WIDE`] when it splits two levels at once: 2×2 or 4×4 children in row-major
//! order from the south-west (child `row << k | col`, k = 1 or 2). Splitting two levels halves the
//! dependent memory reads of a descent near borders, where most of a lookup's time goes.
//! A leaf is `default u16, n u16` then n candidates, smallest area first:
//! `country u16, base u8, 0 u8, chains u16` and per y-monotone chain `len u16`, len × `y`, len × `x` in
//! cell-local grid units, each `4 - (n >> LEAF_WIDTH_SHIFT)` bytes wide (2, 3 or 4). A point is in a candidate when `base` XOR the crossing parity of a
//! ray to +x over its chains is 1; the first such candidate wins, else `default`.

/// Magic bytes of `index.bin`.
pub const INDEX_MAGIC: [u8; 8] = *b"CTRYIDX\0";
/// Magic bytes of the zone layer's `index.bin` (`assets/tz`): the same layout, except that the
/// table holds `offset u32, len u32` per zone into the names (IANA, ASCII) that follow the grid,
/// whose length is the header's `u32` at byte 40. Its tiles are country tiles in every respect.
/// There [`SEA`] means "no land zone": the reader answers the ocean zone of the point's 15°
/// band ([`ocean_zone_name`], [`ocean_band_west`]), so the open sea needs no cells of its own.
pub const ZONE_INDEX_MAGIC: [u8; 8] = *b"TZONIDX\0";

/// Magic bytes of the combined layer's `index.bin` (`assets/tz`): a zone layer whose values
/// are (country, zone) pairs, answering both in one walk. The header's `u32` at byte 44 is the
/// number of countries (ids as in `assets/geo`). A uniform grid entry or node holds
/// `country | zone << 16` (zone [`PAIR_ZONE_SEA`] for none); a mixed leaf is
/// `country bytes u16`, then a country leaf and a zone leaf of the one-layer form (a layer
/// uniform in the cell has no candidates).
pub const COMBINED_INDEX_MAGIC: [u8; 8] = *b"CTZNIDX\0";
/// The zone half of a pair meaning "no land zone" (14 bits).
pub const PAIR_ZONE_SEA: u16 = 0x3FFF;

/// Ocean bands of the zone layer (timezone-boundary-builder's open-sea rule): band `k` in
/// `-12..=12` spans 15° of longitude centred on `15k`, clipped to ±180°.
pub const OCEAN_BANDS: i32 = 25;

/// The IANA name of ocean band `k` (`-12..=12`): `Etc/GMT+12` west … `Etc/GMT-12` east
/// (POSIX-inverted signs: west of Greenwich is GMT+N).
pub fn ocean_zone_name(k: i32) -> String {
    match k {
        0 => "Etc/GMT".to_owned(),
        k if k < 0 => format!("Etc/GMT+{}", -k),
        k => format!("Etc/GMT-{k}"),
    }
}

/// West edge of ocean band `k` in degrees (−180 for the first).
pub fn ocean_band_west(k: i32) -> f64 {
    (f64::from(k) * 15.0 - 7.5).max(-180.0)
}
/// Magic bytes of a tile file.
pub const TILE_MAGIC: [u8; 8] = *b"CTRYTIL\0";
/// Bumped on any layout change; readers refuse other versions.
pub const FORMAT_VERSION: u32 = 7;
/// Size of `index.bin`'s header.
pub const INDEX_HEADER: usize = 48;
/// Size of a tile header.
pub const TILE_HEADER: usize = 32;

/// log2 of a top-grid cell's side in grid units (2^26 units = 1.40625°).
pub const TOP_SHIFT: u32 = 26;
/// Columns of the top grid.
pub const GRID_COLS: usize = 256;
/// Rows of the top grid.
pub const GRID_ROWS: usize = 128;
/// A tile groups `TILE_CELLS × TILE_CELLS` top cells (11.25° × 11.25°). A tile is what a fresh
/// isolate reads for its first answer there, and that read costs about its size (the combined
/// layer's densest 22.5° tile was 7.4 MB); 11.25° cut it to a quarter of the area.
pub const TILE_CELLS: usize = 8;
/// Tiles per row.
pub const TILE_COLS: usize = GRID_COLS / TILE_CELLS;
/// Tile rows.
pub const TILE_ROWS: usize = GRID_ROWS / TILE_CELLS;
/// Number of tiles.
pub const N_TILES: usize = TILE_COLS * TILE_ROWS;

/// Country value meaning "no country" (open sea).
pub const SEA: u16 = 0xFFFF;
/// Grid entry flag: the low 16 bits are the answer for the whole cell.
pub const GRID_UNIFORM: u32 = 0;
/// Grid entry flag: the low 31 bits index the cell's root node in its tile.
pub const GRID_POINTER: u32 = 1 << 31;
/// Node tag: the whole cell has one answer (low 16 bits).
pub const NODE_UNIFORM: u32 = 0;
/// Node tag: 4 (or 16 with [`NODE_WIDE`]) children start at the payload index.
pub const NODE_INTERNAL: u32 = 1;
/// Internal-node payload flag: the node has 4×4 children (two levels in one step).
pub const NODE_WIDE: u32 = 1 << 29;
/// Mask of an internal node's first-child index.
pub const NODE_CHILD: u32 = NODE_WIDE - 1;
/// Node tag: a mixed leaf starts at the payload byte offset.
pub const NODE_LEAF: u32 = 2;

/// Top bits of a leaf's candidate count: `4 - bytes per coordinate`.
pub const LEAF_WIDTH_SHIFT: u16 = 14;
/// Mask of the candidate count proper.
pub const LEAF_COUNT_MASK: u16 = (1 << LEAF_WIDTH_SHIFT) - 1;
/// Mask of a node's payload.
pub const NODE_PAYLOAD: u32 = (1 << 30) - 1;

/// Tile id of a top-grid cell.
pub fn tile_of(col: usize, row: usize) -> usize {
    (row / TILE_CELLS) * TILE_COLS + col / TILE_CELLS
}

/// File name of a tile inside the asset directory.
pub fn tile_file_name(tile: usize) -> String {
    format!("tile-{tile:03}.bin")
}

#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_group_cells_row_major_from_the_south_west() {
        assert_eq!(N_TILES, 512);
        assert_eq!(tile_of(0, 0), 0);
        assert_eq!(tile_of(TILE_CELLS - 1, TILE_CELLS - 1), 0);
        assert_eq!(tile_of(TILE_CELLS, 0), 1);
        assert_eq!(tile_of(0, TILE_CELLS), TILE_COLS);
        assert_eq!(tile_of(GRID_COLS - 1, GRID_ROWS - 1), N_TILES - 1);
        assert_eq!(tile_file_name(7), "tile-007.bin");
        assert_eq!(tile_file_name(N_TILES - 1), "tile-511.bin");
    }

    #[test]
    fn reads_are_little_endian_and_none_past_the_end() {
        let b = [0x34, 0x12, 0x78, 0x56];
        assert_eq!(u16_at(&b, 0), Some(0x1234));
        assert_eq!(u16_at(&b, 2), Some(0x5678));
        assert_eq!(u16_at(&b, 3), None);
        assert_eq!(u32_at(&b, 0), Some(0x5678_1234));
        assert_eq!(u32_at(&b, 1), None);
    }

    #[test]
    fn node_and_grid_tags_do_not_overlap() {
        // A node is `tag << 30 | payload`: the wide flag and child index fit the payload.
        assert_eq!(NODE_WIDE & NODE_CHILD, 0);
        assert_eq!((NODE_WIDE | NODE_CHILD) & !NODE_PAYLOAD, 0);
        assert_eq!(GRID_POINTER & 0xFFFF, 0);
        assert!(usize::from(SEA) > 255, "SEA is no country id");
        assert_eq!(LEAF_COUNT_MASK >> LEAF_WIDTH_SHIFT, 0);
    }
}
