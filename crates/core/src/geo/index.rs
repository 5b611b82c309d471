//! The runtime reader: opens `index.bin` and tiles in place and answers point queries.

use super::coord::GridPoint;
use super::format::*;

/// Why an asset could not be opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("not a country index asset (bad magic)")]
    /// The file does not start with the expected magic bytes.
    BadMagic,
    #[error("asset format version {actual}, expected {expected}")]
    /// The file was written by another format version.
    WrongVersion {
        /// Version this reader understands.
        expected: u32,
        /// Version found in the file.
        actual: u32,
    },
    #[error("asset length does not match its header")]
    /// The file is shorter or longer than its header says.
    Truncated,
    #[error("asset checksum mismatch")]
    /// The stored checksum does not match the bytes.
    ChecksumMismatch,
    #[error("tile {tile} does not match the index (length or checksum)")]
    /// A tile does not match the length/checksum pinned by the index.
    TileMismatch {
        /// Tile id.
        tile: usize,
    },
    #[error("asset is corrupt: {0}")]
    /// A structural invariant does not hold (offset out of bounds, bad tag…).
    Corrupt(&'static str),
}

/// A country as stored in the index: ISO 3166-1 alpha-2 and alpha-3 codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Country<'a> {
    /// ISO 3166-1 alpha-2 (`XK` for Kosovo, a user-assigned code).
    pub alpha2: &'a str,
    /// ISO 3166-1 alpha-3 (`XKX` for Kosovo).
    pub alpha3: &'a str,
}

/// Result of looking a point up in the top grid alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The answer: a country index, or `None` for sea.
    Done(Option<u16>),
    /// The point lies in a mixed cell whose detail is in this tile.
    NeedTile(usize),
}

fn check_header(b: &[u8], magic: &[u8; 8], header: usize) -> Result<(), LoadError> {
    if b.len() < header {
        return Err(LoadError::Truncated);
    }
    if b[..8] != magic[..] {
        return Err(LoadError::BadMagic);
    }
    let actual = u32_at(b, 8).ok_or(LoadError::Truncated)?;
    if actual != FORMAT_VERSION {
        return Err(LoadError::WrongVersion {
            expected: FORMAT_VERSION,
            actual,
        });
    }
    Ok(())
}

/// The top-level index: country table, tile table and the 256×128 top grid. Small (≈130 KB), so
/// it is all a cold isolate must fetch before answering most points.
///
/// The same reader opens the zone layer (`assets/tz`, [`ZONE_INDEX_MAGIC`]): there the ids are
/// time zones, named by [`zone`](Self::zone), and [`country`](Self::country) answers `None`.
pub struct CountryIndex<S: AsRef<[u8]>> {
    buf: S,
    n_countries: usize,
    tiles_off: usize,
    grid_off: usize,
    /// Offset of the zone names (zone layer only).
    names_off: Option<usize>,
    /// The open sea's zones (zone layer only): what [`SEA`] answers there.
    ocean: Option<Ocean>,
    /// Combined layer only: the number of countries in its (country, zone) pairs.
    pair_countries: Option<usize>,
}

/// What a tile's nodes and leaves hold: one layer's ids (fewer than the count), or pairs.
#[derive(Clone, Copy, Debug)]
enum Values {
    Single(usize),
    Pairs { countries: usize, zones: usize },
}

/// A (country, zone) pair from a uniform payload: `None` for sea / no land zone.
#[inline]
pub(crate) fn unpair(payload: u32) -> (Option<u16>, Option<u16>) {
    let zone = (payload >> 16) as u16 & PAIR_ZONE_SEA;
    (
        country_or_sea(payload as u16),
        (zone != PAIR_ZONE_SEA).then_some(zone),
    )
}

/// The zone layer's open sea: the ocean zone of a point follows from its longitude alone, so
/// the index stores no sea cells (a band edge every 7.5° + 15k of longitude, never on a cell
/// boundary, made every top cell it crosses mixed; with geo-tz's cut lines, which the builder
/// dissolves, that was 3 720 of the layer's 10 216 mixed top cells). Band edges are quantised like any
/// vertex, and a point on one belongs to the band to its east, as the rectangles' crossing rule
/// had it. Per top-grid column (1.4°, so at most one band edge): the west band's zone, the east
/// band's zone and the edge's x (`i64::MAX` for none): one load and one compare per point.
#[derive(Clone, Debug)]
struct Ocean {
    columns: Box<[(i64, u16, u16); GRID_COLS]>,
}

impl Ocean {
    /// Finds the 25 ocean zones by name in a zone table of `n` names.
    fn find(n: usize, name: impl Fn(u16) -> Option<String>) -> Result<Self, LoadError> {
        let mut ids = [u16::MAX; OCEAN_BANDS as usize];
        let wanted: Vec<String> = (-12..=12).map(ocean_zone_name).collect();
        for id in 0..n.min(usize::from(SEA)) as u16 {
            let Some(name) = name(id) else { continue };
            if let Some(k) = wanted.iter().position(|w| *w == name) {
                ids[k] = id;
            }
        }
        if ids.contains(&u16::MAX) {
            return Err(LoadError::Corrupt("zone table lacks an ocean zone"));
        }
        // Grid x of the west edge of bands -11..=12.
        let west: Vec<i64> = (-11..=12)
            .map(|k| super::coord::grid_x(ocean_band_west(k)))
            .collect();
        let band = |x: i64| ids[west.partition_point(|&w| w <= x)];
        let mut columns = Box::new([(i64::MAX, 0, 0); GRID_COLS]);
        for (col, c) in columns.iter_mut().enumerate() {
            let (x0, x1) = ((col as i64) << TOP_SHIFT, (col as i64 + 1) << TOP_SHIFT);
            let edge = west.iter().copied().find(|&w| x0 < w && w < x1);
            *c = (edge.unwrap_or(i64::MAX), band(x0), band(x1 - 1));
        }
        Ok(Ocean { columns })
    }

    /// The ocean zone at grid x.
    #[inline]
    fn at(&self, x: i64) -> u16 {
        let (edge, west, east) = self.columns[(x >> TOP_SHIFT) as usize & (GRID_COLS - 1)];
        if x < edge {
            west
        } else {
            east
        }
    }
}

/// The zone layer's index: a [`CountryIndex`] whose ids are IANA time zones.
pub type ZoneIndex<S> = CountryIndex<S>;

impl<S: AsRef<[u8]>> CountryIndex<S> {
    /// Opens `index.bin` in place, checking magic, version, length, checksum and every grid entry.
    ///
    /// # Errors
    /// [`LoadError`] describing the first problem found.
    pub fn from_bytes(buf: S) -> Result<Self, LoadError> {
        let b = buf.as_ref();
        let head = b.get(..8);
        let combined = head == Some(&COMBINED_INDEX_MAGIC[..]);
        let zones = combined || head == Some(&ZONE_INDEX_MAGIC[..]);
        let magic = match (combined, zones) {
            (true, _) => &COMBINED_INDEX_MAGIC,
            (false, true) => &ZONE_INDEX_MAGIC,
            (false, false) => &INDEX_MAGIC,
        };
        check_header(b, magic, INDEX_HEADER)?;
        let field = |i: usize| {
            u32_at(b, 12 + 4 * i)
                .map(|v| v as usize)
                .ok_or(LoadError::Truncated)
        };
        let (n_countries, cols, rows, cells, n_tiles) =
            (field(0)?, field(1)?, field(2)?, field(3)?, field(4)?);
        let (crc, body_len) = (field(5)? as u32, field(6)?);
        if (cols, rows, cells, n_tiles) != (GRID_COLS, GRID_ROWS, TILE_CELLS, N_TILES) {
            return Err(LoadError::Corrupt(
                "grid geometry differs from this reader's",
            ));
        }
        if INDEX_HEADER.checked_add(body_len) != Some(b.len()) {
            return Err(LoadError::Truncated);
        }
        let names_len = if zones { field(7)? } else { 0 };
        let pair_countries = if combined { Some(field(8)?) } else { None };
        let tiles_off = INDEX_HEADER + n_countries * 8;
        let grid_off = tiles_off + n_tiles * 8;
        let names_off = grid_off + GRID_COLS * GRID_ROWS * 4;
        if names_off.checked_add(names_len) != Some(b.len()) {
            return Err(LoadError::Truncated);
        }
        if crc32fast::hash(&b[INDEX_HEADER..]) != crc {
            return Err(LoadError::ChecksumMismatch);
        }
        let mut index = CountryIndex {
            buf,
            n_countries,
            tiles_off,
            grid_off,
            names_off: zones.then_some(names_off),
            ocean: None,
            pair_countries,
        };
        index.validate()?;
        if zones {
            let ocean = Ocean::find(n_countries, |id| index.zone(id).map(str::to_owned))?;
            index.ocean = Some(ocean);
        }
        Ok(index)
    }

    fn validate(&self) -> Result<(), LoadError> {
        let b = self.buf.as_ref();
        for i in 0..self.n_countries {
            if self.names_off.is_some() {
                if self.zone(i as u16).is_none() {
                    return Err(LoadError::Corrupt("zone name out of bounds or not ASCII"));
                }
                continue;
            }
            let rec = &b[INDEX_HEADER + i * 8..INDEX_HEADER + i * 8 + 5];
            if !rec.iter().all(u8::is_ascii_uppercase) {
                return Err(LoadError::Corrupt("country code is not A-Z"));
            }
        }
        for cell in 0..GRID_COLS * GRID_ROWS {
            let v = u32_at(b, self.grid_off + cell * 4).ok_or(LoadError::Truncated)?;
            let tile = tile_of(cell % GRID_COLS, cell / GRID_COLS);
            if v & GRID_POINTER != 0 {
                if self.tile_len(tile) == 0 {
                    return Err(LoadError::Corrupt("grid points into an empty tile"));
                }
            } else if !self.values().valid(v) {
                return Err(LoadError::Corrupt("grid entry names an unknown country"));
            }
        }
        Ok(())
    }

    fn values(&self) -> Values {
        match self.pair_countries {
            Some(countries) => Values::Pairs {
                countries,
                zones: self.n_countries,
            },
            None => Values::Single(self.n_countries),
        }
    }

    /// Combined layer: the number of countries its pairs name (their ids are the country
    /// layer's, so a caller checks the two were built together); `None` for other layers.
    pub fn pair_countries(&self) -> Option<usize> {
        self.pair_countries
    }

    /// Number of countries in the table.
    pub fn len(&self) -> usize {
        self.n_countries
    }

    /// True when the table is empty (never for a built asset).
    pub fn is_empty(&self) -> bool {
        self.n_countries == 0
    }

    /// The IANA name of zone `id` (zone layer), or `None` when out of range or a country index.
    pub fn zone(&self, id: u16) -> Option<&str> {
        let (id, names) = (id as usize, self.names_off?);
        if id >= self.n_countries {
            return None;
        }
        let b = self.buf.as_ref();
        let rec = INDEX_HEADER + id * 8;
        let (off, len) = (u32_at(b, rec)? as usize, u32_at(b, rec + 4)? as usize);
        let name = b.get(names + off..(names + off).checked_add(len)?)?;
        let ok = |c: &u8| c.is_ascii_alphanumeric() || b"/_+-".contains(c);
        if name.is_empty() || !name.iter().all(ok) {
            return None;
        }
        std::str::from_utf8(name).ok()
    }

    /// The codes of country `id`, or `None` when out of range or a zone index.
    pub fn country(&self, id: u16) -> Option<Country<'_>> {
        let id = id as usize;
        if id >= self.n_countries || self.names_off.is_some() {
            return None;
        }
        let rec = &self.buf.as_ref()[INDEX_HEADER + id * 8..INDEX_HEADER + id * 8 + 5];
        // Validated as ASCII A-Z at open, so both conversions succeed.
        Some(Country {
            alpha2: std::str::from_utf8(&rec[..2]).ok()?,
            alpha3: std::str::from_utf8(&rec[2..5]).ok()?,
        })
    }

    /// Byte length the index pins for `tile` (0 = the tile has no mixed cells and no file).
    pub fn tile_len(&self, tile: usize) -> usize {
        u32_at(self.buf.as_ref(), self.tiles_off + tile * 8).unwrap_or(0) as usize
    }

    fn tile_crc(&self, tile: usize) -> u32 {
        u32_at(self.buf.as_ref(), self.tiles_off + tile * 8 + 4).unwrap_or(0)
    }

    /// The answer for `p` where the layer has none: `None` (sea) for countries, the point's
    /// ocean zone for zones.
    #[inline]
    pub(crate) fn or_sea(&self, found: Option<u16>, p: GridPoint) -> Option<u16> {
        match (found, &self.ocean) {
            (None, Some(ocean)) => Some(ocean.at(p.x)),
            _ => found,
        }
    }

    /// Answers from the top grid alone, or names the tile that holds the detail.
    #[inline]
    pub fn probe(&self, p: GridPoint) -> Probe {
        let (col, row) = ((p.x >> TOP_SHIFT) as usize, (p.y >> TOP_SHIFT) as usize);
        let v = u32_at(
            self.buf.as_ref(),
            self.grid_off + (row * GRID_COLS + col) * 4,
        )
        .unwrap_or(0);
        if v & GRID_POINTER == 0 {
            Probe::Done(self.or_sea(country_or_sea(v as u16), p))
        } else {
            Probe::NeedTile(tile_of(col, row))
        }
    }

    /// The top-grid entry of `p` (`GRID_UNIFORM | value` or `GRID_POINTER | root`) and its tile.
    #[inline]
    pub(crate) fn grid_entry(&self, p: GridPoint) -> (u32, usize) {
        let (col, row) = ((p.x >> TOP_SHIFT) as usize, (p.y >> TOP_SHIFT) as usize);
        let v = u32_at(
            self.buf.as_ref(),
            self.grid_off + (row * GRID_COLS + col) * 4,
        )
        .unwrap_or(0);
        (v, tile_of(col, row))
    }

    /// Full lookup given access to loaded tiles; `None` from `tiles` means "not loaded".
    ///
    /// Returns `Err(tile)` when the needed tile is not loaded.
    #[inline]
    pub fn lookup_with<'t, T, F>(&self, p: GridPoint, tiles: F) -> Result<Option<u16>, usize>
    where
        T: AsRef<[u8]> + 't,
        F: FnOnce(usize) -> Option<&'t Tile<T>>,
    {
        // One read of the grid entry: the tile's walk starts from it.
        let (v, t) = self.grid_entry(p);
        if v & GRID_POINTER == 0 {
            return Ok(self.or_sea(country_or_sea(v as u16), p));
        }
        match tiles(t) {
            Some(tile) => Ok(self.or_sea(tile.descend((v & !GRID_POINTER) as usize, p), p)),
            None => Err(t),
        }
    }

    /// Looks `p` up in `tile`, which must be the tile [`probe`](Self::probe) named.
    #[inline]
    pub fn lookup_in_tile<T: AsRef<[u8]>>(&self, tile: &Tile<T>, p: GridPoint) -> Option<u16> {
        let (col, row) = ((p.x >> TOP_SHIFT) as usize, (p.y >> TOP_SHIFT) as usize);
        let v = u32_at(
            self.buf.as_ref(),
            self.grid_off + (row * GRID_COLS + col) * 4,
        )?;
        if v & GRID_POINTER == 0 {
            return self.or_sea(country_or_sea(v as u16), p);
        }
        self.or_sea(tile.descend((v & !GRID_POINTER) as usize, p), p)
    }

    /// Opens a tile fetched for `tile`, checking it against the length and checksum pinned here.
    ///
    /// # Errors
    /// [`LoadError`] when the bytes are not the tile this index expects or are malformed.
    pub fn open_tile<T: AsRef<[u8]>>(&self, tile: usize, buf: T) -> Result<Tile<T>, LoadError> {
        let b = buf.as_ref();
        if tile >= N_TILES
            || b.len() != self.tile_len(tile)
            || crc32fast::hash(b) != self.tile_crc(tile)
        {
            return Err(LoadError::TileMismatch { tile });
        }
        // The pinned checksum covers every byte, header included: the tile's own checksum
        // would be a second pass over up to 7 MB on a fresh isolate's first answer there.
        Tile::open(tile, buf, self.values(), Checked::ByIndex)
    }

    /// Combined layer: the (country, zone) pair of `p`, given access to loaded tiles (`None`
    /// from `tiles` means "not loaded"); a point with no land zone answers its ocean zone.
    ///
    /// Returns `Err(tile)` when the needed tile is not loaded.
    #[inline]
    pub fn lookup_pair_with<'t, T, F>(&self, p: GridPoint, tiles: F) -> PairAnswer
    where
        T: AsRef<[u8]> + 't,
        F: FnOnce(usize) -> Option<&'t Tile<T>>,
    {
        let (v, t) = self.grid_entry(p);
        if v & GRID_POINTER == 0 {
            return Ok(self.zone_or_ocean(unpair(v), p));
        }
        match tiles(t) {
            Some(tile) => {
                Ok(self.zone_or_ocean(tile.descend_pair((v & !GRID_POINTER) as usize, p), p))
            }
            None => Err(t),
        }
    }

    /// [`lookup_pair_with`](Self::lookup_pair_with) in `tile`, which must be the point's.
    #[inline]
    pub fn lookup_pair_in_tile<T: AsRef<[u8]>>(
        &self,
        tile: &Tile<T>,
        p: GridPoint,
    ) -> (Option<u16>, Option<u16>) {
        let (v, _) = self.grid_entry(p);
        let found = if v & GRID_POINTER == 0 {
            unpair(v)
        } else {
            tile.descend_pair((v & !GRID_POINTER) as usize, p)
        };
        self.zone_or_ocean(found, p)
    }

    #[inline]
    pub(crate) fn zone_or_ocean(
        &self,
        (country, zone): (Option<u16>, Option<u16>),
        p: GridPoint,
    ) -> (Option<u16>, Option<u16>) {
        (country, self.or_sea(zone, p))
    }
}

/// A combined lookup's answer: `Ok((country, zone))`, or `Err(tile)` when that tile is needed.
pub type PairAnswer = Result<(Option<u16>, Option<u16>), usize>;

#[inline]
pub(crate) fn country_or_sea(v: u16) -> Option<u16> {
    (v != SEA).then_some(v)
}

/// One tile: the quadtrees and leaves of its mixed top cells, read in place.
pub struct Tile<S: AsRef<[u8]>> {
    buf: S,
    n_nodes: usize,
}

impl Values {
    /// Whether a uniform payload names known ids.
    fn valid(self, v: u32) -> bool {
        match self {
            Values::Single(n) => v <= 0xFFFF && (v as u16 == SEA || (v as usize) < n),
            Values::Pairs { countries, zones } => {
                let (c, z) = (v as u16, (v >> 16) as u16);
                v < 1 << 30
                    && (c == SEA || usize::from(c) < countries)
                    && (z == PAIR_ZONE_SEA || usize::from(z) < zones)
            }
        }
    }
}

/// Whether a tile's bytes were already checked against a checksum over the whole file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Checked {
    /// By the index's pinned length and CRC ([`CountryIndex::open_tile`]).
    ByIndex,
    /// Not yet: the tile's own checksum is checked.
    No,
}

impl<S: AsRef<[u8]>> Tile<S> {
    /// Opens and fully validates a tile so later lookups cannot go out of bounds.
    ///
    /// # Errors
    /// [`LoadError`] describing the first problem found.
    pub fn from_bytes(id: usize, buf: S, n_countries: usize) -> Result<Self, LoadError> {
        Self::open(id, buf, Values::Single(n_countries), Checked::No)
    }

    fn open(id: usize, buf: S, values: Values, checked: Checked) -> Result<Self, LoadError> {
        let b = buf.as_ref();
        check_header(b, &TILE_MAGIC, TILE_HEADER)?;
        let field = |i: usize| {
            u32_at(b, 12 + 4 * i)
                .map(|v| v as usize)
                .ok_or(LoadError::Truncated)
        };
        let (tile_id, n_nodes, leaf_len, crc) = (field(0)?, field(1)?, field(2)?, field(3)? as u32);
        if tile_id != id {
            return Err(LoadError::TileMismatch { tile: id });
        }
        let expected = n_nodes
            .checked_mul(4)
            .and_then(|n| n.checked_add(leaf_len))
            .and_then(|n| n.checked_add(TILE_HEADER));
        if expected != Some(b.len()) {
            return Err(LoadError::Truncated);
        }
        if checked == Checked::No && crc32fast::hash(&b[TILE_HEADER..]) != crc {
            return Err(LoadError::ChecksumMismatch);
        }
        let tile = Tile { buf, n_nodes };
        tile.validate(values)?;
        Ok(tile)
    }

    fn leaves(&self) -> &[u8] {
        &self.buf.as_ref()[TILE_HEADER + self.n_nodes * 4..]
    }

    fn node(&self, i: usize) -> u32 {
        // A root comes from the index's grid, not from this tile: one past the node array must
        // not read leaf bytes as a node (found by fuzzing, fuzz/regressions/geo_tile/).
        if i >= self.n_nodes {
            return SEA as u32;
        }
        u32_at(self.buf.as_ref(), TILE_HEADER + i * 4).unwrap_or(SEA as u32)
    }

    fn validate(&self, values: Values) -> Result<(), LoadError> {
        let leaves = self.leaves();
        for i in 0..self.n_nodes {
            let v = self.node(i);
            let payload = (v & NODE_PAYLOAD) as usize;
            match v >> 30 {
                NODE_UNIFORM if values.valid(payload as u32) => {}
                NODE_INTERNAL
                    if internal_children(v) + (v & NODE_CHILD) as usize <= self.n_nodes => {}
                NODE_LEAF => match values {
                    Values::Single(n) => {
                        validate_leaf(leaves, payload, &|v| v == SEA || (v as usize) < n)?;
                    }
                    Values::Pairs { countries, zones } => {
                        let bad = LoadError::Corrupt("leaf out of bounds");
                        let len = u16_at(leaves, payload).ok_or(bad.clone())?;
                        let zone_at = payload + 2 + usize::from(len);
                        let ok_c = |v: u16| v == SEA || (v as usize) < countries;
                        if validate_leaf(leaves, payload + 2, &ok_c)? != zone_at {
                            return Err(LoadError::Corrupt("leaf's country part length"));
                        }
                        validate_leaf(leaves, zone_at, &|v| v == SEA || (v as usize) < zones)?;
                    }
                },
                _ => return Err(LoadError::Corrupt("bad node")),
            }
        }
        Ok(())
    }

    /// The root node value of grid cell entry `entry` (a `GRID_POINTER` entry's low bits).
    #[inline]
    pub(crate) fn root(&self, entry: u32) -> u32 {
        self.node((entry & !GRID_POINTER) as usize)
    }

    /// One descent step from internal node `v` at `shift`: the child holding `p` and its shift.
    /// `None` when a corrupt tree would go below level 0.
    #[inline]
    pub(crate) fn step(&self, v: u32, shift: u32, p: GridPoint) -> Option<(u32, u32)> {
        let k = 1 + (v & NODE_WIDE != 0) as u32;
        let shift = shift.checked_sub(k)?;
        let m = (1 << k) - 1;
        let q = ((((p.y >> shift) & m) << k) | ((p.x >> shift) & m)) as usize;
        Some((self.node((v & NODE_CHILD) as usize + q), shift))
    }

    /// Touches the first cache lines of the leaf of node `v` (an independent load per line), so
    /// a batch can have many leaves in flight before it tests them one by one.
    #[inline]
    pub(crate) fn touch_leaf(&self, v: u32) -> u8 {
        let (leaves, off) = (self.leaves(), (v & NODE_PAYLOAD) as usize);
        let mut acc = 0;
        for line in 0..LEAF_TOUCH_LINES {
            acc ^= leaves.get(off + 64 * line).copied().unwrap_or(0);
        }
        acc
    }

    /// The answer at node `v` (a leaf or uniform node) reached at `shift`.
    #[inline]
    pub(crate) fn finish(&self, v: u32, shift: u32, p: GridPoint) -> Option<u16> {
        let payload = v & NODE_PAYLOAD;
        if v >> 30 == NODE_UNIFORM {
            return country_or_sea(payload as u16);
        }
        let mask = (1i64 << shift) - 1;
        leaf_lookup(self.leaves(), payload as usize, p.x & mask, p.y & mask)
    }

    /// Combined layer: the pair at node `v` (a leaf or uniform node) reached at `shift`.
    #[inline]
    pub(crate) fn finish_pair(
        &self,
        v: u32,
        shift: u32,
        p: GridPoint,
    ) -> (Option<u16>, Option<u16>) {
        let payload = v & NODE_PAYLOAD;
        if v >> 30 == NODE_UNIFORM {
            return unpair(payload);
        }
        let (leaves, off) = (self.leaves(), payload as usize);
        let mask = (1i64 << shift) - 1;
        let (x, y) = (p.x & mask, p.y & mask);
        let Some(len) = u16_at(leaves, off) else {
            return (None, None);
        };
        (
            leaf_part(leaves, off + 2, x, y),
            leaf_part(leaves, off + 2 + usize::from(len), x, y),
        )
    }

    /// Combined layer: walks from `root` to the node holding `p` and answers its pair.
    #[inline]
    fn descend_pair(&self, root: usize, p: GridPoint) -> (Option<u16>, Option<u16>) {
        let (mut v, mut shift) = (self.node(root), TOP_SHIFT);
        while v >> 30 == NODE_INTERNAL {
            match self.step(v, shift, p) {
                Some(next) => (v, shift) = next,
                None => return (None, None),
            }
        }
        self.finish_pair(v, shift, p)
    }

    /// Walks the quadtree from `root` to the leaf holding `p`.
    #[inline]
    fn descend(&self, root: usize, p: GridPoint) -> Option<u16> {
        let (mut v, mut shift) = (self.node(root), TOP_SHIFT);
        while v >> 30 == NODE_INTERNAL {
            // `None` guards a cyclic (corrupt) tree; a well-formed one bottoms out long before.
            (v, shift) = self.step(v, shift, p)?;
        }
        self.finish(v, shift, p)
    }
}

/// Cache lines of a leaf a batch touches ahead of the test: a leaf averages ~80 bytes (build
/// stats: 14 MB of leaves over 183 000 leaves) and can start anywhere in a line.
const LEAF_TOUCH_LINES: usize = 4;

/// Children of an internal node: 4, or 16 when it is wide.
fn internal_children(v: u32) -> usize {
    if v & NODE_WIDE != 0 {
        16
    } else {
        4
    }
}

fn validate_leaf(
    leaves: &[u8],
    mut off: usize,
    ok_country: &dyn Fn(u16) -> bool,
) -> Result<usize, LoadError> {
    let bad = LoadError::Corrupt("leaf out of bounds");
    let default = u16_at(leaves, off).ok_or(bad.clone())?;
    let n = u16_at(leaves, off + 2).ok_or(bad.clone())?;
    let width = 2 * (4 - (n >> LEAF_WIDTH_SHIFT) as usize);
    if width < 4 {
        return Err(LoadError::Corrupt("bad coordinate width"));
    }
    let n = n & LEAF_COUNT_MASK;
    if !ok_country(default) {
        return Err(LoadError::Corrupt("leaf names an unknown country"));
    }
    off += 4;
    for _ in 0..n {
        let c = u16_at(leaves, off).ok_or(bad.clone())?;
        let chains = u16_at(leaves, off + 4).ok_or(bad.clone())?;
        if c == SEA || !ok_country(c) {
            return Err(LoadError::Corrupt("leaf names an unknown country"));
        }
        off += 6;
        for _ in 0..chains {
            let len = u16_at(leaves, off).ok_or(bad.clone())? as usize;
            let pts = leaves
                .get(off + 2..off + 2 + len * width)
                .ok_or(bad.clone())?;
            // Unsigned 4-byte coordinates must stay below 2^31 so the crossing products in
            // `chain_parity` fit i64; narrower ones always do (found by fuzzing,
            // fuzz/regressions/geo_tile/).
            if width == 8 && pts.chunks_exact(4).any(|c| c[3] >= 0x80) {
                return Err(LoadError::Corrupt("leaf coordinate out of range"));
            }
            off += 2 + len * width;
        }
    }
    Ok(off)
}

/// One layer's part of a combined leaf: a part without candidates (the layer is uniform in the
/// cell: the country part of a third of the assets' combined leaves, along zone borders inside a
/// country and zone-only coast lines) answers its default without entering [`leaf_lookup`].
#[inline(always)]
fn leaf_part(b: &[u8], off: usize, x: i64, y: i64) -> Option<u16> {
    match u16_at(b, off + 2)? & LEAF_COUNT_MASK {
        0 => country_or_sea(u16_at(b, off)?),
        _ => leaf_lookup(b, off, x, y),
    }
}

/// Point-in-leaf: candidates are in ascending area order, so the first one containing the point
/// is the answer. `x`, `y` are cell-local; all products fit i64 (coordinates < 2^31, checked at
/// open).
#[inline]
fn leaf_lookup(b: &[u8], mut off: usize, x: i64, y: i64) -> Option<u16> {
    let default = u16_at(b, off)?;
    let n = u16_at(b, off + 2)?;
    let bytes = 4 - (n >> LEAF_WIDTH_SHIFT) as usize;
    let width = 2 * bytes;
    let n = n & LEAF_COUNT_MASK;
    off += 4;
    for _ in 0..n {
        let country = u16_at(b, off)?;
        let mut inside = *b.get(off + 2)? != 0;
        let chains = u16_at(b, off + 4)?;
        off += 6;
        for _ in 0..chains {
            let len = u16_at(b, off)? as usize;
            let pts = b.get(off + 2..off + 2 + len * width)?;
            off += 2 + len * width;
            inside ^= match bytes {
                2 => chain_parity::<2>(pts, x, y),
                3 => chain_parity::<3>(pts, x, y),
                _ => chain_parity::<4>(pts, x, y),
            };
        }
        if inside {
            return Some(country);
        }
    }
    country_or_sea(default)
}

/// Parity of crossings between the ray from (x, y) towards +x and a y-monotone chain of `n`
/// vertices stored as n `B`-byte little-endian y values then n x values. A vertex exactly at
/// height `y` counts as above, so shared vertices are counted once. A monotone chain straddles
/// `y` at most once: its ends tell whether it does, a binary search finds the edge. (A corrupt,
/// non-monotone chain gives a wrong answer, never a panic; tiles are checksummed.)
#[inline]
fn chain_parity<const B: usize>(pts: &[u8], x: i64, y: i64) -> bool {
    #[inline(always)]
    fn at<const B: usize>(b: &[u8], i: usize) -> i64 {
        let mut v = [0u8; 8];
        v[..B].copy_from_slice(&b[i * B..i * B + B]);
        i64::from_le_bytes(v)
    }
    let n = pts.len() / (2 * B);
    let (ys, xs) = pts.split_at(n * B);
    if n < 2 || xs.len() < n * B {
        return false;
    }
    let first_above = at::<B>(ys, 0) > y;
    if first_above == (at::<B>(ys, n - 1) > y) {
        return false;
    }
    // Invariant: vertex lo is on the first vertex's side of y, vertex hi is not.
    let (mut lo, mut hi) = (0, n - 1);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if (at::<B>(ys, mid) > y) == first_above {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (ay, by) = (at::<B>(ys, lo), at::<B>(ys, hi));
    let (ax, bx) = (at::<B>(xs, lo), at::<B>(xs, hi));
    let dy = by - ay;
    let cross = (bx - ax) * (y - ay) - (x - ax) * dy;
    cross != 0 && (cross > 0) == (dy > 0)
}

// The hand-made world below, for the tile cache's tests.
#[cfg(test)]
pub(crate) use tests::{mixed_tile_id, world};

/// The reader on hand-made bytes (no builder): a world of four quadrants, one mixed cell
/// holding a square, and every header field broken once.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::{GridPoint, LatLon, WORLD_H, WORLD_W};

    const CELL: i64 = 1 << TOP_SHIFT;
    /// The mixed cell: just east of lon 0, just north of the equator.
    const MIXED: (usize, usize) = (GRID_COLS / 2, GRID_ROWS / 2);

    /// ```text
    ///   lat > 0:  AA (west) | BB (east)      country ids 0, 1
    ///   lat < 0:  sea       | CC             id 2
    /// ```
    /// and cell `MIXED` points into its tile, whose one leaf holds a CC square in the middle
    /// half of the cell (sea around it).
    fn quadrant(col: usize, row: usize) -> u32 {
        if (col, row) == MIXED {
            return GRID_POINTER;
        }
        let east = col >= GRID_COLS / 2;
        match (row >= GRID_ROWS / 2, east) {
            (true, false) => 0,
            (true, true) => 1,
            (false, false) => u32::from(SEA),
            (false, true) => 2,
        }
    }

    pub(crate) fn mixed_tile_id() -> usize {
        tile_of(MIXED.0, MIXED.1)
    }

    /// Tile bytes: header, one leaf node, one leaf (4-byte coordinates) with a square
    /// `[CELL/4, 3·CELL/4)²` of country 2 as two vertical chains.
    fn tile_bytes(id: usize) -> Vec<u8> {
        let (lo, hi) = ((CELL / 4) as u32, (3 * CELL / 4) as u32);
        let mut leaf = Vec::new();
        leaf.extend(SEA.to_le_bytes()); // default
        leaf.extend(1u16.to_le_bytes()); // one candidate, 4-byte coordinates
        leaf.extend(2u16.to_le_bytes()); // country
        leaf.extend([0u8, 0]); // base parity, pad
        leaf.extend(2u16.to_le_bytes()); // chains
        for x in [lo, hi] {
            leaf.extend(2u16.to_le_bytes());
            for v in [lo, hi, x, x] {
                leaf.extend(v.to_le_bytes());
            }
        }
        let nodes = (NODE_LEAF << 30).to_le_bytes();
        let mut body = nodes.to_vec();
        body.extend(&leaf);
        let mut b = TILE_MAGIC.to_vec();
        let fields = [
            FORMAT_VERSION,
            id as u32,
            1,
            leaf.len() as u32,
            crc32fast::hash(&body),
        ];
        for v in fields {
            b.extend(v.to_le_bytes());
        }
        b.resize(TILE_HEADER, 0);
        b.extend(body);
        b
    }

    /// `index.bin` from its parts, header and checksum computed.
    fn index_bytes(codes: &[&str], cell: impl Fn(usize, usize) -> u32, tile: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for c in codes {
            body.extend(c.as_bytes());
            body.extend([0u8; 3]);
        }
        for t in 0..N_TILES {
            let (len, crc) = if t == mixed_tile_id() {
                (tile.len() as u32, crc32fast::hash(tile))
            } else {
                (0, 0)
            };
            body.extend(len.to_le_bytes());
            body.extend(crc.to_le_bytes());
        }
        for row in 0..GRID_ROWS {
            for col in 0..GRID_COLS {
                body.extend(cell(col, row).to_le_bytes());
            }
        }
        let mut b = INDEX_MAGIC.to_vec();
        let geometry = [GRID_COLS, GRID_ROWS, TILE_CELLS, N_TILES].map(|v| v as u32);
        b.extend(FORMAT_VERSION.to_le_bytes());
        b.extend((codes.len() as u32).to_le_bytes());
        for v in geometry {
            b.extend(v.to_le_bytes());
        }
        b.extend(crc32fast::hash(&body).to_le_bytes());
        b.extend((body.len() as u32).to_le_bytes());
        b.resize(INDEX_HEADER, 0);
        b.extend(body);
        b
    }

    /// The world's `index.bin` and the mixed cell's tile.
    pub(crate) fn world() -> (Vec<u8>, Vec<u8>) {
        let tile = tile_bytes(mixed_tile_id());
        (
            index_bytes(&["AAAAA", "BBBBB", "CCCCC"], quadrant, &tile),
            tile,
        )
    }

    fn at(lat: f64, lon: f64) -> GridPoint {
        LatLon::new(lat, lon).unwrap().into()
    }

    fn code<S: AsRef<[u8]>>(index: &CountryIndex<S>, answer: Option<u16>) -> Option<&str> {
        answer.map(|c| index.country(c).unwrap().alpha2)
    }

    #[test]
    fn quadrants_answer_from_the_grid_alone() {
        let (bytes, _) = world();
        let index = CountryIndex::from_bytes(bytes.as_slice()).unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(
            index.country(1),
            Some(Country {
                alpha2: "BB",
                alpha3: "BBB"
            })
        );
        assert_eq!(index.country(3), None);
        let done = |lat, lon| match index.probe(at(lat, lon)) {
            Probe::Done(c) => code(&index, c),
            Probe::NeedTile(t) => panic!("({lat}, {lon}) needs tile {t}"),
        };
        assert_eq!(done(45.0, -90.0), Some("AA"));
        assert_eq!(done(45.0, 90.0), Some("BB"));
        assert_eq!(done(-45.0, -90.0), None);
        assert_eq!(done(-45.0, 90.0), Some("CC"));
        // Poles fall into the top and bottom rows.
        assert_eq!(done(90.0, 10.0), Some("BB"));
        assert_eq!(done(-90.0, 10.0), Some("CC"));
        // The antimeridian: lon 180 is lon −180, the west edge of column 0.
        assert_eq!(done(45.0, 180.0), Some("AA"));
        assert_eq!(done(45.0, -180.0), Some("AA"));
        assert_eq!(done(45.0, 179.999), Some("BB"));
    }

    #[test]
    fn cell_edges_belong_to_the_cell_to_their_north_east() {
        let (bytes, _) = world();
        let index = CountryIndex::from_bytes(bytes.as_slice()).unwrap();
        let probe = |x: i64, y: i64| index.probe(GridPoint { x, y });
        let (mid_x, mid_y) = (WORLD_W / 2, WORLD_H / 2);
        // One unit west of the meridian is AA, on it the mixed cell (its tile).
        assert_eq!(probe(mid_x - 1, mid_y + CELL), Probe::Done(Some(0)));
        assert_eq!(probe(mid_x, mid_y), Probe::NeedTile(mixed_tile_id()));
        assert_eq!(probe(mid_x + CELL, mid_y), Probe::Done(Some(1)));
        assert_eq!(probe(mid_x + CELL, mid_y - 1), Probe::Done(Some(2)));
        assert_eq!(probe(0, 0), Probe::Done(None));
        assert_eq!(probe(WORLD_W - 1, WORLD_H - 1), Probe::Done(Some(1)));
    }

    #[test]
    fn a_mixed_cell_answers_from_its_tile() {
        let (bytes, tile_bytes) = world();
        let index = CountryIndex::from_bytes(bytes.as_slice()).unwrap();
        let id = mixed_tile_id();
        let p = |dx: i64, dy: i64| GridPoint {
            x: (MIXED.0 as i64) * CELL + dx,
            y: (MIXED.1 as i64) * CELL + dy,
        };
        assert_eq!(
            index.lookup_with::<&[u8], _>(p(CELL / 2, CELL / 2), |_| None),
            Err(id)
        );
        let tile = index.open_tile(id, tile_bytes.as_slice()).unwrap();
        let look =
            |dx, dy| index.lookup_with::<&[u8], _>(p(dx, dy), |t| (t == id).then_some(&tile));
        assert_eq!(look(CELL / 2, CELL / 2), Ok(Some(2)));
        // The square's west and south edges are in, its east and north edges out.
        assert_eq!(look(CELL / 4, CELL / 2), Ok(Some(2)));
        assert_eq!(look(3 * CELL / 4, CELL / 2), Ok(None));
        assert_eq!(look(CELL / 2, CELL / 4), Ok(Some(2)));
        assert_eq!(look(CELL / 2, 3 * CELL / 4), Ok(None));
        assert_eq!(look(0, 0), Ok(None));
        assert_eq!(look(CELL - 1, CELL - 1), Ok(None));
        // A uniform cell needs no tile even when one is offered.
        assert_eq!(
            index.lookup_with::<&[u8], _>(
                GridPoint {
                    x: 0,
                    y: WORLD_H - 1
                },
                |_| Some(&tile)
            ),
            Ok(Some(0))
        );
    }

    #[test]
    fn broken_headers_are_refused_with_their_reason() {
        let (good, tile) = world();
        let open = |b: &[u8]| CountryIndex::from_bytes(b).err();
        let edit = |off: usize, v: u32| {
            let mut b = good.clone();
            b[off..off + 4].copy_from_slice(&v.to_le_bytes());
            b
        };
        assert_eq!(open(&good), None);
        assert_eq!(open(&good[..INDEX_HEADER - 1]), Some(LoadError::Truncated));
        assert_eq!(open(&good[..good.len() - 1]), Some(LoadError::Truncated));
        assert_eq!(open(b""), Some(LoadError::Truncated));
        let mut magic = good.clone();
        magic[0] = b'X';
        assert_eq!(open(&magic), Some(LoadError::BadMagic));
        assert_eq!(
            open(&edit(8, 4)),
            Some(LoadError::WrongVersion {
                expected: FORMAT_VERSION,
                actual: 4
            })
        );
        assert!(matches!(open(&edit(16, 128)), Some(LoadError::Corrupt(_))));
        assert_eq!(open(&edit(36, u32::MAX)), Some(LoadError::Truncated));
        // One more country than the table holds: the offsets no longer add up.
        assert_eq!(open(&edit(12, 4)), Some(LoadError::Truncated));
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(open(&flipped), Some(LoadError::ChecksumMismatch));
        // Valid checksums over invalid content.
        let unknown = index_bytes(&["AAAAA"], quadrant, &tile);
        assert_eq!(
            open(&unknown),
            Some(LoadError::Corrupt("grid entry names an unknown country"))
        );
        let lower = index_bytes(&["AAAAA", "BbBBB", "CCCCC"], quadrant, &tile);
        assert_eq!(
            open(&lower),
            Some(LoadError::Corrupt("country code is not A-Z"))
        );
        let dangling = index_bytes(&["AAAAA", "BBBBB", "CCCCC"], quadrant, &[]);
        assert_eq!(
            open(&dangling),
            Some(LoadError::Corrupt("grid points into an empty tile"))
        );
    }

    #[test]
    fn a_tile_must_be_the_one_the_index_pins() {
        let (bytes, good) = world();
        let index = CountryIndex::from_bytes(bytes.as_slice()).unwrap();
        let id = mixed_tile_id();
        let mismatch = Some(LoadError::TileMismatch { tile: id });
        assert!(index.open_tile(id, good.as_slice()).is_ok());
        assert_eq!(index.open_tile(id, &good[..good.len() - 1]).err(), mismatch);
        let mut flipped = good.clone();
        flipped[TILE_HEADER] ^= 1;
        assert_eq!(index.open_tile(id, flipped.as_slice()).err(), mismatch);
        assert_eq!(
            index.open_tile(id + 1, good.as_slice()).err(),
            Some(LoadError::TileMismatch { tile: id + 1 })
        );
        assert_eq!(
            index.open_tile(N_TILES, good.as_slice()).err(),
            Some(LoadError::TileMismatch { tile: N_TILES })
        );
        // Past the index's pin, the tile's own header: its id, and its leaf's country.
        assert_eq!(
            Tile::from_bytes(id + 1, good.as_slice(), 3).err(),
            Some(LoadError::TileMismatch { tile: id + 1 })
        );
        assert_eq!(
            Tile::from_bytes(id, good.as_slice(), 2).err(),
            Some(LoadError::Corrupt("leaf names an unknown country"))
        );
        assert_eq!(
            Tile::from_bytes(id, &good[..TILE_HEADER - 1], 3).err(),
            Some(LoadError::Truncated)
        );
    }
}
