//! Reference answer for tests and benchmarks: plain point-in-polygon on the (repaired) source,
//! in floating point, with the same overlap rule as the index. Independent of the quadtree:
//! it uses `geo`'s interval-tree containment per ring. Native only.

use super::source::{overlap_order, OverlapRule, SourceFeature};
use geo::indexed::IntervalTreeMultiPolygon;
use geo::{Contains, Coord, LineString, MultiPolygon, Polygon};

struct Part {
    feature: usize,
    bbox: [f64; 4],
    shell: IntervalTreeMultiPolygon<f64>,
    holes: Vec<IntervalTreeMultiPolygon<f64>>,
}

/// Source polygons indexed for exact-ish containment (1° buckets of part bounding boxes).
pub struct Oracle {
    parts: Vec<Part>,
    buckets: Vec<Vec<u32>>,
    rank: Vec<usize>,
    features: Vec<SourceFeature>,
}

fn ring_tree(r: &[[f64; 2]]) -> IntervalTreeMultiPolygon<f64> {
    let ls = LineString::from(r.iter().map(|v| (v[0], v[1])).collect::<Vec<_>>());
    IntervalTreeMultiPolygon::new(&MultiPolygon::new(vec![Polygon::new(ls, vec![])]))
}

fn bucket(lon: f64, lat: f64) -> usize {
    let c = ((lon + 180.0).floor() as isize).clamp(0, 359) as usize;
    let r = ((lat + 90.0).floor() as isize).clamp(0, 179) as usize;
    r * 360 + c
}

impl Oracle {
    /// Indexes the features (same order and ids as the built asset); overlaps answer by `rule`.
    pub fn new(features: &[SourceFeature], rule: OverlapRule) -> Self {
        let mut parts = Vec::new();
        let mut buckets = vec![Vec::new(); 360 * 180];
        for (fi, f) in features.iter().enumerate() {
            for rings in &f.parts {
                let mut bbox = [f64::MAX, f64::MAX, f64::MIN, f64::MIN];
                for v in &rings[0] {
                    bbox = [
                        bbox[0].min(v[0]),
                        bbox[1].min(v[1]),
                        bbox[2].max(v[0]),
                        bbox[3].max(v[1]),
                    ];
                }
                let id = parts.len() as u32;
                let (c0, r0) = (
                    bucket(bbox[0], bbox[1]) % 360,
                    bucket(bbox[0], bbox[1]) / 360,
                );
                let (c1, r1) = (
                    bucket(bbox[2], bbox[3]) % 360,
                    bucket(bbox[2], bbox[3]) / 360,
                );
                for r in r0..=r1 {
                    for c in c0..=c1 {
                        buckets[r * 360 + c].push(id);
                    }
                }
                parts.push(Part {
                    feature: fi,
                    bbox,
                    shell: ring_tree(&rings[0]),
                    holes: rings[1..].iter().map(|h| ring_tree(h)).collect(),
                });
            }
        }
        let mut rank = vec![0; features.len()];
        for (r, &f) in overlap_order(features, rule).iter().enumerate() {
            rank[f] = r;
        }
        Oracle {
            parts,
            buckets,
            rank,
            features: features.to_vec(),
        }
    }

    /// Country id (index into the features) containing the point, `None` for sea.
    pub fn lookup(&self, lat: f64, lon: f64) -> Option<u16> {
        let c = Coord { x: lon, y: lat };
        let mut parity: Vec<(usize, bool)> = Vec::new();
        for &pi in &self.buckets[bucket(lon, lat)] {
            let p = &self.parts[pi as usize];
            if lon < p.bbox[0] || lon > p.bbox[2] || lat < p.bbox[1] || lat > p.bbox[3] {
                continue;
            }
            if p.shell.contains(&c) && !p.holes.iter().any(|h| h.contains(&c)) {
                match parity.iter_mut().find(|(f, _)| *f == p.feature) {
                    Some(e) => e.1 = !e.1,
                    None => parity.push((p.feature, true)),
                }
            }
        }
        parity
            .into_iter()
            .filter(|&(_, inside)| inside)
            .min_by_key(|&(f, _)| self.rank[f])
            .map(|(f, _)| f as u16)
    }

    /// Distance in degrees from the point to the nearest edge of feature `f` (brute force).
    pub fn edge_distance(&self, f: u16, lat: f64, lon: f64) -> f64 {
        let mut best = f64::MAX;
        for ring in self.features[f as usize].parts.iter().flatten() {
            for w in ring.windows(2) {
                best = best.min(segment_distance(w[0], w[1], [lon, lat]));
            }
        }
        best
    }
}

fn segment_distance(a: [f64; 2], b: [f64; 2], p: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len2 = dx * dx + dy * dy;
    let t = if len2 == 0.0 {
        0.0
    } else {
        (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2).clamp(0.0, 1.0)
    };
    let (qx, qy) = (a[0] + t * dx - p[0], a[1] + t * dy - p[1]);
    (qx * qx + qy * qy).sqrt()
}
