// End-to-end: the compiled worker in workerd answers coordinates → country over HTTP.
import http from "node:http";
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startWorker, ROOT } from "./harness.mjs";

let w;
before(async () => { w = await startWorker(); });
after(async () => { await w?.stop(); });

const places = [
  ["Büsingen enclave", 47.6970, 8.6910, "DE"],
  ["Vatican", 41.9030, 12.4533, "VA"],
  ["Lesotho", -29.5, 28.5, "LS"],
  ["Baarle-Hertog enclave", 51.4362, 4.92188, "BE"],
  ["Monaco", 43.7384, 7.4246, "MC"],
  ["Strait of Gibraltar (ES side)", 36.0, -5.6, "ES"],
  ["Fiji west of 180", -16.85, 179.98, "FJ"],
  ["Fiji east of 180", -16.85, -179.98, "FJ"],
  ["South Pole", -90, 0, "AQ"],
  ["Gulf of Guinea 0/0", 0, 0, null],
];

test("GET /v1/geo/country answers named places", async () => {
  for (const [name, lat, lon, want] of places) {
    const r = await w.get(`/v1/geo/country?lat=${lat}&lon=${lon}`);
    assert.equal(r.status, 200, name);
    assert.equal(r.body.country?.alpha2 ?? null, want, name);
    assert.equal(r.body.lat, lat);
  }
});

// The zone beside the country (timezone-boundary-builder's full set; tests/tz_exact.rs checks
// the index natively against the polygons).
const zones = [
  ["Büsingen", 47.6970, 8.6910, "DE", "Europe/Busingen"],
  ["Nairobi", -1.286, 36.817, "KE", "Africa/Nairobi"],
  ["Window Rock, Navajo Nation", 35.6803, -109.0526, "US", "America/Denver"],
  ["Lord Howe Island", -31.55, 159.08, "AU", "Australia/Lord_Howe"],
  ["Kiritimati", 1.87, -157.43, "KI", "Pacific/Kiritimati"],
  ["Open Pacific", 0, -150, null, "Etc/GMT+10"],
  ["North Pole", 90, 0, null, "Etc/GMT"],
];

test("timeZone beside the country, single and batch; fields=country leaves it out", async () => {
  for (const [name, lat, lon, country, zone] of zones) {
    const r = await w.get(`/v1/geo/country?lat=${lat}&lon=${lon}`);
    assert.equal(r.status, 200, name);
    assert.equal(r.body.country?.alpha2 ?? null, country, name);
    assert.equal(r.body.timeZone, zone, name);
    const bare = await w.get(`/v1/geo/country?lat=${lat}&lon=${lon}&fields=country`);
    assert.equal(bare.body.country?.alpha2 ?? null, country, name);
    assert.equal("timeZone" in bare.body, false, name);
  }
  const points = zones.map(([, lat, lon]) => [lat, lon]);
  const both = await w.post("/v1/geo/country", { points });
  assert.equal(both.status, 200);
  assert.deepEqual(both.body.results.map((c) => c?.alpha2 ?? null), zones.map((z) => z[3]));
  assert.deepEqual(both.body.timeZones, zones.map((z) => z[4]));
  const bare = await w.post("/v1/geo/country?fields=country", { points });
  assert.deepEqual(bare.body.results, both.body.results);
  assert.equal("timeZones" in bare.body, false);
  const bad = await w.get("/v1/geo/country?lat=1&lon=2&fields=tz");
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.code, "invalid_parameter");
});

test("POST batch returns answers in order and agrees with single lookups", async () => {
  const points = places.map(([, lat, lon]) => ({ lat, lon }));
  const r = await w.post("/v1/geo/country", { points });
  assert.equal(r.status, 200);
  assert.deepEqual(r.body.results.map((c) => c?.alpha2 ?? null), places.map((p) => p[3]));
  // Pairs form, and a batch at the documented maximum.
  const many = Array.from({ length: 10000 }, (_, i) => [((i * 7919) % 17000) / 100 - 85, ((i * 104729) % 35000) / 100 - 175]);
  const big = await w.post("/v1/geo/country", { points: many });
  assert.equal(big.status, 200);
  assert.equal(big.body.results.length, 10000);
  for (const i of [0, 1234, 9999]) {
    const one = await w.get(`/v1/geo/country?lat=${many[i][0]}&lon=${many[i][1]}`);
    assert.deepEqual(big.body.results[i], one.body.country);
  }
});

function postExpectingContinue(url, body) {
  return new Promise((resolve, reject) => {
    let sentBody = false;
    const req = http.request(url, { method: "POST", headers: { "content-length": Buffer.byteLength(body), expect: "100-continue" } }, (res) => {
      let d = "";
      res.on("data", (c) => (d += c));
      res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(d), sentBody }));
    });
    req.on("continue", () => { sentBody = true; req.end(body); });
    req.on("error", reject);
    req.flushHeaders();
  });
}

test("bad input gets 4xx JSON with stable codes", async () => {
  const cases = [
    ["/v1/geo/country?lon=1", 400, "missing_parameter"],
    ["/v1/geo/country?lat=abc&lon=1", 400, "invalid_number"],
    ["/v1/geo/country?lat=NaN&lon=1", 400, "invalid_coordinate"],
    ["/v1/geo/country?lat=Infinity&lon=1", 400, "invalid_coordinate"],
    ["/v1/geo/country?lat=95&lon=1", 400, "invalid_coordinate"],
    ["/v1/geo/country?lat=1&lon=-181", 400, "invalid_coordinate"],
    ["/nope", 404, "not_found"],
  ];
  for (const [p, status, code] of cases) {
    const r = await w.get(p);
    assert.equal(r.status, status, p);
    assert.equal(r.body.error.code, code, p);
    assert.equal(typeof r.body.error.message, "string");
  }
  const posts = [
    ["{not json", 400, "invalid_json"],
    [{ points: [] }, 400, "empty_batch"],
    [{ points: Array(10001).fill([0, 0]) }, 400, "batch_too_large"],
    [{ points: [[0, 0], [100, 0]] }, 400, "invalid_point"],
    [{ pts: [] }, 400, "invalid_json"],
  ];
  for (const [body, status, code] of posts) {
    const r = await w.post("/v1/geo/country", body);
    assert.equal(r.status, status, code);
    assert.equal(r.body.error.code, code);
  }
  // Over the limit: refused from Content-Length before any body byte is read. The client sends
  // `Expect: 100-continue` and waits, as a careful client does; pushing 2 MiB at a server that
  // has already answered would race its close (a reset can swallow the answer).
  const big = await postExpectingContinue(w.base + "/v1/geo/country", "x".repeat(2 << 20));
  assert.deepEqual([big.status, big.body.error.code, big.sentBody], [413, "payload_too_large", false]);
  const del = await fetch(w.base + "/v1/geo/country", { method: "DELETE" });
  assert.equal(del.status, 405);
  assert.equal((await del.json()).error.code, "method_not_allowed");
  assert.match(del.headers.get("allow"), /GET/);
});

test("healthz reports asset versions", async () => {
  const r = await w.get("/healthz");
  assert.equal(r.status, 200);
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "assets/manifest.json"), "utf8"));
  assert.equal(r.body.assets.geo_source.version, manifest.geo.source.version);
  assert.equal(r.body.geo.format_version, manifest.format_version);
  assert.equal(r.body.geo.countries, 250);
});

test("healthz and the OpenAPI document report the release of package.json and CHANGELOG.md", async () => {
  const { version } = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const released = fs.readFileSync(path.join(ROOT, "CHANGELOG.md"), "utf8").match(/^## \[(\d+\.\d+\.\d+)\]/m)?.[1];
  assert.equal(released, version, "the newest release in CHANGELOG.md");
  assert.equal((await w.get("/healthz")).body.version, version);
  assert.equal((await w.get("/openapi.json")).body.info.version, version);
});

test("the index is embedded; missing or corrupt tiles give 503 and the worker stays up", async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "assets-"));
  fs.cpSync(path.join(ROOT, "assets"), tmp, { recursive: true });
  // Both layers: the countries (fields=country) and the combined country + zone layer (the
  // default). No index.bin in ASSETS at all, and every tile corrupted: open sea and country
  // interiors (uniform top cells) still answer from the indexes in the wasm; a border point
  // needs a tile.
  const tiles = [];
  for (const dir of ["geo", "tz"]) {
    const layer = path.join(tmp, dir);
    fs.rmSync(path.join(layer, "index.bin"));
    for (const f of fs.readdirSync(layer).filter((f) => /^tile-\d+\.bin$/.test(f))) {
      const b = fs.readFileSync(path.join(layer, f));
      b[b.length - 10] ^= 0xff;
      fs.writeFileSync(path.join(layer, f), b);
      tiles.push(path.join(layer, f));
    }
  }
  assert.ok(tiles.length > 0);
  const broken = await startWorker({ assetsDir: tmp });
  const queries = ["", "&fields=country"];
  try {
    for (const q of queries) {
      const r = await broken.get(`/v1/geo/country?lat=0&lon=-150${q}`);
      assert.equal(r.status, 200, q);
      assert.equal(r.body.country, null, q);
    }
    const h = await broken.get("/healthz");
    assert.equal(h.body.geo.index_source, "embedded");
    assert.equal(h.body.geo.tiles_loaded, 0);
    for (const q of queries) {
      const r = await broken.get(`/v1/geo/country?lat=47.697&lon=8.691${q}`);
      assert.equal(r.status, 503, q);
      assert.equal(r.body.error.code, "asset_corrupt", q);
      assert.ok(r.headers.get("retry-after"), q);
    }
    for (const f of tiles) fs.rmSync(f);
    for (const q of queries) {
      const r = await broken.get(`/v1/geo/country?lat=47.697&lon=8.691${q}`);
      assert.equal(r.status, 503, q);
      assert.equal(r.body.error.code, "asset_unavailable", q);
    }
    // Non-geo routes still work: the isolate did not die.
    assert.equal((await broken.get("/nope")).status, 404);
  } finally {
    await broken.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
