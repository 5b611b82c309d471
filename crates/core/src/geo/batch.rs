//! Many lookups at once. Near borders one lookup is a chain of 3–5 dependent reads that mostly
//! miss the cache (the leaves alone are 14 MB), so looking points up one after another is bound
//! by memory latency, not by the few hundred instructions it runs. A batch walks up to
//! [`LANES`] points level by level instead: the reads of different points do not depend on each
//! other, so the memory system serves them in parallel; their leaves are touched together too,
//! and only then tested one by one, from cache. Answers are exactly those of
//! [`CountryIndex::lookup_with`] (tested).

use super::coord::GridPoint;
use super::format::{GRID_POINTER, NODE_INTERNAL, NODE_LEAF, TOP_SHIFT};
use super::index::{country_or_sea, unpair, CountryIndex, PairAnswer, Tile};

/// Points walked together: enough reads in flight to cover a miss, few enough that every
/// lane's state stays in registers and L1.
pub const LANES: usize = 16;

impl<S: AsRef<[u8]>> CountryIndex<S> {
    /// Looks up `pts` into `out` (same length): `Ok(country)`, or `Err(tile)` when that tile is
    /// not loaded (`tiles` answers `None`), as [`lookup_with`](Self::lookup_with) would.
    ///
    /// # Panics
    /// When `out` and `pts` differ in length.
    pub fn lookup_batch<'t, T, F>(
        &self,
        pts: &[GridPoint],
        tiles: F,
        out: &mut [Result<Option<u16>, usize>],
    ) where
        T: AsRef<[u8]> + 't,
        F: Fn(usize) -> Option<&'t Tile<T>>,
    {
        self.walk_batch(
            pts,
            tiles,
            out,
            |entry, p| self.or_sea(country_or_sea(entry as u16), p),
            |tile, v, shift, p| self.or_sea(tile.finish(v, shift, p), p),
            |p| self.or_sea(None, p),
        );
    }

    /// Combined layer: [`lookup_pair_with`](Self::lookup_pair_with) for many points, walked
    /// together like [`lookup_batch`](Self::lookup_batch).
    ///
    /// # Panics
    /// When `out` and `pts` differ in length.
    pub fn lookup_pair_batch<'t, T, F>(&self, pts: &[GridPoint], tiles: F, out: &mut [PairAnswer])
    where
        T: AsRef<[u8]> + 't,
        F: Fn(usize) -> Option<&'t Tile<T>>,
    {
        self.walk_batch(
            pts,
            tiles,
            out,
            |entry, p| self.zone_or_ocean(unpair(entry), p),
            |tile, v, shift, p| self.zone_or_ocean(tile.finish_pair(v, shift, p), p),
            |p| self.zone_or_ocean((None, None), p),
        );
    }

    /// The batch walk, generic over what a uniform grid entry, a final node and a corrupt tree
    /// answer.
    #[inline]
    fn walk_batch<'t, T, F, R: Copy>(
        &self,
        pts: &[GridPoint],
        tiles: F,
        out: &mut [Result<R, usize>],
        uniform: impl Fn(u32, GridPoint) -> R,
        finish: impl Fn(&Tile<T>, u32, u32, GridPoint) -> R,
        corrupt: impl Fn(GridPoint) -> R,
    ) where
        T: AsRef<[u8]> + 't,
        F: Fn(usize) -> Option<&'t Tile<T>>,
    {
        assert_eq!(pts.len(), out.len(), "one answer slot per point");
        for (pts, out) in pts.chunks(LANES).zip(out.chunks_mut(LANES)) {
            // Per lane: the tile being walked (None once answered), node value and its shift.
            let mut lanes: [(Option<&'t Tile<T>>, u32, u32); LANES] = [(None, 0, 0); LANES];
            for ((lane, slot), &p) in lanes.iter_mut().zip(out.iter_mut()).zip(pts) {
                let (entry, id) = self.grid_entry(p);
                if entry & GRID_POINTER == 0 {
                    *slot = Ok(uniform(entry, p));
                } else if let Some(tile) = tiles(id) {
                    *lane = (Some(tile), tile.root(entry), TOP_SHIFT);
                } else {
                    *slot = Err(id);
                }
            }
            loop {
                let mut moved = false;
                for ((lane, slot), &p) in lanes.iter_mut().zip(out.iter_mut()).zip(pts) {
                    let (Some(tile), v, shift) = *lane else {
                        continue;
                    };
                    if v >> 30 != NODE_INTERNAL {
                        continue;
                    }
                    moved = true;
                    match tile.step(v, shift, p) {
                        Some((v, shift)) => *lane = (Some(tile), v, shift),
                        // A corrupt (cyclic) tree: the point-by-point walk answers the same.
                        None => {
                            *lane = (None, 0, 0);
                            *slot = Ok(corrupt(p));
                        }
                    }
                }
                if !moved {
                    break;
                }
            }
            let mut touched = 0u8;
            for &(tile, v, _) in &lanes {
                if let Some(tile) = tile.filter(|_| v >> 30 == NODE_LEAF) {
                    touched ^= tile.touch_leaf(v);
                }
            }
            // The loads above exist only to be in flight together; keep the optimiser from
            // dropping them as unused.
            std::hint::black_box(touched);
            for ((lane, slot), &p) in lanes.iter().zip(out.iter_mut()).zip(pts) {
                if let (Some(tile), v, shift) = *lane {
                    *slot = Ok(finish(tile, v, shift, p));
                }
            }
        }
    }
}
