// Pure modules of the console, in node: the point parser and the outline decoder (against the
// sizes the Rust builder recorded in assets/manifest.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.mjs";
import { parsePoints } from "../../www/src/points.js";
import { decodeOutline } from "../../www/src/outline.js";

test("CSV: header names in any order and separator, or bare lat,lon pairs", () => {
  assert.deepEqual(parsePoints("name;lng;latitude\nA;2.35;48.85\r\nB;-46.6;-23.5\n"), [[48.85, 2.35], [-23.5, -46.6]]);
  assert.deepEqual(parsePoints("10,20\n-5.5,170\n\n"), [[10, 20], [-5.5, 170]]);
  assert.deepEqual(parsePoints('"lat"\t"lon"\n"1"\t"2"'), [[1, 2]]);
  assert.throws(() => parsePoints("a,b\n1,2"), /lat and lon columns/);
  assert.throws(() => parsePoints("1,2\n3,x"), /line 2/);
  assert.throws(() => parsePoints("  "), /no points/);
});

test("GeoJSON: points and multipoints as [lat, lon]; a plain array is [lat, lon] pairs", () => {
  const fc = {
    type: "FeatureCollection",
    features: [
      { type: "Feature", geometry: { type: "Point", coordinates: [2.35, 48.85] } },
      { type: "Feature", geometry: { type: "MultiPoint", coordinates: [[139.7, 35.7], [135.5, 34.7]] } },
      { type: "Feature", geometry: null },
    ],
  };
  assert.deepEqual(parsePoints(JSON.stringify(fc)), [[48.85, 2.35], [35.7, 139.7], [34.7, 135.5]]);
  assert.deepEqual(parsePoints(JSON.stringify({ type: "Point", coordinates: [1, 2] })), [[2, 1]]);
  assert.deepEqual(parsePoints("[[48.85, 2.35]]"), [[48.85, 2.35]]);
  assert.throws(() => parsePoints('{"type":"LineString","coordinates":[[0,0],[1,1]]}'), /no Point/);
});

test("the JS outline decoder reads what the Rust builder wrote", () => {
  const bytes = readFileSync(path.join(ROOT, "assets/www/outline.bin"));
  const stats = JSON.parse(readFileSync(path.join(ROOT, "assets/manifest.json"), "utf8")).outline.stats;
  const features = decodeOutline(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const rings = features.flatMap((f) => f.rings);
  assert.equal(rings.length, stats.rings);
  assert.equal(rings.reduce((n, r) => n + r.length / 2, 0), stats.vertices);
  assert.equal(new Set(features.map((f) => f.alpha3)).size, features.length);
  for (const r of rings) {
    for (let i = 0; i < r.length; i += 2) {
      assert.ok(Math.abs(r[i]) <= 180 && Math.abs(r[i + 1]) <= 90, `vertex ${r[i]},${r[i + 1]}`);
    }
  }
  assert.ok(features.some((f) => f.alpha2 === "VA") && features.some((f) => f.alpha2 === "XK"));
  assert.throws(() => decodeOutline(new Uint8Array([...bytes, 0]).buffer), /length/);
  assert.throws(() => decodeOutline(new Uint8Array(bytes.subarray(0, bytes.length - 3)).buffer), /length/);
  assert.throws(() => decodeOutline(new TextEncoder().encode("OUTX").buffer), /format/);
});
