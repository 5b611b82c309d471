//! The source data (GeoJSON from npm) as the builder and the exactness oracle both see it:
//! loaded, repaired, with ISO codes and areas. Native only.

use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// Where Web-Mercator-clipped polar data stops; Antarctica is closed to the pole from here.
const MERCATOR_LIMIT: f64 = -85.0;

/// A ring of (lon, lat) pairs, closed (first == last).
pub type Ring = Vec<[f64; 2]>;

/// One feature (one country or territory) of the source. The zone layer reuses it
/// ([`super::zones`]): `alpha3` holds the IANA zone name, `alpha2` is empty.
#[derive(Clone, Debug)]
pub struct SourceFeature {
    /// ISO alpha-3 from the data (`A3`); for a zone, its IANA name. Sort key and tie-breaker.
    pub alpha3: String,
    /// ISO alpha-2 from the i18n-iso-countries table (`XK` for Kosovo); empty for a zone.
    pub alpha2: String,
    /// Polygon parts: each a shell followed by its holes.
    pub parts: Vec<Vec<Ring>>,
    /// Planar area in square degrees (shell minus holes, summed over parts): the countries'
    /// overlap key ([`OverlapRule::SmallestArea`]); infinite for the zones' ocean bands.
    pub area: f64,
}

/// What the repair pass changed, for the build log and the manifest.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RepairReport {
    /// Holes dropped because they lie outside their own shell (meaningless under per-part rules).
    pub holes_outside_shell: usize,
    /// Rings dropped for having fewer than 4 points.
    pub degenerate_rings: usize,
    /// Antarctic vertices moved from the Mercator cut to the pole.
    pub vertices_closed_to_pole: usize,
}

/// Why loading the source failed.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("reading source: {0}")]
    /// File could not be read.
    Io(std::io::Error),
    #[error("parsing source: {0}")]
    /// File is not the GeoJSON we expect.
    Json(serde_json::Error),
    #[error("malformed source: {0}")]
    /// The data is not laid out as expected.
    Malformed(String),
    #[error("no ISO alpha-2 code for A3 {0}")]
    /// A feature's A3 code has no ISO alpha-2 mapping.
    UnknownCode(String),
}

#[derive(Deserialize)]
struct Collection {
    features: Vec<Feature>,
}

#[derive(Deserialize)]
struct Feature {
    properties: Props,
    geometry: Geometry,
}

#[derive(Deserialize)]
struct Props {
    #[serde(rename = "A3")]
    a3: String,
}

#[derive(Deserialize)]
#[serde(tag = "type", content = "coordinates")]
enum Geometry {
    Polygon(Vec<Ring>),
    MultiPolygon(Vec<Vec<Ring>>),
}

/// Loads the maritime GeoJSON and the alpha-3 → alpha-2 table (`codes.json` of
/// i18n-iso-countries), repairs the features and returns them sorted by alpha-3.
///
/// # Errors
/// [`SourceError`] on unreadable files or an unmapped code.
pub fn load(
    geojson: &Path,
    codes: &Path,
) -> Result<(Vec<SourceFeature>, RepairReport), SourceError> {
    let read = |p: &Path| std::fs::read(p).map_err(SourceError::Io);
    let coll: Collection = serde_json::from_slice(&read(geojson)?).map_err(SourceError::Json)?;
    let table: Vec<Vec<String>> =
        serde_json::from_slice(&read(codes)?).map_err(SourceError::Json)?;
    let mut a3_to_a2: HashMap<String, String> = table
        .into_iter()
        .filter(|r| r.len() >= 2)
        .map(|r| (r[1].clone(), r[0].clone()))
        .collect();
    // Kosovo has no ISO code; XK/XKX are the user-assigned codes the EU and CLDR use.
    a3_to_a2.insert("XKX".into(), "XK".into());

    let mut report = RepairReport::default();
    let mut out = Vec::with_capacity(coll.features.len());
    for f in coll.features {
        let alpha2 = a3_to_a2
            .get(&f.properties.a3)
            .cloned()
            .ok_or_else(|| SourceError::UnknownCode(f.properties.a3.clone()))?;
        let parts = match f.geometry {
            Geometry::Polygon(p) => vec![p],
            Geometry::MultiPolygon(ps) => ps,
        };
        let parts = repair(&f.properties.a3, parts, &mut report);
        let area = parts.iter().map(|p| part_area(p)).sum();
        out.push(SourceFeature {
            alpha3: f.properties.a3,
            alpha2,
            parts,
            area,
        });
    }
    out.sort_by(|a, b| a.alpha3.cmp(&b.alpha3));
    Ok((out, report))
}

fn repair(a3: &str, parts: Vec<Vec<Ring>>, report: &mut RepairReport) -> Vec<Vec<Ring>> {
    let mut fixed = Vec::with_capacity(parts.len());
    for mut rings in parts {
        if a3 == "ATA" {
            for ring in &mut rings {
                for v in ring.iter_mut().filter(|v| v[1] <= MERCATOR_LIMIT) {
                    v[1] = -90.0;
                    report.vertices_closed_to_pole += 1;
                }
            }
        }
        let before = rings.len();
        rings.retain(|r| r.len() >= 4);
        report.degenerate_rings += before - rings.len();
        if rings.is_empty() {
            continue;
        }
        // A hole only means something inside its shell: a point-in-part test treats a hole
        // outside the shell as nothing, while a ring-parity index would treat it as land.
        let shell = rings[0].clone();
        let mut kept = vec![shell.clone()];
        for hole in rings.into_iter().skip(1) {
            let step = (hole.len() / 16).max(1);
            let sample = hole.iter().step_by(step);
            if sample
                .into_iter()
                .all(|v| ring_contains(&shell, v[0], v[1]) != Some(false))
            {
                kept.push(hole);
            } else {
                report.holes_outside_shell += 1;
            }
        }
        fixed.push(kept);
    }
    fixed
}

/// Even-odd point-in-ring; `None` when the point is on the ring.
pub fn ring_contains(ring: &[[f64; 2]], x: f64, y: f64) -> Option<bool> {
    let mut inside = false;
    for w in ring.windows(2) {
        let (a, b) = (w[0], w[1]);
        if (a[1] > y) != (b[1] > y) {
            let xi = a[0] + (y - a[1]) * (b[0] - a[0]) / (b[1] - a[1]);
            if xi == x {
                return None;
            }
            if x < xi {
                inside = !inside;
            }
        } else if a[1] == y && b[1] == y && (a[0].min(b[0])..=a[0].max(b[0])).contains(&x) {
            return None;
        }
    }
    Some(inside)
}

fn ring_area(r: &[[f64; 2]]) -> f64 {
    r.windows(2)
        .map(|w| w[0][0] * w[1][1] - w[1][0] * w[0][1])
        .sum::<f64>()
        .abs()
        / 2.0
}

/// Planar area of one polygon part (shell minus holes), square degrees.
pub fn part_area(rings: &[Ring]) -> f64 {
    let shell = rings.first().map_or(0.0, |r| ring_area(r));
    shell - rings.iter().skip(1).map(|r| ring_area(r)).sum::<f64>()
}

/// Which feature a point gets where a layer's polygons overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverlapRule {
    /// The smallest area wins (countries: an enclave or a territory drawn over its
    /// neighbour's polygon answers itself); alpha-3 breaks ties.
    SmallestArea,
    /// The name that sorts first wins (zones: the source lists overlapping zones in disputed
    /// or dual-time areas, e.g. Xinjiang in both `Asia/Shanghai` and `Asia/Urumqi`;
    /// timezone-boundary-builder publishes zones in name order and tzf-rs answers the first,
    /// so switching from it changes no answer). Features of infinite area (the ocean bands)
    /// come after every other.
    FirstName,
}

/// Indices of `features` ordered by `rule` (the winner of an overlap first).
pub fn overlap_order(features: &[SourceFeature], rule: OverlapRule) -> Vec<usize> {
    let mut order: Vec<usize> = (0..features.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&features[a], &features[b]);
        match rule {
            OverlapRule::SmallestArea => a.area.total_cmp(&b.area),
            OverlapRule::FirstName => a.area.is_infinite().cmp(&b.area.is_infinite()),
        }
        .then_with(|| a.alpha3.cmp(&b.alpha3))
    });
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(name: &str, area: f64) -> SourceFeature {
        SourceFeature {
            alpha3: name.into(),
            alpha2: String::new(),
            parts: Vec::new(),
            area,
        }
    }

    #[test]
    fn overlap_rules_order_by_area_or_by_name_with_the_open_sea_last() {
        let f = [
            feature("Etc/GMT-8", f64::INFINITY),
            feature("Asia/Urumqi", 1.0),
            feature("Asia/Shanghai", 5.0),
            feature("Asia/Kabul", 1.0),
        ];
        assert_eq!(overlap_order(&f, OverlapRule::SmallestArea), [3, 1, 2, 0]);
        assert_eq!(overlap_order(&f, OverlapRule::FirstName), [3, 2, 1, 0]);
    }
}
