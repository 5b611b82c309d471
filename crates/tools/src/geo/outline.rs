//! The console's world map: the same features the index is built from, simplified with
//! Ramer–Douglas–Peucker (`geo::SimplifyIdx`), quantised and delta-encoded, with a bound on how
//! far the drawing is from the full geometry. Native only (built by `build-assets`).
//!
//! Layout (little-endian): `"OUTL"`, `u8` version, `u16` units per degree, `u16` feature count;
//! then per feature, largest first (so the smallest feature is painted last and wins, as in the
//! lookup rule): 2 bytes alpha-2, 3 bytes alpha-3, varint ring count, and per ring a varint
//! point count and zig-zag varint deltas of (lon, lat) in units, starting from (0, 0). A
//! feature's rings are meant to be filled together with the even-odd rule (the lookup's parity).

use super::source::{Ring, SourceFeature};
use geo::{Coord, LineString, SimplifyIdx};

/// Format version of the outline file.
pub const OUTLINE_VERSION: u8 = 1;
/// Tolerance of the shipped outline: about a pixel of a 1 400 px wide map at twice the device
/// pixel ratio.
pub const EPSILON_DEG: f64 = 0.05;
/// Quantisation of the shipped outline (0.01°, ≈1.1 km), well below the tolerance.
pub const UNITS_PER_DEGREE: u16 = 100;

/// Sizes and error of a built outline (for the build log and the manifest).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct OutlineStats {
    /// RDP tolerance in degrees.
    pub epsilon_deg: f64,
    /// Quantisation: units per degree.
    pub units_per_degree: u16,
    /// Vertices of the source rings.
    pub source_vertices: usize,
    /// Vertices kept.
    pub vertices: usize,
    /// Rings kept (every source ring is kept, however small).
    pub rings: usize,
    /// File size in bytes.
    pub bytes: usize,
    /// Upper bound of the Hausdorff distance between outline and source, in degrees: the
    /// largest distance from a source vertex to the quantised segment that replaced it (that
    /// segment's points are themselves within this of the source chain, as RDP keeps the chain
    /// inside the band), or from a kept vertex to its quantised position.
    pub hausdorff_deg_max: f64,
    /// The same bound in kilometres (great-circle distance from the vertex to its closest point
    /// on the replacing segment).
    pub hausdorff_km_max: f64,
    /// 99th percentile of that per-vertex distance, in kilometres.
    pub p99_km: f64,
}

/// Builds the outline file from the source features.
#[must_use]
pub fn build(features: &[SourceFeature], epsilon_deg: f64, units: u16) -> (Vec<u8>, OutlineStats) {
    let mut order: Vec<&SourceFeature> = features.iter().collect();
    order.sort_by(|a, b| b.area.total_cmp(&a.area).then(a.alpha3.cmp(&b.alpha3)));
    let mut out = b"OUTL".to_vec();
    out.push(OUTLINE_VERSION);
    out.extend_from_slice(&units.to_le_bytes());
    out.extend_from_slice(&(order.len() as u16).to_le_bytes());
    let mut stats = OutlineStats {
        epsilon_deg,
        units_per_degree: units,
        ..OutlineStats::default()
    };
    let mut errors_km: Vec<f64> = Vec::new();
    let u = f64::from(units);
    for f in order {
        out.extend_from_slice(&ascii(&f.alpha2, 2));
        out.extend_from_slice(&ascii(&f.alpha3, 3));
        let rings: Vec<&Ring> = f.parts.iter().flatten().collect();
        varint(&mut out, rings.len() as u64);
        for ring in rings {
            stats.source_vertices += ring.len();
            let line = LineString::from(
                ring.iter()
                    .map(|p| Coord { x: p[0], y: p[1] })
                    .collect::<Vec<_>>(),
            );
            let idx = line.simplify_idx(epsilon_deg);
            let q: Vec<[i64; 2]> = idx
                .iter()
                .map(|&i| {
                    [
                        (ring[i][0] * u).round() as i64,
                        (ring[i][1] * u).round() as i64,
                    ]
                })
                .collect();
            for w in idx.windows(2).zip(q.windows(2)) {
                let ([i, j], [a, b]) = w else { continue };
                let (a, b) = (
                    [a[0] as f64 / u, a[1] as f64 / u],
                    [b[0] as f64 / u, b[1] as f64 / u],
                );
                for p in &ring[*i..=*j] {
                    let c = closest_on_segment(*p, a, b);
                    let d = ((p[0] - c[0]).powi(2) + (p[1] - c[1]).powi(2)).sqrt();
                    stats.hausdorff_deg_max = stats.hausdorff_deg_max.max(d);
                    errors_km.push(haversine_km(*p, c));
                }
            }
            let mut kept: Vec<[i64; 2]> = Vec::with_capacity(q.len());
            for p in q {
                if kept.last() != Some(&p) {
                    kept.push(p);
                }
            }
            stats.vertices += kept.len();
            stats.rings += 1;
            varint(&mut out, kept.len() as u64);
            let mut prev = [0i64, 0];
            for p in kept {
                varint(&mut out, zigzag(p[0] - prev[0]));
                varint(&mut out, zigzag(p[1] - prev[1]));
                prev = p;
            }
        }
    }
    errors_km.sort_by(f64::total_cmp);
    stats.hausdorff_km_max = errors_km.last().copied().unwrap_or(0.0);
    stats.p99_km = errors_km
        .get(errors_km.len() * 99 / 100)
        .copied()
        .unwrap_or(0.0);
    stats.bytes = out.len();
    (out, stats)
}

/// One decoded feature: codes and rings of (lon, lat) in degrees.
#[derive(Clone, Debug, PartialEq)]
pub struct OutlineFeature {
    /// ISO alpha-2.
    pub alpha2: String,
    /// ISO alpha-3.
    pub alpha3: String,
    /// Rings, to be filled together with the even-odd rule.
    pub rings: Vec<Vec<[f64; 2]>>,
}

/// Decodes an outline file (the console does the same in JavaScript); `None` if malformed.
#[must_use]
pub fn decode(bytes: &[u8]) -> Option<Vec<OutlineFeature>> {
    if bytes.get(..4)? != b"OUTL" || *bytes.get(4)? != OUTLINE_VERSION {
        return None;
    }
    let units = f64::from(u16::from_le_bytes([*bytes.get(5)?, *bytes.get(6)?]));
    let count = u16::from_le_bytes([*bytes.get(7)?, *bytes.get(8)?]);
    let mut pos = 9;
    let mut out = Vec::with_capacity(count.into());
    for _ in 0..count {
        let code = |r: std::ops::Range<usize>| String::from_utf8(bytes.get(r)?.to_vec()).ok();
        let (alpha2, alpha3) = (code(pos..pos + 2)?, code(pos + 2..pos + 5)?);
        pos += 5;
        let mut rings = Vec::new();
        for _ in 0..read_varint(bytes, &mut pos)? {
            let n = read_varint(bytes, &mut pos)?;
            let mut ring = Vec::with_capacity(n.min(1 << 20) as usize);
            let (mut x, mut y) = (0i64, 0i64);
            for _ in 0..n {
                x += unzigzag(read_varint(bytes, &mut pos)?);
                y += unzigzag(read_varint(bytes, &mut pos)?);
                ring.push([x as f64 / units, y as f64 / units]);
            }
            rings.push(ring);
        }
        out.push(OutlineFeature {
            alpha2,
            alpha3,
            rings,
        });
    }
    (pos == bytes.len()).then_some(out)
}

fn ascii(s: &str, n: usize) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.resize(n, b' ');
    b
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn read_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

fn closest_on_segment(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len2 = dx * dx + dy * dy;
    if len2 == 0.0 {
        return a;
    }
    let t = (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2).clamp(0.0, 1.0);
    [a[0] + t * dx, a[1] + t * dy]
}

fn haversine_km(p: [f64; 2], q: [f64; 2]) -> f64 {
    let (lat1, lat2) = (p[1].to_radians(), q[1].to_radians());
    let (dlat, dlon) = (lat2 - lat1, (q[0] - p[0]).to_radians());
    let h = (dlat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (dlon / 2.0).sin().powi(2);
    2.0 * 6371.0088 * h.sqrt().min(1.0).asin()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(a2: &str, a3: &str, ring: Ring) -> SourceFeature {
        SourceFeature {
            alpha2: a2.into(),
            alpha3: a3.into(),
            parts: vec![vec![ring]],
            area: 1.0,
        }
    }

    #[test]
    fn round_trip_keeps_codes_and_shape_within_the_reported_bound() {
        // A square with a wobbly edge: the wobble (0.001°) is below epsilon and must go.
        let mut ring: Ring = vec![[0.0, 0.0]];
        for i in 1..100 {
            ring.push([f64::from(i) / 10.0, if i % 2 == 0 { 0.001 } else { 0.0 }]);
        }
        ring.extend([[10.0, 0.0], [10.0, 10.0], [0.0, 10.0], [0.0, 0.0]]);
        let mut big = feature("AA", "AAA", ring.clone());
        big.area = 100.0;
        let small = feature(
            "BB",
            "BBB",
            vec![[1.0, 1.0], [2.0, 1.0], [1.5, 2.0], [1.0, 1.0]],
        );
        let (bytes, stats) = build(&[small, big], 0.01, 100);
        let decoded = decode(&bytes).expect("decodes");
        assert_eq!(decoded.len(), 2);
        assert_eq!(
            (decoded[0].alpha2.as_str(), decoded[1].alpha3.as_str()),
            ("AA", "BBB")
        );
        assert_eq!(stats.source_vertices, ring.len() + 4);
        assert!(stats.vertices < 12, "{stats:?}");
        assert_eq!(decoded[0].rings[0].first(), Some(&[0.0, 0.0]));
        assert!(decoded[0].rings[0].contains(&[10.0, 10.0]));
        assert!(stats.hausdorff_deg_max >= 0.001 && stats.hausdorff_deg_max <= 0.01);
        assert!(
            stats.hausdorff_km_max > 0.1 && stats.hausdorff_km_max < 1.2,
            "{stats:?}"
        );
        assert_eq!(stats.bytes, bytes.len());
    }

    #[test]
    fn malformed_input_is_refused() {
        let (bytes, _) = build(
            &[feature(
                "AA",
                "AAA",
                vec![[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],
            )],
            0.01,
            100,
        );
        assert!(decode(&bytes[..bytes.len() - 1]).is_none());
        assert!(decode(&[bytes.as_slice(), &[0]].concat()).is_none());
        assert!(decode(b"OUTX").is_none());
    }

    #[test]
    fn zigzag_varint_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 1 << 40, -(1 << 40)] {
            let mut b = Vec::new();
            varint(&mut b, zigzag(v));
            let mut pos = 0;
            assert_eq!(read_varint(&b, &mut pos).map(unzigzag), Some(v));
        }
    }
}
