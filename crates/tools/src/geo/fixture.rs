//! The small synthetic world that geo unit tests and the fuzz targets share: built by the real
//! builder from four hand-drawn features, so tests run in milliseconds without the world asset.
//! Native only, like the builder (never in the production wasm).

use super::build::{build, Built};
use super::source::SourceFeature;
use std::sync::OnceLock;

/// A tiny world built by the real builder: a square with a hole, a triangle on the hole's
/// rim, a large slanted triangle overlapping the square and a many-pointed star, so there are
/// uniform cells, mixed cells, nested quadtrees and leaves of several candidates.
pub fn synthetic_world() -> &'static Built {
    static WORLD: OnceLock<Built> = OnceLock::new();
    WORLD.get_or_init(|| {
        let ring = |pts: &[(f64, f64)]| {
            let mut r: Vec<[f64; 2]> = pts.iter().map(|&(lon, lat)| [lon, lat]).collect();
            r.push(r[0]);
            r
        };
        let feature = |a3: &str, a2: &str, parts, area| SourceFeature {
            alpha3: a3.into(),
            alpha2: a2.into(),
            parts,
            area,
        };
        // A 384-point star inside one top cell (lon 19.69–21.09, lat 9.84–11.25): more edges
        // than a leaf holds, so that cell becomes a quadtree several levels deep.
        let star: Vec<(f64, f64)> = (0..384)
            .map(|i| {
                let a = f64::from(i) * std::f64::consts::TAU / 384.0;
                let r = if i % 2 == 0 { 0.6 } else { 0.35 };
                (20.39 + r * a.cos(), 10.55 + r * a.sin())
            })
            .collect();
        build(&[
            feature(
                "AAA",
                "AA",
                vec![vec![
                    ring(&[(0.3, 0.3), (9.7, 0.3), (9.7, 9.7), (0.3, 9.7)]),
                    ring(&[(3.1, 3.1), (3.1, 6.2), (6.2, 6.2), (6.2, 3.1)]),
                ]],
                78.7,
            ),
            feature(
                "BBB",
                "BB",
                vec![vec![ring(&[(5.5, 5.5), (6.7, 5.9), (5.9, 6.9)])]],
                0.6,
            ),
            feature(
                "CCC",
                "CC",
                vec![vec![ring(&[(8.0, -4.0), (30.0, 2.0), (12.0, 20.0)])]],
                220.0,
            ),
            feature("DDD", "DD", vec![vec![ring(&star)]], 0.9),
        ])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::format::N_TILES;
    use crate::geo::{CountryIndex, GridPoint, LatLon, Tile};

    fn at(lat: f64, lon: f64) -> GridPoint {
        LatLon::new(lat, lon).unwrap().into()
    }

    fn code<S: AsRef<[u8]>>(index: &CountryIndex<S>, answer: Option<u16>) -> Option<&str> {
        answer.map(|c| index.country(c).unwrap().alpha2)
    }

    /// The shared synthetic world (built by the real builder) opens and answers its features.
    #[test]
    fn the_synthetic_world_answers_its_features() {
        let world = synthetic_world();
        let index = CountryIndex::from_bytes(world.index.as_slice()).unwrap();
        let tiles: Vec<Option<Tile<&[u8]>>> = (0..N_TILES)
            .map(|t| index.open_tile(t, world.tiles[t].as_deref()?).ok())
            .collect();
        let look = |lat, lon| {
            let c = index
                .lookup_with(at(lat, lon), |t| tiles[t].as_ref())
                .unwrap();
            code(&index, c)
        };
        assert_eq!(look(1.0, 1.0), Some("AA"));
        assert_eq!(look(4.5, 4.5), None, "the square's hole");
        assert_eq!(look(6.0, 6.0), Some("BB"), "the triangle on the hole's rim");
        assert_eq!(look(10.55, 20.39), Some("DD"), "the star's centre");
        assert_eq!(look(-30.0, -100.0), None);
    }
}
