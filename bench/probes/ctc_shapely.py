"""Coordinates -> country with shapely prepared geometry (the seeds' prototype approach), for
BENCHMARKS.md. Same rule as ours: even-odd parity over a feature's parts, smallest feature (planar
area) wins. Bulk queries of 1000 points through an STRtree of prepared parts (shapely's fast path).

Usage: python ctc_shapely.py OUT_DIR   (reads OUT_DIR/points/*.bin, writes OUT_DIR/ctc_shapely.json,
prints markdown rows: set | median ns/lookup, then the agreement on the cities).
"""

import json
import os
import sys
import time
from collections import defaultdict

import numpy as np
import shapely
from shapely.geometry import Polygon

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NM = os.path.join(ROOT, "node_modules")
SETS = ["uniform", "near_border_maritime", "near_border_land", "cities"]
BATCH = 1000


def load():
    codes = {a3: a2 for a2, a3, *_ in json.load(open(os.path.join(NM, "i18n-iso-countries/codes.json")))}
    codes["XKX"] = "XK"
    gj = json.load(open(os.path.join(NM, "@geo-maps/countries-maritime-10m/map.geo.json")))
    parts, owner, area = [], [], []
    for fi, f in enumerate(gj["features"]):
        g = f["geometry"]
        polys = [g["coordinates"]] if g["type"] == "Polygon" else g["coordinates"]
        a = 0.0
        for rings in polys:
            p = Polygon(rings[0], rings[1:])
            parts.append(p)
            owner.append(fi)
            a += abs(Polygon(rings[0]).area) - sum(abs(Polygon(h).area) for h in rings[1:])
        area.append((a, f["properties"]["A3"]))
    a2 = [codes.get(f["properties"]["A3"]) for f in gj["features"]]
    parts = np.array(parts, dtype=object)
    shapely.prepare(parts)
    return shapely.STRtree(parts), parts, np.array(owner), area, a2


def lookup(tree, parts, owner, area, lat, lon):
    # Bounding-box candidates from the tree, then the prepared parts' point-in-polygon
    # (STRtree's own predicate would prepare the query points instead of the polygons).
    pi, gi = tree.query(shapely.points(lon, lat))
    inside = shapely.contains_xy(parts[gi], lon[pi], lat[pi])
    pi, gi = pi[inside], gi[inside]
    hits = defaultdict(int)
    for p, g in zip(pi.tolist(), owner[gi].tolist()):
        hits[(p, g)] ^= 1
    best = {}
    for (p, g), odd in hits.items():
        if odd and (p not in best or area[g] < area[best[p]]):
            best[p] = g
    return [best.get(i) for i in range(len(lat))]


def main():
    out = sys.argv[1]
    tree, parts, owner, area, a2 = load()
    timings = {}
    for s in SETS:
        raw = np.fromfile(os.path.join(out, "points", f"{s}.bin"), dtype="<f8").reshape(-1, 2)
        lat, lon = raw[:, 0].copy(), raw[:, 1].copy()
        ns, answers = [], []
        for i in range(0, len(lat), BATCH):
            t = time.perf_counter_ns()
            r = lookup(tree, parts, owner, area, lat[i : i + BATCH], lon[i : i + BATCH])
            ns.append((time.perf_counter_ns() - t) / len(r))
            answers.extend(r)
        timings[s] = ns
        print(f"{s}\t{np.median(ns):.0f}")
        if s == "cities":
            ours = open(os.path.join(out, "points", "cities.ours.txt")).read().split()
            same = sum(1 for o, g in zip(ours, answers) if o == (a2[g] if g is not None else "-"))
            agreement = 100.0 * same / len(ours)
            print(f"agreement\t{agreement:.3f}")
    result = {s: {"shapely_prepared": v} for s, v in timings.items()}
    result["_agreement"] = {"shapely_prepared": agreement}
    json.dump(result, open(os.path.join(out, "ctc_shapely.json"), "w"))


main()
