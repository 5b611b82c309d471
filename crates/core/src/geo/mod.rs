//! Coordinates → country: a precomputed, tiled quadtree over maritime country polygons.
//!
//! Overlap rule (matches the oracle in `tests/`): within a feature, even-odd parity over its
//! polygon parts; among features containing the point, the smallest by area wins, so enclaves
//! and territories (Büsingen, Vatican, French overseas departments) beat their surroundings.
//! Time zones that overlap in their source (disputed or dual-time areas) answer the name that
//! sorts first (`Asia/Shanghai` over `Asia/Urumqi`), as tzf-rs does.
//!
//! This is the reader; the writer (`build`), the GeoJSON source and the oracle are build-time
//! code in `egn-tools`.

mod batch;
mod cache;
mod coord;
pub mod format;
mod index;

pub use batch::LANES;
pub use cache::{GeoError, Layers, Rejected, Stats, TileSource, INDEX_PATH, ZONE_INDEX_PATH};
pub use coord::{grid_x, grid_y, lat_of, lon_of, CoordError, GridPoint, LatLon, WORLD_H, WORLD_W};
pub use index::{Country, CountryIndex, LoadError, PairAnswer, Probe, Tile, ZoneIndex};
