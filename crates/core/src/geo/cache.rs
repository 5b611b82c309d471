//! The geo data an isolate serves, as a platform-free cache: both layers' indexes, opened from
//! bytes the caller holds on first use (the combined country-and-zone layer only when a zone is
//! asked for, so `fields=country` never opens it), and their tiles, fetched through a
//! [`TileSource`] when a point first needs one and verified against the pin the index holds.
//! The worker adapter implements [`TileSource`] over the assets binding and keeps one
//! [`Layers`] per isolate; the unit tests drive it over memory.
//!
//! The policy:
//! - A tile is fetched at most once per isolate while requests do not overlap; it is kept for
//!   the isolate's life. Nothing is evicted: a layer has [`N_TILES`] tiles, the whole set is
//!   the asset build's (the country leaves are ≈ 14 MB, far under an isolate's 128 MB), and an
//!   isolate lives minutes to hours.
//! - Two overlapping requests that miss the same tile may both fetch it; the first to finish
//!   is kept, and only the kept bytes count in [`Stats::tile_bytes_loaded`].
//! - A tile (or an index) that fails verification is [`Rejected`] and not kept, so the next
//!   request reads it again (a redeploy heals a bad read); a source's read error passes through
//!   as [`GeoError::Read`].

use super::coord::{GridPoint, LatLon};
use super::format::{self, N_TILES};
use super::index::{Country, CountryIndex, LoadError, Tile, ZoneIndex};
use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;

/// The country layer's index, under the assets root.
pub const INDEX_PATH: &str = "geo/index.bin";
/// The combined (country, zone) layer's index, under the assets root.
pub const ZONE_INDEX_PATH: &str = "tz/index.bin";

/// Where tiles come from (the assets binding in the worker).
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait TileSource {
    /// Why a read failed (a missing tile is an error too: every tile the index pins is built).
    type Error;
    /// The bytes of the asset at `path` (`geo/tile-3.bin`).
    async fn fetch(&self, path: &str) -> Result<Vec<u8>, Self::Error>;
}

/// An index or tile that failed verification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {error}")]
pub struct Rejected {
    /// The asset's path (`geo/tile-3.bin`, [`INDEX_PATH`]).
    pub path: String,
    /// What is wrong with it.
    pub error: LoadError,
}

/// Why a lookup could not answer.
#[derive(Debug, PartialEq, Eq)]
pub enum GeoError<E> {
    /// The source could not read a tile.
    Read(E),
    /// An index or tile that does not verify.
    Rejected(Rejected),
}

impl<E> From<Rejected> for GeoError<E> {
    fn from(r: Rejected) -> Self {
        Self::Rejected(r)
    }
}

/// What health reports of the country layer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Countries in the index.
    pub countries: usize,
    /// Size of the index bytes.
    pub index_bytes: usize,
    /// Milliseconds spent opening (validating) the index, by the [`Layers`] clock.
    pub index_open_ms: f64,
    /// Tiles kept so far.
    pub tiles_loaded: usize,
    /// Their bytes.
    pub tile_bytes_loaded: usize,
}

/// A tile once fetched and verified, shared by the requests of one isolate.
type Slot = Option<Rc<Tile<Vec<u8>>>>;

/// One layer: its index and the tiles kept so far.
struct Layer<S: AsRef<[u8]>> {
    index: CountryIndex<S>,
    dir: &'static str,
    tiles: RefCell<Vec<Slot>>,
    tile_bytes: Cell<usize>,
}

impl<S: AsRef<[u8]>> Layer<S> {
    fn new(index: CountryIndex<S>, dir: &'static str) -> Self {
        Self {
            index,
            dir,
            tiles: RefCell::new((0..N_TILES).map(|_| None).collect()),
            tile_bytes: Cell::new(0),
        }
    }

    fn loaded(&self) -> usize {
        self.tiles.borrow().iter().filter(|t| t.is_some()).count()
    }

    /// Tile `id`, kept or fetched, verified and kept.
    async fn tile<T: TileSource>(
        &self,
        src: &T,
        id: usize,
    ) -> Result<Rc<Tile<Vec<u8>>>, GeoError<T::Error>> {
        if let Some(t) = self.tiles.borrow().get(id).cloned().flatten() {
            return Ok(t);
        }
        let path = format!("{}/{}", self.dir, format::tile_file_name(id));
        let bytes = src.fetch(&path).await.map_err(GeoError::Read)?;
        let n = bytes.len();
        let opened = self.index.open_tile(id, bytes);
        let t = Rc::new(opened.map_err(|error| Rejected { path, error })?);
        let mut tiles = self.tiles.borrow_mut();
        if tiles[id].is_none() {
            tiles[id] = Some(t.clone());
            self.tile_bytes.set(self.tile_bytes.get() + n);
        }
        Ok(t)
    }

    /// Every point in one interleaved batch over the kept tiles, then each missing tile
    /// fetched once for the points that need it.
    async fn ids<T: TileSource>(
        &self,
        src: &T,
        grid: &[GridPoint],
    ) -> Result<Vec<Option<u16>>, GeoError<T::Error>> {
        let mut found = vec![Ok(None); grid.len()];
        {
            let tiles = self.tiles.borrow();
            let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
            self.index.lookup_batch(grid, get, &mut found);
        }
        let mut out = Vec::with_capacity(grid.len());
        for (r, &g) in found.into_iter().zip(grid) {
            out.push(match r {
                Ok(id) => id,
                Err(t) => self.index.lookup_in_tile(&*self.tile(src, t).await?, g),
            });
        }
        Ok(out)
    }

    /// [`ids`](Self::ids) of the combined layer: (country, zone) pairs.
    async fn pairs<T: TileSource>(
        &self,
        src: &T,
        grid: &[GridPoint],
    ) -> Result<Vec<(Option<u16>, Option<u16>)>, GeoError<T::Error>> {
        let mut found = vec![Ok((None, None)); grid.len()];
        {
            let tiles = self.tiles.borrow();
            let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
            self.index.lookup_pair_batch(grid, get, &mut found);
        }
        let mut out = Vec::with_capacity(grid.len());
        for (r, &g) in found.into_iter().zip(grid) {
            out.push(match r {
                Ok(pair) => pair,
                Err(t) => self
                    .index
                    .lookup_pair_in_tile(&*self.tile(src, t).await?, g),
            });
        }
        Ok(out)
    }
}

/// The country layer and the combined layer of one isolate, each opened on first use.
pub struct Layers<S: AsRef<[u8]> + Clone> {
    index: S,
    zone_index: S,
    countries: OnceCell<Layer<S>>,
    zones: OnceCell<Layer<S>>,
    open_ms: Cell<f64>,
    now_ms: fn() -> u64,
}

impl<S: AsRef<[u8]> + Clone> Layers<S> {
    /// The layers over the two indexes' bytes ([`INDEX_PATH`], [`ZONE_INDEX_PATH`]); nothing is
    /// validated yet. `now_ms` times the country index's opening, for health.
    pub fn new(index: S, zone_index: S, now_ms: fn() -> u64) -> Self {
        Self {
            index,
            zone_index,
            countries: OnceCell::new(),
            zones: OnceCell::new(),
            open_ms: Cell::new(0.0),
            now_ms,
        }
    }

    fn country_layer(&self) -> Result<&Layer<S>, Rejected> {
        if let Some(l) = self.countries.get() {
            return Ok(l);
        }
        let started = (self.now_ms)();
        let index = CountryIndex::from_bytes(self.index.clone()).map_err(|error| Rejected {
            path: INDEX_PATH.to_owned(),
            error,
        })?;
        let ms = (self.now_ms)().saturating_sub(started) as f64;
        let layer = Layer::new(index, "geo");
        // Only the call that stores the layer sets its time (a failed open stores nothing and
        // is tried again by the next request).
        Ok(self.countries.get_or_init(|| {
            self.open_ms.set(ms);
            layer
        }))
    }

    /// The combined layer, whose pairs must name the countries of the country layer (both
    /// come from one asset build).
    fn zone_layer(&self, countries: &CountryIndex<S>) -> Result<&Layer<S>, Rejected> {
        if let Some(l) = self.zones.get() {
            return Ok(l);
        }
        let rejected = |error| Rejected {
            path: ZONE_INDEX_PATH.to_owned(),
            error,
        };
        let index = ZoneIndex::from_bytes(self.zone_index.clone()).map_err(rejected)?;
        if index.pair_countries() != Some(countries.len()) {
            let e = LoadError::Corrupt("not the combined layer of these countries");
            return Err(rejected(e));
        }
        Ok(self.zones.get_or_init(|| Layer::new(index, "tz")))
    }

    /// The country index (opened on first use).
    ///
    /// # Errors
    /// [`Rejected`] when it does not verify.
    pub fn countries(&self) -> Result<&CountryIndex<S>, Rejected> {
        Ok(&self.country_layer()?.index)
    }

    /// The countries of `points` (`None` at sea), fetching the tiles they need.
    ///
    /// # Errors
    /// [`GeoError::Read`] from the source, [`GeoError::Rejected`] for an index or tile that
    /// does not verify.
    pub async fn countries_of<T: TileSource>(
        &self,
        src: &T,
        points: &[LatLon],
    ) -> Result<Vec<Option<Country<'_>>>, GeoError<T::Error>> {
        let layer = self.country_layer()?;
        let grid: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
        let ids = layer.ids(src, &grid).await?;
        Ok(ids
            .into_iter()
            .map(|id| id.and_then(|i| layer.index.country(i)))
            .collect())
    }

    /// The countries and IANA zones of `points`, from one walk of the combined layer (every
    /// point has a zone; `None` only from a damaged asset).
    ///
    /// # Errors
    /// As [`countries_of`](Self::countries_of), and the combined layer's index rejected.
    pub async fn pairs_of<T: TileSource>(
        &self,
        src: &T,
        points: &[LatLon],
    ) -> Result<Vec<(Option<Country<'_>>, Option<&str>)>, GeoError<T::Error>> {
        let countries = &self.country_layer()?.index;
        let zones = self.zone_layer(countries)?;
        let grid: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
        let pairs = zones.pairs(src, &grid).await?;
        Ok(pairs
            .into_iter()
            .map(|(c, z)| {
                let country = c.and_then(|i| countries.country(i));
                (country, z.and_then(|i| zones.index.zone(i)))
            })
            .collect())
    }

    /// The country layer's numbers (opening it on first use).
    ///
    /// # Errors
    /// [`Rejected`] when its index does not verify.
    pub fn stats(&self) -> Result<Stats, Rejected> {
        let layer = self.country_layer()?;
        Ok(Stats {
            countries: layer.index.len(),
            index_bytes: self.index.as_ref().len(),
            index_open_ms: self.open_ms.get(),
            tiles_loaded: layer.loaded(),
            tile_bytes_loaded: layer.tile_bytes.get(),
        })
    }

    /// Bench: `repeat` passes over `points` (one at a time, or with `batched` through the
    /// interleaved batch; with `zones` the combined layer, else the country layer alone), after
    /// one untimed pass that fetches every tile they need. Returns a checksum of the answers, so
    /// no pass can be optimised away.
    ///
    /// # Errors
    /// As [`pairs_of`](Self::pairs_of).
    #[cfg(feature = "bench")]
    pub async fn bench<T: TileSource>(
        &self,
        src: &T,
        points: &[LatLon],
        repeat: usize,
        batched: bool,
        zones: bool,
    ) -> Result<u64, GeoError<T::Error>> {
        let pts: Vec<GridPoint> = points.iter().map(|&p| GridPoint::from(p)).collect();
        let layer = self.country_layer()?;
        layer.ids(src, &pts).await?;
        let zlayer = self.zone_layer(&layer.index)?;
        if zones {
            zlayer.pairs(src, &pts).await?;
        }
        let (tiles, ztiles) = (layer.tiles.borrow(), zlayer.tiles.borrow());
        let (index, zindex) = (&layer.index, &zlayer.index);
        let mut checksum: u64 = 0;
        let mut found = vec![Ok(None); pts.len()];
        let mut pfound = vec![Ok((None, None)); pts.len()];
        let mix = |c: u64, id: Option<u16>| {
            c.wrapping_mul(31)
                .wrapping_add(id.map_or(0xFFFF, u64::from))
        };
        let mix_pair =
            |c: u64, (country, zone): (Option<u16>, Option<u16>)| mix(mix(c, country), zone);
        let get = |t: usize| tiles.get(t).and_then(|t| t.as_deref());
        let zget = |t: usize| ztiles.get(t).and_then(|t| t.as_deref());
        for _ in 0..repeat {
            match (batched, zones) {
                (true, false) => {
                    index.lookup_batch(&pts, get, &mut found);
                    for &id in &found {
                        checksum = mix(checksum, id.ok().flatten());
                    }
                }
                (true, true) => {
                    zindex.lookup_pair_batch(&pts, zget, &mut pfound);
                    for &pair in &pfound {
                        checksum = mix_pair(checksum, pair.unwrap_or((None, None)));
                    }
                }
                (false, false) => {
                    for &g in &pts {
                        checksum = mix(checksum, index.lookup_with(g, get).ok().flatten());
                    }
                }
                (false, true) => {
                    for &g in &pts {
                        let pair = zindex.lookup_pair_with(g, zget);
                        checksum = mix_pair(checksum, pair.unwrap_or((None, None)));
                    }
                }
            }
        }
        Ok(checksum)
    }
}

#[cfg(test)]
mod tests;
