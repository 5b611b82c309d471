//! The asset builder: quantise, clip into an adaptive quadtree under a 256×128 top grid, resolve
//! overlaps per cell, and serialise to the format in [`super::format`]. Native only.
//!
//! Per cell, each feature is either constant (covers the cell or misses it) or a candidate with
//! the rings clipped to the cell (Sutherland–Hodgman, which preserves even-odd parity inside the
//! cell). The smallest covering feature is the cell's default; candidates larger than it can
//! never win and are dropped. Cells split until few edges remain, so a lookup is a short descent
//! and a handful of exact integer crossing tests.

use super::format::*;
use super::source::{overlap_order, OverlapRule, SourceFeature};
use super::{grid_x, grid_y, WORLD_H, WORLD_W};

/// Split a cell while its candidates have more edges than this. Measured (near-border median,
/// criterion, this machine): 16 → 428 ns / 43.8 MB, 24 → 252 ns / 28.8 MB, 32 → 266 ns /
/// 23.5 MB, 64 → 328 ns / 17.3 MB. Deeper trees cost cache misses, shallower ones edge scans;
/// 32 keeps the speed of 24 with a fifth less memory.
pub const LEAF_EDGES: usize = 32;
/// Never split below 2^6 grid units (≈1.3e-6°).
pub const MIN_SHIFT: u32 = 6;

type P = (i64, i64);

#[derive(Clone, Copy)]
struct Rect {
    x0: i64,
    y0: i64,
    x1: i64,
    y1: i64,
}

#[derive(Clone)]
struct FeatState {
    /// Rank in the overlap order (0 = smallest area).
    rank: u16,
    base: bool,
    rings: Vec<Vec<P>>,
}

/// Build statistics, printed by the builder and stored in the manifest.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BuildStats {
    /// Top-grid cells answered without a tile.
    pub uniform_top_cells: usize,
    /// Quadtree nodes over all tiles.
    pub nodes: usize,
    /// Mixed leaves (cells needing a point-in-polygon test).
    pub leaves: usize,
    /// Stored vertices.
    pub vertices: usize,
    /// Leaves by bytes per local coordinate: [2, 3, 4].
    pub coord_bytes_histogram: [usize; 3],
    /// Most edges in one leaf.
    pub max_leaf_edges: usize,
    /// Deepest level below the top grid.
    pub max_depth: u32,
    /// Leaves whose last candidate became the default (see `constant_parity`).
    pub dropped_candidates: usize,
}

/// The built asset: `index.bin` bytes and one optional byte vector per tile.
pub struct Built {
    /// Contents of `index.bin`.
    pub index: Vec<u8>,
    /// Contents of `tile-NNN.bin`, `None` for tiles without mixed cells.
    pub tiles: Vec<Option<Vec<u8>>>,
    /// Statistics.
    pub stats: BuildStats,
}

#[derive(Default)]
struct TileBuilder {
    nodes: Vec<u32>,
    leaves: Vec<u8>,
}

/// One layer as the builder sees it: features by rank, and what a rank or "nothing" stores.
struct Ranked {
    /// Features in rank order, rings quantised.
    world: Vec<FeatState>,
    order_to_feature: Vec<u16>,
    /// Zone layer: the ocean bands, `[x0, x1)` in grid units and their zone id.
    ocean: Vec<(i64, i64, u16)>,
}

impl Ranked {
    fn new(features: &[SourceFeature], layer: Layer) -> Self {
        let order = overlap_order(features, layer.overlap_rule());
        let mut rank_of = vec![0u16; features.len()];
        for (rank, &f) in order.iter().enumerate() {
            rank_of[f] = rank as u16;
        }
        let mut world: Vec<FeatState> = features
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let rings = f.parts.iter().flatten().filter_map(|r| quantise(r));
                FeatState {
                    rank: rank_of[i],
                    base: false,
                    rings: match layer {
                        Layer::Countries => rings.collect(),
                        // The open sea is no polygon: the reader answers a point no land zone
                        // holds from its longitude (`format::ZONE_INDEX_MAGIC`).
                        Layer::Zones if f.area.is_infinite() => Vec::new(),
                        Layer::Zones => dissolve(rings.collect()),
                    },
                }
            })
            .collect();
        world.sort_by_key(|f| f.rank);
        let ocean = match layer {
            Layer::Countries => Vec::new(),
            Layer::Zones => (-12..=12)
                .filter_map(|k| {
                    let name = ocean_zone_name(k);
                    let id = features.iter().position(|f| f.alpha3 == name)?;
                    let x1 = if k == 12 {
                        WORLD_W
                    } else {
                        grid_x(ocean_band_west(k + 1))
                    };
                    Some((grid_x(ocean_band_west(k)), x1, id as u16))
                })
                .collect(),
        };
        Ranked {
            world,
            order_to_feature: order.iter().map(|&i| i as u16).collect(),
            ocean,
        }
    }

    /// The stored value of feature `rank`, or of no feature over cell `r`: sea, or in the zone
    /// layer the ocean zone when `r` lies in one band (the reader's own answer for sea there,
    /// stored so that most open-sea points need no band lookup).
    fn value(&self, rank: Option<u16>, r: Rect) -> u16 {
        match rank {
            Some(rank) => self.order_to_feature[rank as usize],
            None => self
                .ocean
                .iter()
                .find(|&&(x0, x1, _)| x0 <= r.x0 && r.x1 <= x1)
                .map_or(SEA, |b| b.2),
        }
    }
}

struct Builder {
    layers: Vec<Ranked>,
    grid: Vec<u32>,
    tiles: Vec<TileBuilder>,
    stats: BuildStats,
}

/// What the index's table names: countries (ISO codes) or time zones (IANA names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// `index.bin` of `assets/geo`.
    Countries,
    /// A zone layer of its own: the same quadtree and tiles, a table of zone names.
    Zones,
}

impl Layer {
    /// Which feature wins where the layer's polygons overlap.
    #[must_use]
    pub fn overlap_rule(self) -> OverlapRule {
        match self {
            Layer::Countries => OverlapRule::SmallestArea,
            Layer::Zones => OverlapRule::FirstName,
        }
    }
}

/// Builds the country asset from repaired source features (sorted by alpha-3; a feature's index
/// is its country id in the asset).
pub fn build(features: &[SourceFeature]) -> Built {
    build_layer(features, Layer::Countries)
}

/// Builds `layer`'s asset from features sorted by key (a feature's index is its id).
pub fn build_layer(features: &[SourceFeature], layer: Layer) -> Built {
    let b = Builder::new(vec![Ranked::new(features, layer)]);
    b.run().finish(features, layer, None)
}

/// Builds the combined layer (`assets/tz`): one quadtree over countries and zones together, a
/// cell splitting until each layer's part would fit a leaf on its own; nodes carry (country,
/// zone) pairs and a mixed leaf both layers' candidates ([`ZONE_INDEX_MAGIC`]). Country ids
/// are those of [`build`] on the same `countries`.
pub fn build_combined(countries: &[SourceFeature], zones: &[SourceFeature]) -> Built {
    let b = Builder::new(vec![
        Ranked::new(countries, Layer::Countries),
        Ranked::new(zones, Layer::Zones),
    ]);
    b.run().finish(zones, Layer::Zones, Some(countries.len()))
}

/// A (country, zone) pair in a uniform node's or grid entry's 30 payload bits.
fn pair(country: u16, zone: u16) -> u32 {
    let zone = if zone == SEA {
        PAIR_ZONE_SEA
    } else {
        assert!(zone < PAIR_ZONE_SEA, "zone id {zone} does not fit a pair");
        zone
    };
    u32::from(country) | u32::from(zone) << 16
}

impl Builder {
    fn new(layers: Vec<Ranked>) -> Self {
        Builder {
            layers,
            grid: vec![0; GRID_COLS * GRID_ROWS],
            tiles: (0..N_TILES).map(|_| TileBuilder::default()).collect(),
            stats: BuildStats::default(),
        }
    }

    fn run(mut self) -> Self {
        let half = WORLD_W / 2;
        for x0 in [0, half] {
            let r = Rect {
                x0,
                y0: 0,
                x1: x0 + half,
                y1: WORLD_H,
            };
            let feats = self
                .layers
                .iter()
                .map(|l| clip_feats(&l.world, r))
                .collect();
            self.above_top(r, feats);
        }
        self
    }
}

fn quantise(ring: &[[f64; 2]]) -> Option<Vec<P>> {
    let mut out: Vec<P> = Vec::with_capacity(ring.len());
    for v in ring {
        let p = (grid_x(v[0]), grid_y(v[1]));
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    if out.first() != out.last() {
        let first = out[0];
        out.push(first);
    }
    (out.len() >= 4).then_some(out)
}

/// The rings of one feature with every edge that cancels under even-odd parity removed: equal
/// segments in pairs, and overlapping stretches of axis-parallel edges on the same line. geo-tz
/// ships each zone cut along its own quadtree, so the joined zone still carries every cut line
/// twice (once per side) and every whole-quad rectangle's sides; a cell such a line crosses was
/// mixed although one zone covers it. Parity at every point is unchanged (a crossing test is
/// additive over edges, and splitting a vertical edge at a point on it changes no crossing),
/// so this is exact; the rest is re-linked into closed rings, which exist because every vertex
/// keeps an even degree.
fn dissolve(rings: Vec<Vec<P>>) -> Vec<Vec<P>> {
    use std::collections::HashMap;
    let mut odd: HashMap<(P, P), bool> = HashMap::new();
    // Axis-parallel stretches per line: (vertical, line coordinate) → toggles along it.
    let mut lines: HashMap<(bool, i64), Vec<i64>> = HashMap::new();
    for ring in &rings {
        for w in ring.windows(2) {
            let (a, b) = if w[0] <= w[1] {
                (w[0], w[1])
            } else {
                (w[1], w[0])
            };
            if a == b {
                continue;
            }
            if a.0 == b.0 {
                lines.entry((true, a.0)).or_default().extend([a.1, b.1]);
            } else if a.1 == b.1 {
                lines.entry((false, a.1)).or_default().extend([a.0, b.0]);
            } else {
                *odd.entry((a, b)).or_default() ^= true;
            }
        }
    }
    let mut segs: Vec<(P, P)> = odd.into_iter().filter(|e| e.1).map(|e| e.0).collect();
    for ((vertical, c), mut t) in lines {
        t.sort_unstable();
        // A stretch is covered an odd number of times between toggle points of odd count.
        let mut inside = false;
        let mut from = 0;
        let mut i = 0;
        while i < t.len() {
            let v = t[i];
            let mut n = 0;
            while i < t.len() && t[i] == v {
                n += 1;
                i += 1;
            }
            if n % 2 == 1 {
                if inside {
                    let p = |u: i64| if vertical { (c, u) } else { (u, c) };
                    segs.push((p(from), p(v)));
                } else {
                    from = v;
                }
                inside = !inside;
            }
        }
    }
    segs.sort_unstable();
    // Re-link: walk unused segments from a vertex until the walk closes (even degrees).
    let mut at: HashMap<P, Vec<usize>> = HashMap::new();
    for (i, &(a, b)) in segs.iter().enumerate() {
        at.entry(a).or_default().push(i);
        at.entry(b).or_default().push(i);
    }
    let mut used = vec![false; segs.len()];
    let mut out = Vec::new();
    for start in 0..segs.len() {
        if used[start] {
            continue;
        }
        used[start] = true;
        let (first, mut cur) = segs[start];
        let mut ring = vec![first, cur];
        while cur != first {
            // Entered through one segment, `cur` has an odd number used: one is left.
            let j = at[&cur]
                .iter()
                .copied()
                .find(|&j| !used[j])
                .expect("closed rings leave every vertex an even degree");
            used[j] = true;
            let (a, b) = segs[j];
            cur = if a == cur { b } else { a };
            ring.push(cur);
        }
        out.push(ring);
    }
    out
}

impl Builder {
    /// Recurses from the two world halves down to top-grid cells.
    fn above_top(&mut self, r: Rect, feats: Vec<Vec<FeatState>>) {
        let size = r.x1 - r.x0;
        if size == 1 << TOP_SHIFT {
            let (col, row) = ((r.x0 >> TOP_SHIFT) as usize, (r.y0 >> TOP_SHIFT) as usize);
            let tile = tile_of(col, row);
            let value = self.cell(tile, r, feats, 0);
            self.grid[row * GRID_COLS + col] = if value >> 30 == NODE_UNIFORM {
                self.stats.uniform_top_cells += 1;
                GRID_UNIFORM | (value & NODE_PAYLOAD)
            } else {
                let t = &mut self.tiles[tile];
                t.nodes.push(value);
                GRID_POINTER | (t.nodes.len() as u32 - 1)
            };
            return;
        }
        for child in quadrants(r) {
            let f = feats.iter().map(|f| clip_feats(f, child)).collect();
            self.above_top(child, f);
        }
    }

    /// Builds the subtree of cell `r` (one feature list per layer) and returns its node value.
    fn cell(&mut self, tile: usize, r: Rect, feats: Vec<Vec<FeatState>>, depth: u32) -> u32 {
        self.stats.max_depth = self.stats.max_depth.max(depth);
        let resolved: Vec<(Option<u16>, Vec<FeatState>)> = feats.into_iter().map(resolve).collect();
        let values: Vec<u16> = resolved
            .iter()
            .zip(&self.layers)
            .map(|((default, _), l)| l.value(*default, r))
            .collect();
        if resolved.iter().all(|(_, c)| c.is_empty()) {
            return (NODE_UNIFORM << 30) | self.uniform(&values);
        }
        let shift = (r.x1 - r.x0).trailing_zeros();
        let fits = |cands: &[FeatState]| {
            let edges: usize = cands
                .iter()
                .flat_map(|f| &f.rings)
                .map(|r| r.len() - 1)
                .sum();
            edges <= LEAF_EDGES || one_sided_fits(cands, r, edges)
        };
        if shift <= MIN_SHIFT || resolved.iter().all(|(_, c)| fits(c)) {
            return self.leaf(tile, r, &values, &resolved);
        }
        let cov: Vec<Vec<FeatState>> = resolved
            .into_iter()
            .map(|(default, mut cov)| {
                if let Some(rank) = default {
                    cov.push(FeatState {
                        rank,
                        base: true,
                        rings: vec![],
                    });
                }
                cov
            })
            .collect();
        let quads: Vec<Vec<Vec<FeatState>>> = quadrants(r)
            .into_iter()
            .map(|q| cov.iter().map(|f| clip_feats(f, q)).collect())
            .collect();
        // Two levels at once when a quadrant will split again: a descent then reads half as
        // many nodes, and a node's 16 children share one or two cache lines.
        let wide = shift > MIN_SHIFT + 1
            && quadrants(r).into_iter().zip(&quads).any(|(qr, layers)| {
                layers
                    .iter()
                    .any(|f| candidate_edges(f) > LEAF_EDGES && !fits_after_resolve(f, qr))
            });
        let k = if wide { 2 } else { 1 };
        let first = self.tiles[tile].nodes.len();
        self.tiles[tile]
            .nodes
            .extend(std::iter::repeat_n(0, 1 << (2 * k)));
        self.stats.nodes += 1 << (2 * k);
        for (q, (qr, f)) in quadrants(r).into_iter().zip(quads).enumerate() {
            let (qy, qx) = (q >> 1, q & 1);
            if !wide {
                let v = self.cell(tile, qr, f, depth + 1);
                self.tiles[tile].nodes[first + q] = v;
                continue;
            }
            for (s, sr) in quadrants(qr).into_iter().enumerate() {
                let (sy, sx) = (s >> 1, s & 1);
                let g = f.iter().map(|f| clip_feats(f, sr)).collect();
                let v = self.cell(tile, sr, g, depth + 2);
                self.tiles[tile].nodes[first + ((qy * 2 + sy) << 2 | (qx * 2 + sx))] = v;
            }
        }
        let wide_flag = if wide { NODE_WIDE } else { 0 };
        (NODE_INTERNAL << 30) | wide_flag | first as u32
    }

    /// A uniform node's payload: the value, or with two layers the pair.
    fn uniform(&self, values: &[u16]) -> u32 {
        match values {
            [v] => u32::from(*v),
            [c, z] => pair(*c, *z),
            _ => unreachable!("one or two layers"),
        }
    }

    /// A mixed leaf: with one layer its leaf; with two, `country bytes u16`, the country part
    /// and the zone part, each a one-layer leaf (a layer uniform in the cell: no candidates).
    fn leaf(
        &mut self,
        tile: usize,
        r: Rect,
        values: &[u16],
        resolved: &[(Option<u16>, Vec<FeatState>)],
    ) -> u32 {
        let parts: Vec<Result<Vec<u8>, u16>> = resolved
            .iter()
            .zip(values)
            .zip(&self.layers)
            .map(|(((_, cands), &default), l)| leaf_bytes(&mut self.stats, l, r, default, cands))
            .collect();
        if parts.iter().all(Result::is_err) {
            let values: Vec<u16> = parts.iter().map(|p| *p.as_ref().unwrap_err()).collect();
            return (NODE_UNIFORM << 30) | self.uniform(&values);
        }
        let t = &mut self.tiles[tile];
        let off = t.leaves.len();
        let bytes = |p: &Result<Vec<u8>, u16>| match p {
            Ok(b) => b.clone(),
            Err(v) => {
                let mut b = v.to_le_bytes().to_vec();
                b.extend((2u16 << LEAF_WIDTH_SHIFT).to_le_bytes());
                b
            }
        };
        if let [c, z] = &parts[..] {
            let c = bytes(c);
            let len = u16::try_from(c.len()).expect("a leaf's country part fits u16 bytes");
            t.leaves.extend(len.to_le_bytes());
            t.leaves.extend(c);
            t.leaves.extend(bytes(z));
        } else {
            t.leaves.extend(bytes(&parts[0]));
        }
        (NODE_LEAF << 30) | off as u32
    }

    /// Serialises; `pair_countries` is the country count of a combined layer.
    fn finish(
        mut self,
        features: &[SourceFeature],
        layer: Layer,
        pair_countries: Option<usize>,
    ) -> Built {
        self.breadth_first();
        let mut tiles = Vec::with_capacity(N_TILES);
        let mut table = Vec::with_capacity(N_TILES * 8);
        for (id, t) in self.tiles.iter().enumerate() {
            if t.nodes.is_empty() {
                table.extend([0u8; 8]);
                tiles.push(None);
                continue;
            }
            let mut body = Vec::with_capacity(t.nodes.len() * 4 + t.leaves.len());
            t.nodes.iter().for_each(|n| body.extend(n.to_le_bytes()));
            body.extend(&t.leaves);
            let mut file = Vec::with_capacity(TILE_HEADER + body.len());
            file.extend(TILE_MAGIC);
            for v in [
                FORMAT_VERSION,
                id as u32,
                t.nodes.len() as u32,
                t.leaves.len() as u32,
            ] {
                file.extend(v.to_le_bytes());
            }
            file.extend(crc32fast::hash(&body).to_le_bytes());
            file.extend([0u8; 4]);
            file.extend(body);
            table.extend((file.len() as u32).to_le_bytes());
            table.extend(crc32fast::hash(&file).to_le_bytes());
            tiles.push(Some(file));
        }
        let mut body = Vec::new();
        let mut names = Vec::new();
        for f in features {
            if layer == Layer::Countries {
                body.extend(f.alpha2.as_bytes());
                body.extend(f.alpha3.as_bytes());
                body.extend([0u8; 3]);
            } else {
                body.extend((names.len() as u32).to_le_bytes());
                body.extend((f.alpha3.len() as u32).to_le_bytes());
                names.extend(f.alpha3.as_bytes());
            }
        }
        body.extend(table);
        self.grid.iter().for_each(|g| body.extend(g.to_le_bytes()));
        body.extend(&names);
        let mut index = Vec::with_capacity(INDEX_HEADER + body.len());
        index.extend(match (layer, pair_countries) {
            (Layer::Countries, _) => INDEX_MAGIC,
            (Layer::Zones, None) => ZONE_INDEX_MAGIC,
            (Layer::Zones, Some(_)) => COMBINED_INDEX_MAGIC,
        });
        let fields = [
            FORMAT_VERSION,
            features.len() as u32,
            GRID_COLS as u32,
            GRID_ROWS as u32,
            TILE_CELLS as u32,
            N_TILES as u32,
            crc32fast::hash(&body),
            body.len() as u32,
        ];
        fields.iter().for_each(|v| index.extend(v.to_le_bytes()));
        index.extend((names.len() as u32).to_le_bytes());
        index.extend((pair_countries.unwrap_or(0) as u32).to_le_bytes());
        index.extend(body);
        Built {
            index,
            tiles,
            stats: self.stats,
        }
    }
}

impl Builder {
    /// Re-lays each tile's nodes level by level: roots first, then their children, and so on.
    /// Built depth-first, the few upper-level nodes every lookup in a tile reads were spread
    /// over the whole node array; level by level they share a few pages that stay in cache.
    fn breadth_first(&mut self) {
        for (id, t) in self.tiles.iter_mut().enumerate() {
            if t.nodes.is_empty() {
                continue;
            }
            let old = std::mem::take(&mut t.nodes);
            let mut new = Vec::with_capacity(old.len());
            for (cell, g) in self.grid.iter_mut().enumerate() {
                if *g & GRID_POINTER != 0 && tile_of(cell % GRID_COLS, cell / GRID_COLS) == id {
                    new.push(old[(*g & !GRID_POINTER) as usize]);
                    *g = GRID_POINTER | (new.len() as u32 - 1);
                }
            }
            let mut i = 0;
            while i < new.len() {
                let v = new[i];
                if v >> 30 == NODE_INTERNAL {
                    let first = (v & NODE_CHILD) as usize;
                    let n = if v & NODE_WIDE != 0 { 16 } else { 4 };
                    let at = new.len() as u32;
                    new.extend_from_slice(&old[first..first + n]);
                    new[i] = (v & !NODE_CHILD) | at;
                }
                i += 1;
            }
            t.nodes = new;
        }
    }
}

/// One layer's leaf bytes over cell `r`, or `Err(value)` when the cell turns out uniform (the
/// candidates tile it and the last one became the default, see [`constant_parity`]).
fn leaf_bytes(
    stats: &mut BuildStats,
    layer: &Ranked,
    r: Rect,
    mut default: u16,
    cands: &[FeatState],
) -> Result<Vec<u8>, u16> {
    if cands.is_empty() {
        return Err(default);
    }
    let mut all: Vec<Vec<Vec<P>>> = cands
        .iter()
        .map(|f| f.rings.iter().flat_map(|ring| chains(ring, r)).collect())
        .collect();
    // Where the candidates tile the cell between them (a land border: A on one side, B on
    // the other), a point in none of the others is in the last one, which becomes the
    // default: half the edges stored and scanned.
    let mut cands = cands;
    if let Some(c) = constant_parity(&all, cands, r) {
        let last = cands[cands.len() - 1].rank as usize;
        if c {
            default = layer.order_to_feature[last];
        }
        cands = &cands[..cands.len() - 1];
        all.pop();
        stats.dropped_candidates += 1;
        if cands.is_empty() {
            return Err(default);
        }
    }
    // Local coordinates take as few whole bytes as the cell needs (most leaves: 3).
    let max = all
        .iter()
        .flatten()
        .flatten()
        .map(|&(x, y)| (x - r.x0).max(y - r.y0))
        .max()
        .unwrap_or(0);
    let bytes = coord_bytes(max);
    let mut out = Vec::new();
    out.extend(default.to_le_bytes());
    out.extend((cands.len() as u16 | ((4 - bytes as u16) << LEAF_WIDTH_SHIFT)).to_le_bytes());
    let mut edges = 0;
    for (f, chains) in cands.iter().zip(&all) {
        out.extend(layer.order_to_feature[f.rank as usize].to_le_bytes());
        out.extend([f.base as u8, 0]);
        out.extend((chains.len() as u16).to_le_bytes());
        for c in chains {
            out.extend((c.len() as u16).to_le_bytes());
            // All y first, then all x: the ray test reads every y but an x only for the
            // few edges that straddle the query's latitude.
            for &(_, y) in c {
                out.extend(&((y - r.y0) as u32).to_le_bytes()[..bytes]);
            }
            for &(x, _) in c {
                out.extend(&((x - r.x0) as u32).to_le_bytes()[..bytes]);
            }
            edges += c.len() - 1;
            stats.vertices += c.len();
        }
    }
    stats.leaves += 1;
    stats.coord_bytes_histogram[bytes - 2] += 1;
    stats.max_leaf_edges = stats.max_leaf_edges.max(edges);
    Ok(out)
}

fn coord_bytes(max: i64) -> usize {
    match max {
        0..=0xFFFF => 2,
        0x1_0000..=0xFF_FFFF => 3,
        _ => 4,
    }
}

fn quadrants(r: Rect) -> [Rect; 4] {
    let (mx, my) = ((r.x0 + r.x1) / 2, (r.y0 + r.y1) / 2);
    [
        Rect {
            x0: r.x0,
            y0: r.y0,
            x1: mx,
            y1: my,
        },
        Rect {
            x0: mx,
            y0: r.y0,
            x1: r.x1,
            y1: my,
        },
        Rect {
            x0: r.x0,
            y0: my,
            x1: mx,
            y1: r.y1,
        },
        Rect {
            x0: mx,
            y0: my,
            x1: r.x1,
            y1: r.y1,
        },
    ]
}

/// Clips every feature's rings to `r`; rings reduced to the cell outline fold into `base`.
fn clip_feats(feats: &[FeatState], r: Rect) -> Vec<FeatState> {
    let mut out = Vec::with_capacity(feats.len());
    for f in feats {
        let mut g = FeatState {
            rank: f.rank,
            base: f.base,
            rings: Vec::new(),
        };
        for ring in &f.rings {
            let Some(c) = clip_ring(ring, r) else {
                continue;
            };
            if c.windows(2).any(|w| !on_boundary(w[0], w[1], r)) {
                g.rings.push(c);
            } else {
                g.base ^= outline_parity(&c, r);
            }
        }
        if g.base || !g.rings.is_empty() {
            out.push(g);
        }
    }
    out
}

/// Edges of the candidates [`resolve`] would keep (those that can beat the smallest cover).
fn candidate_edges(feats: &[FeatState]) -> usize {
    let limit = feats
        .iter()
        .filter(|f| f.rings.is_empty() && f.base)
        .map(|f| f.rank)
        .min()
        .unwrap_or(u16::MAX);
    feats
        .iter()
        .filter(|f| f.rank < limit)
        .flat_map(|f| &f.rings)
        .map(|r| r.len() - 1)
        .sum()
}

/// True when the leaf of `r` stays within [`LEAF_EDGES`] once [`Builder::leaf`] stores a land
/// border from one side only. Counting both sides split land borders a level deeper than
/// maritime ones: twice the leaves and nodes for the same stored edges.
fn one_sided_fits(cands: &[FeatState], r: Rect, edges: usize) -> bool {
    let Some(last) = cands.last() else {
        return false;
    };
    let last_edges: usize = last.rings.iter().map(|r| r.len() - 1).sum();
    if edges - last_edges > LEAF_EDGES {
        return false;
    }
    let all: Vec<Vec<Vec<P>>> = cands
        .iter()
        .map(|f| f.rings.iter().flat_map(|ring| chains(ring, r)).collect())
        .collect();
    constant_parity(&all, cands, r).is_some()
}

/// [`one_sided_fits`] for a quadrant's unresolved features.
fn fits_after_resolve(feats: &[FeatState], r: Rect) -> bool {
    let (_, cands) = resolve(feats.to_vec());
    let edges = cands
        .iter()
        .flat_map(|f| &f.rings)
        .map(|r| r.len() - 1)
        .sum();
    one_sided_fits(&cands, r, edges)
}

/// Splits a cell's features into the smallest covering one (by rank) and the candidates that
/// can still beat it.
fn resolve(feats: Vec<FeatState>) -> (Option<u16>, Vec<FeatState>) {
    let default = feats
        .iter()
        .filter(|f| f.rings.is_empty() && f.base)
        .map(|f| f.rank)
        .min();
    let limit = default.unwrap_or(u16::MAX);
    let mut cands: Vec<FeatState> = feats
        .into_iter()
        .filter(|f| !f.rings.is_empty() && f.rank < limit)
        .collect();
    cands.sort_by_key(|f| f.rank);
    (default, cands)
}

fn on_boundary(a: P, b: P, r: Rect) -> bool {
    (a.0 == b.0 && (a.0 == r.x0 || a.0 == r.x1)) || (a.1 == b.1 && (a.1 == r.y0 || a.1 == r.y1))
}

/// A ring lying entirely on the cell outline winds k times around it; odd k covers the cell.
fn outline_parity(ring: &[P], r: Rect) -> bool {
    let area2: i128 = ring
        .windows(2)
        .map(|w| w[0].0 as i128 * w[1].1 as i128 - w[1].0 as i128 * w[0].1 as i128)
        .sum();
    let cell2 = 2 * (r.x1 - r.x0) as i128 * (r.y1 - r.y0) as i128;
    let k = (area2.abs() + cell2 / 2) / cell2;
    k % 2 == 1
}

/// Sutherland–Hodgman against the closed rectangle; returns a closed ring or `None` if nothing
/// of the ring can affect points inside `r`.
fn clip_ring(ring: &[P], r: Rect) -> Option<Vec<P>> {
    let (mut bx0, mut by0, mut bx1, mut by1) = (i64::MAX, i64::MAX, i64::MIN, i64::MIN);
    for &(x, y) in ring {
        bx0 = bx0.min(x);
        by0 = by0.min(y);
        bx1 = bx1.max(x);
        by1 = by1.max(y);
    }
    if bx1 < r.x0 || bx0 > r.x1 || by1 < r.y0 || by0 > r.y1 {
        return None;
    }
    if bx0 >= r.x0 && bx1 <= r.x1 && by0 >= r.y0 && by1 <= r.y1 {
        return Some(ring.to_vec());
    }
    let mut pts: Vec<P> = ring[..ring.len() - 1].to_vec();
    // A side the ring's box lies wholly inside would pass every point through unchanged: only
    // the sides the box crosses are clipped (the builder's hottest loop).
    let crossed = [bx0 < r.x0, bx1 > r.x1, by0 < r.y0, by1 > r.y1];
    for side in (0..4).filter(|&s| crossed[s]) {
        if pts.is_empty() {
            return None;
        }
        let inside = |p: P| match side {
            0 => p.0 >= r.x0,
            1 => p.0 <= r.x1,
            2 => p.1 >= r.y0,
            _ => p.1 <= r.y1,
        };
        let cut = |a: P, b: P| match side {
            0 => (r.x0, at(a, b, r.x0, true)),
            1 => (r.x1, at(a, b, r.x1, true)),
            2 => (at(a, b, r.y0, false), r.y0),
            _ => (at(a, b, r.y1, false), r.y1),
        };
        let mut out = Vec::with_capacity(pts.len() + 4);
        let mut prev = pts[pts.len() - 1];
        for &cur in &pts {
            match (inside(prev), inside(cur)) {
                (true, true) => out.push(cur),
                (true, false) => out.push(cut(prev, cur)),
                (false, true) => {
                    out.push(cut(prev, cur));
                    out.push(cur);
                }
                (false, false) => {}
            }
            prev = cur;
        }
        out.dedup();
        pts = out;
    }
    if pts.len() < 3 {
        return None;
    }
    pts.push(pts[0]);
    Some(pts)
}

/// The other coordinate where segment a→b meets the line `x = v` (or `y = v`), rounded to the
/// nearest grid unit (≤ 0.5 unit ≈ 1e-8° off the true edge).
fn at(a: P, b: P, v: i64, vertical: bool) -> i64 {
    // From the smaller end, so a border two features share (in opposite directions) is cut at
    // the same unit for both, and `constant_parity` sees the pieces cancel.
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    let (a0, a1, b0, b1) = if vertical {
        (a.0, a.1, b.0, b.1)
    } else {
        (a.1, a.0, b.1, b.0)
    };
    let num = (v - a0) as i128 * (b1 - a1) as i128;
    let den = (b0 - a0) as i128;
    let (num, den) = if den < 0 { (-num, -den) } else { (num, den) };
    let q = (2 * num + den).div_euclid(2 * den);
    a1 + q as i64
}

/// `Some(c)` when, for every point of `r`, the XOR of the candidates' insideness is the constant
/// `c`: their chain edges cancel in pairs (shared borders, stored once per side) except edges on
/// the east side, whose crossings are then either none or every height of the cell. Then a
/// point inside none of the other candidates is inside the last one exactly when `c` is true.
/// Exact: a segment's crossing test gives the same answer in either direction.
fn constant_parity(all: &[Vec<Vec<P>>], cands: &[FeatState], r: Rect) -> Option<bool> {
    let mut open = std::collections::HashSet::new();
    for seg in all.iter().flatten().flat_map(|c| c.windows(2)) {
        let k = if seg[0] < seg[1] {
            (seg[0], seg[1])
        } else {
            (seg[1], seg[0])
        };
        if !open.remove(&k) {
            open.insert(k);
        }
    }
    let mut toggles = Vec::new();
    for (a, b) in open {
        if a.0 != r.x1 || b.0 != r.x1 {
            return None;
        }
        toggles.extend([a.1, b.1]);
    }
    toggles.sort_unstable();
    let mut odd: Vec<i64> = Vec::new();
    for t in toggles {
        if odd.last() == Some(&t) {
            odd.pop();
        } else {
            odd.push(t);
        }
    }
    let east = match odd[..] {
        [] => false,
        [a, b] if a == r.y0 && b == r.y1 => true,
        _ => return None,
    };
    Some(cands.iter().fold(east, |c, f| c ^ f.base))
}

/// Splits a clipped ring into y-monotone chains of edges that can cross a ray towards +x from
/// inside the cell: horizontal edges and edges on the west side never do. A monotone chain
/// crosses a latitude at most once, so the reader tests its two ends and binary-searches the
/// one edge instead of scanning every vertex (near borders the scan was most of a lookup).
fn chains(ring: &[P], r: Rect) -> Vec<Vec<P>> {
    let mut out = Vec::new();
    let mut cur: Vec<P> = Vec::new();
    for w in ring.windows(2) {
        let (a, b) = (w[0], w[1]);
        let useless = a.1 == b.1 || (a.0 == r.x0 && b.0 == r.x0);
        if useless {
            if cur.len() >= 2 {
                out.push(std::mem::take(&mut cur));
            }
            cur.clear();
            continue;
        }
        if cur.len() >= 2 {
            let prev = cur[cur.len() - 2];
            // Direction changes at `a`: it ends this chain and starts the next one.
            if (prev.1 < a.1) != (a.1 < b.1) {
                out.push(std::mem::replace(&mut cur, vec![a]));
            }
        }
        if cur.is_empty() {
            cur.push(a);
        }
        cur.push(b);
    }
    if cur.len() >= 2 {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::{CountryIndex, GridPoint, LatLon};

    fn feature(a3: &str, pts: &[(f64, f64)], area: f64) -> SourceFeature {
        let mut ring: Vec<[f64; 2]> = pts.iter().map(|&(lon, lat)| [lon, lat]).collect();
        ring.push(ring[0]);
        SourceFeature {
            alpha3: a3.into(),
            alpha2: a3[..2].into(),
            parts: vec![vec![ring]],
            area,
        }
    }

    type Tiles<'a> = Vec<Option<crate::geo::Tile<&'a [u8]>>>;

    /// The built index and its tiles, read in place.
    fn open(built: &Built) -> (CountryIndex<&[u8]>, Tiles<'_>) {
        let index = CountryIndex::from_bytes(built.index.as_slice()).unwrap();
        let tiles = (0..N_TILES)
            .map(|t| {
                built.tiles[t]
                    .as_deref()
                    .map(|b| index.open_tile(t, b).unwrap())
            })
            .collect();
        (index, tiles)
    }

    fn inside(pts: &[(f64, f64)], lon: f64, lat: f64) -> bool {
        let mut c = false;
        for i in 0..pts.len() {
            let (a, b) = (pts[i], pts[(i + 1) % pts.len()]);
            if (a.1 > lat) != (b.1 > lat) && lon < a.0 + (lat - a.1) * (b.0 - a.0) / (b.1 - a.1) {
                c = !c;
            }
        }
        c
    }

    /// Two countries share a zigzag land border across a 3°×3° block (more than a top cell);
    /// sea around them. Cells that the two tile drop one side's edges (its country becomes the
    /// default), and every answer still matches plain point-in-polygon.
    #[test]
    fn shared_border_stores_one_side_and_answers_both() {
        let border = [(11.9, 10.0), (12.1, 11.9), (11.8, 13.0)];
        let a = [(10.0, 10.0), border[0], border[1], border[2], (10.0, 13.0)];
        let b = [border[0], (13.0, 10.0), (13.0, 13.0), border[2], border[1]];
        let features = [feature("AAA", &a, 0.45), feature("BBB", &b, 0.55)];
        let built = build(&features);
        assert!(built.stats.dropped_candidates > 0, "{:?}", built.stats);
        let (index, tiles) = open(&built);
        let (mut seen_a, mut seen_b, mut seen_sea) = (0, 0, 0);
        for i in 0..330 {
            for j in 0..330 {
                let (lon, lat) = (9.9 + i as f64 * 0.01 + 1e-4, 9.9 + j as f64 * 0.01 + 1e-4);
                let want = if inside(&a, lon, lat) {
                    seen_a += 1;
                    Some(0)
                } else if inside(&b, lon, lat) {
                    seen_b += 1;
                    Some(1)
                } else {
                    seen_sea += 1;
                    None
                };
                let p = GridPoint::from(LatLon::new(lat, lon).unwrap());
                let got = index.lookup_with(p, |t| tiles[t].as_ref()).unwrap();
                assert_eq!(got, want, "({lat}, {lon})");
            }
        }
        assert!(seen_a > 1000 && seen_b > 1000 && seen_sea > 1000);
    }

    /// A zone cut in two along a line (as geo-tz ships it) dissolves back into one ring: the
    /// cut's two copies cancel and the sides on either half merge.
    #[test]
    fn dissolve_removes_a_cut_and_keeps_the_outline() {
        let rect = |x0, y0, x1, y1| vec![(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)];
        let rings = dissolve(vec![rect(0, 0, 10, 4), rect(0, 4, 10, 9)]);
        assert_eq!(rings.len(), 1, "{rings:?}");
        let ring = &rings[0];
        assert_eq!((ring.len(), ring.first()), (5, ring.last()), "{ring:?}");
        let mut corners: Vec<P> = ring[..4].to_vec();
        corners.sort_unstable();
        assert_eq!(corners, vec![(0, 0), (0, 9), (10, 0), (10, 9)]);
        // A doubled diagonal cancels too; a ring touching nothing stays.
        let tri = vec![(20, 0), (30, 5), (20, 5), (20, 0)];
        let both = dissolve(vec![tri.clone(), tri.clone(), rect(40, 0, 41, 1)]);
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].len(), 5);
    }

    /// The combined layer on a tiny world: two countries with a zigzag border, two zones whose
    /// border crosses it (the west one cut in two along a parallel, as geo-tz ships it), and the
    /// open sea's bands (lon 7.5° is a band edge). Every (country, zone) pair matches plain
    /// point-in-polygon on the source, and the band of the longitude where no zone is.
    #[test]
    fn combined_layer_answers_both_layers() {
        let border = [(11.9, 10.0), (12.1, 11.9), (11.8, 13.0)];
        let a = [(10.0, 10.0), border[0], border[1], border[2], (10.0, 13.0)];
        let b = [border[0], (13.0, 10.0), (13.0, 13.0), border[2], border[1]];
        let countries = [feature("AAA", &a, 0.45), feature("BBB", &b, 0.55)];
        let west_lo = [(9.5, 9.5), (11.5, 9.5), (11.5, 11.7), (9.5, 11.7)];
        let west_hi = [(9.5, 11.7), (11.5, 11.7), (11.5, 13.5), (9.5, 13.5)];
        let east = [(11.5, 9.5), (13.5, 9.5), (13.6, 13.5), (11.5, 13.5)];
        let mut west = feature("Zone/West", &west_lo, 8.0);
        west.parts.extend(feature("ZZZ", &west_hi, 0.0).parts);
        let mut zones = vec![west, feature("Zone/East", &east, 8.1)];
        for (name, w, e) in super::super::zones::ocean_bands() {
            let mut f = feature("XXX", &[(w, -90.0), (e, -90.0), (e, 90.0), (w, 90.0)], 0.0);
            (f.alpha3, f.area) = (name, f64::INFINITY);
            zones.push(f);
        }
        zones.sort_by(|x, y| x.alpha3.cmp(&y.alpha3));
        let id = |name: &str| zones.iter().position(|f| f.alpha3 == name).unwrap() as u16;
        let built = build_combined(&countries, &zones);
        let (index, tiles) = open(&built);
        assert_eq!(index.pair_countries(), Some(2));
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..330 {
            for j in 0..330 {
                let (lon, lat) = (6.9 + i as f64 * 0.02 + 1e-4, 9.3 + j as f64 * 0.015 + 1e-4);
                let country = if inside(&a, lon, lat) {
                    Some(0)
                } else if inside(&b, lon, lat) {
                    Some(1)
                } else {
                    None
                };
                let zone = if inside(&west_lo, lon, lat) || inside(&west_hi, lon, lat) {
                    id("Zone/West")
                } else if inside(&east, lon, lat) {
                    id("Zone/East")
                } else if lon < 7.5 {
                    id("Etc/GMT")
                } else {
                    id("Etc/GMT-1")
                };
                let p = GridPoint::from(LatLon::new(lat, lon).unwrap());
                let got = index.lookup_pair_with(p, |t| tiles[t].as_ref()).unwrap();
                assert_eq!(got, (country, Some(zone)), "({lat}, {lon})");
                let batch = &mut [Ok((None, None))];
                index.lookup_pair_batch(&[p], |t| tiles[t].as_ref(), batch);
                assert_eq!(batch[0], Ok(got));
                seen.insert(got);
            }
        }
        // AA and BB each in both zones, sea in both zones and both bands.
        assert!(seen.len() >= 7, "{seen:?}");
    }
}
