//! Coordinates → country: a precomputed, tiled quadtree over maritime country polygons.
//!
//! Overlap rule (matches the oracle in `tests/`): within a feature, even-odd parity over its
//! polygon parts; among features containing the point, the smallest by area wins, so enclaves
//! and territories (Büsingen, Vatican, French overseas departments) beat their surroundings.

mod batch;
#[cfg(not(target_arch = "wasm32"))]
pub mod build;
mod coord;
#[cfg(not(target_arch = "wasm32"))]
#[doc(hidden)]
pub mod fixture;
pub mod format;
mod index;
#[cfg(not(target_arch = "wasm32"))]
pub mod oracle;
#[cfg(not(target_arch = "wasm32"))]
pub mod outline;
#[cfg(not(target_arch = "wasm32"))]
pub mod source;

pub use batch::LANES;
pub use coord::{grid_x, grid_y, lat_of, lon_of, CoordError, GridPoint, LatLon, WORLD_H, WORLD_W};
pub use index::{Country, CountryIndex, LoadError, Probe, Tile};
