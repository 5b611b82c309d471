//! Validated coordinates and the fixed-point grid every asset is quantised to.

/// Bits of the x axis: 360° map onto 2^34 units, one unit ≈ 2.1e-8° (≈2.3 mm), finer than the
/// 1e-7° the source data carries, so quantisation never moves a vertex across another edge.
pub const X_BITS: u32 = 34;
/// Width of the world in grid units (x wraps at this value: lon 180 ≡ lon −180).
pub const WORLD_W: i64 = 1 << X_BITS;
/// Height of the world in grid units (lat −90 ↦ 0, lat 90 ↦ `WORLD_H`).
pub const WORLD_H: i64 = 1 << (X_BITS - 1);
const UNITS_PER_DEG: f64 = WORLD_W as f64 / 360.0;

/// A latitude/longitude pair in degrees (WGS 84), checked to be finite and in range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatLon {
    lat: f64,
    lon: f64,
}

/// Why a coordinate pair was rejected.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum CoordError {
    #[error("lat and lon must be finite numbers")]
    /// NaN or infinite.
    NotFinite,
    #[error("lat {0} is outside [-90, 90]")]
    /// Latitude outside [−90, 90].
    LatOutOfRange(f64),
    #[error("lon {0} is outside [-180, 180]")]
    /// Longitude outside [−180, 180].
    LonOutOfRange(f64),
}

impl LatLon {
    /// Checks and wraps a coordinate pair.
    ///
    /// # Errors
    /// [`CoordError`] when either value is not finite or out of range.
    pub fn new(lat: f64, lon: f64) -> Result<Self, CoordError> {
        if !lat.is_finite() || !lon.is_finite() {
            return Err(CoordError::NotFinite);
        }
        if !(-90.0..=90.0).contains(&lat) {
            return Err(CoordError::LatOutOfRange(lat));
        }
        if !(-180.0..=180.0).contains(&lon) {
            return Err(CoordError::LonOutOfRange(lon));
        }
        Ok(LatLon { lat, lon })
    }

    /// Latitude in degrees.
    pub fn lat(&self) -> f64 {
        self.lat
    }

    /// Longitude in degrees.
    pub fn lon(&self) -> f64 {
        self.lon
    }
}

/// A point on the asset grid: `x` in `[0, WORLD_W)`, `y` in `[0, WORLD_H)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridPoint {
    /// Longitude in grid units from −180°.
    pub x: i64,
    /// Latitude in grid units from −90°.
    pub y: i64,
}

/// Longitude → grid x, unclamped (the builder needs x == `WORLD_W` for vertices on lon 180).
pub fn grid_x(lon: f64) -> i64 {
    ((lon + 180.0) * UNITS_PER_DEG).round() as i64
}

/// Latitude → grid y, unclamped.
pub fn grid_y(lat: f64) -> i64 {
    ((lat + 90.0) * UNITS_PER_DEG).round() as i64
}

/// Grid x → longitude.
pub fn lon_of(x: i64) -> f64 {
    x as f64 / UNITS_PER_DEG - 180.0
}

/// Grid y → latitude.
pub fn lat_of(y: i64) -> f64 {
    y as f64 / UNITS_PER_DEG - 90.0
}

/// Rounds a non-negative grid value to the nearest unit, halves up: the same as `f64::round`
/// there, but a float-to-int truncation instead of a libm call (x86-64 without SSE4.1 and wasm
/// have no round-half-away instruction; the call was 1/6 of a near-border lookup's instructions).
#[inline]
fn round_non_negative(v: f64) -> i64 {
    (v + 0.5) as i64
}

impl From<LatLon> for GridPoint {
    #[inline]
    fn from(p: LatLon) -> Self {
        // LatLon is in range, so both values are ≥ 0. lon 180 is the same meridian as −180
        // (WORLD_W is a power of two); lat 90 falls into the top row.
        let x = round_non_negative((p.lon + 180.0) * UNITS_PER_DEG) & (WORLD_W - 1);
        let y = round_non_negative((p.lat + 90.0) * UNITS_PER_DEG).min(WORLD_H - 1);
        GridPoint { x, y }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_coordinates() {
        assert_eq!(LatLon::new(f64::NAN, 0.0), Err(CoordError::NotFinite));
        assert_eq!(LatLon::new(0.0, f64::INFINITY), Err(CoordError::NotFinite));
        assert_eq!(LatLon::new(90.5, 0.0), Err(CoordError::LatOutOfRange(90.5)));
        assert_eq!(
            LatLon::new(0.0, -180.1),
            Err(CoordError::LonOutOfRange(-180.1))
        );
    }

    #[test]
    fn fast_quantisation_equals_rounding() {
        // Every decimal step of 1e-7° (the source's resolution) near a few meridians and
        // parallels, plus random doubles: the truncating path must match `grid_x`/`grid_y`.
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut values: Vec<(f64, f64)> = (0..100_000)
            .map(|_| (next() * 180.0 - 90.0, next() * 360.0 - 180.0))
            .collect();
        for base in [-179.9, -0.5, 0.0, 8.6, 47.7, 89.9] {
            values
                .extend((0..2000).map(|i| (base / 2.0 + i as f64 * 1e-7, base + i as f64 * 1e-7)));
        }
        for (lat, lon) in values {
            let g = GridPoint::from(LatLon::new(lat, lon).unwrap());
            assert_eq!(g.x, grid_x(lon).rem_euclid(WORLD_W), "lon {lon}");
            assert_eq!(g.y, grid_y(lat).clamp(0, WORLD_H - 1), "lat {lat}");
        }
    }

    #[test]
    fn grid_wraps_antimeridian_and_clamps_pole() {
        let east = GridPoint::from(LatLon::new(90.0, 180.0).unwrap());
        let west = GridPoint::from(LatLon::new(0.0, -180.0).unwrap());
        assert_eq!(east.x, west.x);
        assert_eq!(east.y, WORLD_H - 1);
        let p = LatLon::new(47.5, 8.25).unwrap();
        let g = GridPoint::from(p);
        assert!((lon_of(g.x) - 8.25).abs() < 2e-8 && (lat_of(g.y) - 47.5).abs() < 2e-8);
    }
}
