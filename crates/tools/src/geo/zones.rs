//! The time-zone source: timezone-boundary-builder's full zone set (one zone per country region,
//! ODbL 1.0) as npm `geo-tz` ships it (`data/timezones.geojson.*`, the set `geo-tz/all` answers
//! from), read back into polygons the builder and the oracle both see. Native only.
//!
//! geo-tz stores the zones cut along its own quadtree: `index.json` names, per quad, either the
//! zones that cover it whole or the byte range of a geobuf `FeatureCollection` in `geo.dat`
//! holding each zone's part inside the quad; quads with no entry are open sea. The parts are
//! disjoint, so a zone is the even-odd union of its parts and whole-quad rectangles. Its quads
//! stop at ±179.9999° and ±89.9999° (geo-tz clamps queries there); vertices on those lines are
//! moved to ±180° and ±90° so the zones reach the world's edge.
//!
//! The open sea follows timezone-boundary-builder's ocean rule: 25 bands of 15° of longitude
//! (`Etc/GMT+12` west of −172.5° … `Etc/GMT-12` east of 172.5°), added here as rectangles that
//! rank after every land zone, so the zone layer has no "sea" and every point gets a zone.

use super::source::{Ring, SourceError, SourceFeature};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// geo-tz's data product with the full zone set.
pub const PRODUCT: &str = "timezones.geojson";
/// Where geo-tz's quads stop.
const EDGE_LON: f64 = 179.9999;
const EDGE_LAT: f64 = 89.9999;

/// The files of the geo-tz package the zone layer is read from (relative to the package).
pub fn source_files() -> [String; 2] {
    ["geo.dat", "index.json"].map(|ext| format!("data/{PRODUCT}.{ext}"))
}

/// What the read changed, for the build log and the manifest.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ZoneReport {
    /// Quads whose zones are given whole (rectangles).
    pub whole_quads: usize,
    /// Quads whose zone parts come from `geo.dat`.
    pub cut_quads: usize,
    /// Polygon parts read from `geo.dat`.
    pub parts: usize,
    /// Vertices on geo-tz's ±179.9999°/±89.9999° edge moved to the world's edge.
    pub vertices_moved_to_edge: usize,
    /// Decimal digits of the stored coordinates (geobuf precision).
    pub precision_digits: u32,
}

/// The 25 ocean zones, west to east, with their longitude bands.
pub fn ocean_bands() -> Vec<(String, f64, f64)> {
    use super::format::{ocean_band_west, ocean_zone_name};
    (-12i32..=12)
        .map(|k| {
            let east = if k == 12 {
                180.0
            } else {
                ocean_band_west(k + 1)
            };
            (ocean_zone_name(k), ocean_band_west(k), east)
        })
        .collect()
}

/// Loads geo-tz's full zone set from its package directory and adds the ocean bands; returns
/// features sorted by name (a feature's index is its zone id in the asset). Ocean bands have an
/// infinite area so every land zone wins over them.
///
/// # Errors
/// [`SourceError`] on unreadable or malformed files.
pub fn load(package: &Path) -> Result<(Vec<SourceFeature>, ZoneReport), SourceError> {
    let [dat, index] =
        source_files().map(|name| std::fs::read(package.join(name)).map_err(SourceError::Io));
    let index: Value = serde_json::from_slice(&index?).map_err(SourceError::Json)?;
    let dat = dat?;
    let names: Vec<String> = index["timezones"]
        .as_array()
        .ok_or_else(|| malformed("no timezones list"))?
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| malformed("zone name"))
        })
        .collect::<Result<_, _>>()?;
    let mut reader = Reader {
        names: &names,
        dat: &dat,
        zones: BTreeMap::new(),
        report: ZoneReport::default(),
        scale: None,
    };
    let top = [
        ("a", [0.0, 0.0, EDGE_LON, EDGE_LAT]),
        ("b", [-EDGE_LON, 0.0, 0.0, EDGE_LAT]),
        ("c", [-EDGE_LON, -EDGE_LAT, 0.0, 0.0]),
        ("d", [0.0, -EDGE_LAT, EDGE_LON, 0.0]),
    ];
    for (key, bounds) in top {
        if let Some(node) = index["lookup"].get(key) {
            reader.quad(node, bounds)?;
        }
    }
    let Reader {
        mut zones,
        mut report,
        scale,
        ..
    } = reader;
    report.precision_digits = scale.map_or(0, |s| s.log10().round() as u32);
    let mut out: Vec<SourceFeature> = std::mem::take(&mut zones)
        .into_iter()
        .map(|(name, parts)| {
            let area = parts.iter().map(|p| super::source::part_area(p)).sum();
            SourceFeature {
                alpha3: name,
                alpha2: String::new(),
                parts,
                area,
            }
        })
        .collect();
    for (name, west, east) in ocean_bands() {
        out.push(SourceFeature {
            alpha3: name,
            alpha2: String::new(),
            parts: vec![vec![rect(west, -90.0, east, 90.0)]],
            area: f64::INFINITY,
        });
    }
    out.sort_by(|a, b| a.alpha3.cmp(&b.alpha3));
    Ok((out, report))
}

fn malformed(what: &str) -> SourceError {
    SourceError::Malformed(format!("geo-tz data: {what}"))
}

fn rect(x0: f64, y0: f64, x1: f64, y1: f64) -> Ring {
    vec![[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]
}

struct Reader<'a> {
    names: &'a [String],
    dat: &'a [u8],
    zones: BTreeMap<String, Vec<Vec<Ring>>>,
    report: ZoneReport,
    /// 10^precision of the geobuf coordinates, from the first collection read.
    scale: Option<f64>,
}

impl Reader<'_> {
    /// One quad of geo-tz's lookup tree with its bounds `[west, south, east, north]`.
    fn quad(&mut self, node: &Value, b: [f64; 4]) -> Result<(), SourceError> {
        if let (Some(pos), Some(len)) = (node["pos"].as_u64(), node["len"].as_u64()) {
            self.report.cut_quads += 1;
            let bytes = self
                .dat
                .get(pos as usize..(pos + len) as usize)
                .ok_or_else(|| malformed("quad range past geo.dat"))?;
            return self.collection(bytes);
        }
        if let Some(ids) = node.as_array() {
            self.report.whole_quads += 1;
            // The rectangle on the coordinate grid the cut parts were rounded to, so a whole
            // quad and its cut neighbour share their edge exactly.
            let s = self.scale.unwrap_or(1e6);
            let snap = |v: f64| edge((v * s + 0.5).floor() / s, &mut 0);
            let r = rect(snap(b[0]), snap(b[1]), snap(b[2]), snap(b[3]));
            for id in ids {
                let name = id
                    .as_u64()
                    .and_then(|i| self.names.get(i as usize))
                    .ok_or_else(|| malformed("zone index"))?;
                self.zones
                    .entry(name.clone())
                    .or_default()
                    .push(vec![r.clone()]);
            }
            return Ok(());
        }
        let (mx, my) = ((b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0);
        let children = [
            ("a", [mx, my, b[2], b[3]]),
            ("b", [b[0], my, mx, b[3]]),
            ("c", [b[0], b[1], mx, my]),
            ("d", [mx, b[1], b[2], my]),
        ];
        for (key, cb) in children {
            if let Some(child) = node.get(key) {
                self.quad(child, cb)?;
            }
        }
        Ok(())
    }

    /// A geobuf `Data` message holding a `FeatureCollection` of zone parts.
    fn collection(&mut self, bytes: &[u8]) -> Result<(), SourceError> {
        let mut keys = Vec::new();
        let (mut dim, mut precision) = (2u64, 6u64);
        let mut features = Vec::new();
        let mut m = Pb::new(bytes);
        while let Some((field, v)) = m.next()? {
            match (field, v) {
                (1, Wire::Bytes(b)) => {
                    keys.push(std::str::from_utf8(b).map_err(|_| malformed("key"))?)
                }
                (2, Wire::Varint(v)) => dim = v,
                (3, Wire::Varint(v)) => precision = v,
                (4, Wire::Bytes(b)) => {
                    let mut fc = Pb::new(b);
                    while let Some((f, v)) = fc.next()? {
                        if let (1, Wire::Bytes(fb)) = (f, v) {
                            features.push(fb);
                        }
                    }
                }
                _ => {}
            }
        }
        if dim != 2 {
            return Err(malformed("coordinates are not 2-D"));
        }
        let scale = 10f64.powi(precision as i32);
        match self.scale {
            Some(s) if s != scale => return Err(malformed("mixed coordinate precisions")),
            _ => self.scale = Some(scale),
        }
        let tzid = keys.iter().position(|k| *k == "tzid");
        for fb in features {
            let (mut geometry, mut values, mut props) = (None, Vec::new(), Vec::new());
            let mut f = Pb::new(fb);
            while let Some((field, v)) = f.next()? {
                match (field, v) {
                    (1, Wire::Bytes(b)) => geometry = Some(b),
                    (13, Wire::Bytes(b)) => {
                        let mut val = Pb::new(b);
                        let mut s = None;
                        while let Some((vf, vv)) = val.next()? {
                            if let (1, Wire::Bytes(sb)) = (vf, vv) {
                                s = std::str::from_utf8(sb).ok();
                            }
                        }
                        values.push(s);
                    }
                    (14, Wire::Bytes(b)) => props = packed(b)?,
                    _ => {}
                }
            }
            let name = props
                .chunks_exact(2)
                .find(|kv| Some(kv[0] as usize) == tzid)
                .and_then(|kv| values.get(kv[1] as usize).copied().flatten())
                .ok_or_else(|| malformed("feature without tzid"))?
                .to_owned();
            let mut parts = Vec::new();
            geometry_parts(
                geometry.ok_or_else(|| malformed("feature without geometry"))?,
                scale,
                &mut parts,
                &mut self.report.vertices_moved_to_edge,
            )?;
            self.report.parts += parts.len();
            self.zones.entry(name).or_default().extend(parts);
        }
        Ok(())
    }
}

/// Moves a coordinate on geo-tz's quad edge to the world's edge.
fn edge(v: f64, moved: &mut usize) -> f64 {
    let to = if v.abs() == EDGE_LON {
        180.0f64.copysign(v)
    } else if v.abs() == EDGE_LAT {
        90.0f64.copysign(v)
    } else {
        return v;
    };
    *moved += 1;
    to
}

/// The polygons of a geobuf `Geometry` (collections recursed, points and lines skipped: they
/// cover nothing). Each ring's coordinates are deltas from the previous vertex, starting at 0,
/// and omit the closing vertex.
fn geometry_parts(
    b: &[u8],
    scale: f64,
    out: &mut Vec<Vec<Ring>>,
    moved: &mut usize,
) -> Result<(), SourceError> {
    let (mut kind, mut lengths, mut coords) = (0u64, Vec::new(), Vec::new());
    let mut g = Pb::new(b);
    while let Some((field, v)) = g.next()? {
        match (field, v) {
            (1, Wire::Varint(t)) => kind = t,
            (2, Wire::Bytes(p)) => lengths = packed(p)?,
            (3, Wire::Bytes(p)) => coords = packed(p)?.into_iter().map(unzigzag).collect(),
            (4, Wire::Bytes(sub)) => geometry_parts(sub, scale, out, moved)?,
            _ => {}
        }
    }
    let mut at = 0usize;
    let mut ring = |n: Option<u64>, at: &mut usize| -> Result<Ring, SourceError> {
        let n = n.map_or((coords.len() - *at) / 2, |n| n as usize);
        let pairs = coords
            .get(*at..*at + 2 * n)
            .ok_or_else(|| malformed("ring past its coordinates"))?;
        *at += 2 * n;
        let (mut x, mut y) = (0i64, 0i64);
        let mut r: Ring = pairs
            .chunks_exact(2)
            .map(|d| {
                x += d[0];
                y += d[1];
                [edge(x as f64 / scale, moved), edge(y as f64 / scale, moved)]
            })
            .collect();
        if let Some(&first) = r.first() {
            r.push(first);
        }
        Ok(r)
    };
    match kind {
        // Polygon: `lengths` are ring lengths (absent for one ring).
        4 => {
            let rings = if lengths.is_empty() {
                vec![ring(None, &mut at)?]
            } else {
                lengths
                    .iter()
                    .map(|&n| ring(Some(n), &mut at))
                    .collect::<Result<_, _>>()?
            };
            out.push(rings);
        }
        // MultiPolygon: `lengths` = [polygons, then per polygon: rings, ring lengths…].
        5 => {
            if lengths.is_empty() {
                out.push(vec![ring(None, &mut at)?]);
            } else {
                let mut j = 1;
                for _ in 0..lengths[0] {
                    let n_rings = *lengths.get(j).ok_or_else(|| malformed("lengths"))? as usize;
                    let mut rings = Vec::with_capacity(n_rings);
                    for k in 0..n_rings {
                        let n = *lengths.get(j + 1 + k).ok_or_else(|| malformed("lengths"))?;
                        rings.push(ring(Some(n), &mut at)?);
                    }
                    j += n_rings + 1;
                    out.push(rings);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn packed(b: &[u8]) -> Result<Vec<u64>, SourceError> {
    let mut p = Pb::new(b);
    let mut out = Vec::with_capacity(b.len() / 2);
    while p.at < b.len() {
        out.push(p.varint()?);
    }
    Ok(out)
}

enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

/// A protocol-buffers field reader: just what geobuf needs.
struct Pb<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Pb<'a> {
    fn new(b: &'a [u8]) -> Self {
        Pb { b, at: 0 }
    }

    fn varint(&mut self) -> Result<u64, SourceError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .b
                .get(self.at)
                .ok_or_else(|| malformed("truncated varint"))?;
            self.at += 1;
            v |= u64::from(byte & 0x7F) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(malformed("varint too long"))
    }

    fn next(&mut self) -> Result<Option<(u64, Wire<'a>)>, SourceError> {
        if self.at >= self.b.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            2 => {
                let n = self.varint()? as usize;
                let s = self
                    .b
                    .get(self.at..self.at + n)
                    .ok_or_else(|| malformed("truncated field"))?;
                self.at += n;
                Wire::Bytes(s)
            }
            1 => {
                self.at += 8;
                Wire::Fixed
            }
            5 => {
                self.at += 4;
                Wire::Fixed
            }
            _ => return Err(malformed("unknown wire type")),
        };
        Ok(Some((key >> 3, wire)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ocean_bands_cover_the_world_west_to_east() {
        let bands = ocean_bands();
        assert_eq!(bands.len(), 25);
        assert_eq!(bands[0], ("Etc/GMT+12".into(), -180.0, -172.5));
        assert_eq!(bands[12], ("Etc/GMT".into(), -7.5, 7.5));
        assert_eq!(bands[24], ("Etc/GMT-12".into(), 172.5, 180.0));
        assert!(bands.windows(2).all(|w| w[0].2 == w[1].1));
    }

    #[test]
    fn varints_and_zigzag_decode() {
        let mut p = Pb::new(&[0xAC, 0x02, 0x08, 0x96, 0x01]);
        assert_eq!(p.varint().unwrap(), 300);
        match p.next().unwrap() {
            Some((1, Wire::Varint(150))) => {}
            _ => panic!("field 1 = 150"),
        }
        assert_eq!([0, 1, 2, 3].map(unzigzag), [0, -1, 1, -2]);
    }

    #[test]
    fn a_polygon_ring_is_deltas_closed_on_read() {
        // type 4 (Polygon), coords (1,1) (+2,0) (0,+2): a triangle at precision 0.
        let zz = |v: i64| ((v << 1) ^ (v >> 63)) as u8;
        let coords = [1, 1, 2, 0, 0, 2].map(zz);
        let mut g = vec![0x08, 4, 0x1A, coords.len() as u8];
        g.extend(coords);
        let mut out = Vec::new();
        let mut moved = 0;
        geometry_parts(&g, 1.0, &mut out, &mut moved).unwrap();
        assert_eq!(
            out,
            vec![vec![vec![[1.0, 1.0], [3.0, 1.0], [3.0, 3.0], [1.0, 1.0]]]]
        );
        assert_eq!(edge(-179.9999, &mut moved), -180.0);
        assert_eq!(edge(89.9999, &mut moved), 90.0);
        assert_eq!(moved, 2);
    }
}
