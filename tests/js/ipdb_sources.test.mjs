// End-to-end: the cron's IPDB sources in workerd (Miniflare, real local KV and R2), each against
// a local HTTP server that imitates it, and production taking only what staging proved.
// - DB-IP Lite's monthly files through a URL template: this month 404 → last month taken;
//   a period older than the published one is never tried.
// - MaxMind's download endpoint: basic auth (401 on wrong credentials, which never show), a
//   tar.gz whose one .mmdb is taken, 304 on If-None-Match.
// - Staging → production: waiting while staging's version is young or unprobed, promoted once
//   old enough and probed, refused when staging's probe of it failed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { execFileSync } from "node:child_process";
import { startWorker, ROOT, pollIpdbHealth } from "./harness.mjs";

const BUNDLED = fs.readFileSync(path.join(ROOT, "assets/ip/default.mmdb"));
const sha256 = (b) => crypto.createHash("sha256").update(b).digest("hex");
const ACCOUNT = "424242";
const LICENSE = "test-licence-key-that-must-never-show";
let server, base, fixture, maxmindTgz;
const requests = []; // {url, headers} of every request the fake sources saw
let handler = () => [404, {}, ""];

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ipdb-src-"));
  execFileSync(path.join(ROOT, ".venv/bin/python"), [path.join(ROOT, "tests/fixtures/make_geoip2_mmdb.py"), path.join(dir, "geoip2.mmdb")]);
  fixture = fs.readFileSync(path.join(dir, "geoip2.mmdb"));
  // MaxMind's archive layout: GeoLite2-Country_YYYYMMDD/ with the database and its texts.
  const rel = path.join(dir, "GeoLite2-Country_20261201");
  fs.mkdirSync(rel);
  fs.writeFileSync(path.join(rel, "COPYRIGHT.txt"), "Database and Contents Copyright (c) MaxMind, Inc.\n");
  fs.writeFileSync(path.join(rel, "LICENSE.txt"), "Use of this MaxMind product is governed by MaxMind's GeoLite2 EULA.\n");
  fs.writeFileSync(path.join(rel, "GeoLite2-Country.mmdb"), fixture);
  execFileSync("tar", ["-czf", path.join(dir, "geolite2.tar.gz"), "-C", dir, "GeoLite2-Country_20261201"]);
  maxmindTgz = fs.readFileSync(path.join(dir, "geolite2.tar.gz"));
  server = http.createServer((req, res) => {
    requests.push({ url: req.url, headers: req.headers });
    const [status, headers, body] = handler(req);
    res.writeHead(status, headers);
    res.end(body);
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => server?.close());

const runCron = async (w) => {
  const worker = await w.mf.getWorker();
  await worker.scheduled({ cron: "17 3 * * *" });
  const kv = await w.mf.getKVNamespace("IPDB_CONFIG");
  const status = JSON.parse(await kv.get("ipdb/current:last_update"));
  // Every isolate's /healthz shows it; this one's at once.
  assert.deepEqual((await w.get("/healthz")).body.ipdb.last_update, status);
  const record = await kv.get("ipdb/current");
  return { status, record: record && JSON.parse(record) };
};


const common = { IPDB_CHECK_INTERVAL_SECONDS: "0", IPDB_DOWNLOAD_TIMEOUT_MS: "10000" };

test("DB-IP URL template: this month's 404 takes last month's file; an older period than the published one is never tried", async () => {
  const gz = zlib.gzipSync(BUNDLED);
  // The first month asked for in a run is "not published yet"; any other is there.
  let missing = null;
  handler = (req) => {
    const m = req.url.match(/^\/free\/dbip-country-lite-(\d{4}-\d{2})\.mmdb\.gz$/);
    if (!m) return [400, {}, "bad path"];
    missing ??= m[1];
    return m[1] === missing ? [404, {}, "no such file"] : [200, { "content-type": "application/gzip" }, gz];
  };
  const w = await startWorker({ bindings: { ...common, IPDB_SOURCE_URL: `${base}/free/dbip-country-lite-{YYYY}-{MM}.mmdb.gz` } });
  try {
    requests.length = 0;
    let { status, record } = await runCron(w);
    const asked = requests.map((r) => r.url.match(/lite-(\d{4}-\d{2})/)[1]);
    assert.equal(asked.length, 2, JSON.stringify(asked));
    const [y, m] = asked[0].split("-").map(Number);
    const previous = m === 1 ? `${y - 1}-12` : `${y}-${String(m - 1).padStart(2, "0")}`;
    assert.equal(asked[1], previous, "the previous month, right after the current one");
    assert.equal(status.outcome, "published", JSON.stringify(status));
    assert.deepEqual(status.tried, [`${asked[0]}: answered 404`]);
    assert.deepEqual([status.origin.kind, status.origin.period], ["template", previous]);
    assert.equal(status.origin.url, `${base}/free/dbip-country-lite-${previous}.mmdb.gz`);
    assert.equal(record.sha256, sha256(BUNDLED));
    assert.deepEqual(record.origin, status.origin);
    // The isolate swaps to it; /healthz names where it came from and how fresh it is.
    const h = await pollIpdbHealth(w, (s) => s.version === record.version);
    assert.deepEqual([h.origin.kind, h.origin.period], ["template", previous]);
    assert.equal(h.freshness.last_success_at, status.at);
    assert.equal(typeof h.freshness.since_last_success_s, "number");
    assert.match(h.freshness.next_check_at, /T03:17:00Z$/);
    assert.equal(h.freshness.stale_after_days, 45);
    assert.equal(typeof h.freshness.stale, "boolean");

    // Next month's run, modelled by the current month appearing: taken (same bytes here, so
    // unchanged), and the record now names the newer period.
    missing = "none";
    requests.length = 0;
    ({ status, record } = await runCron(w));
    assert.equal(status.outcome, "unchanged", JSON.stringify(status));
    assert.deepEqual(requests.map((r) => r.url), [`/free/dbip-country-lite-${asked[0]}.mmdb.gz`]);
    assert.equal(record.origin.period, asked[0]);
    const succeeded = status.at;
    // Now the current month 404s (withdrawn): last month is older than what is published, so
    // it is not tried, and the record stays.
    missing = asked[0];
    requests.length = 0;
    const before = JSON.stringify(record);
    ({ status, record } = await runCron(w));
    assert.equal(status.outcome, "refused");
    assert.equal(status.reason, `download: ${asked[0]}: answered 404`);
    assert.equal(requests.length, 1);
    assert.equal(JSON.stringify(record), before, "a failed update changes nothing");
    assert.equal(status.last_success_at, succeeded, "the last success is the run before");
  } finally {
    await w.stop();
  }
});

function maxmindHandler(req) {
  if (req.url !== "/geoip/databases/GeoLite2-Country/download?suffix=tar.gz") return [404, {}, ""];
  const want = `Basic ${Buffer.from(`${ACCOUNT}:${LICENSE}`).toString("base64")}`;
  if (req.headers.authorization !== want) return [401, { "content-type": "text/plain" }, "Invalid account ID or license key"];
  if (req.headers["if-none-match"] === '"r20261201"') return [304, { etag: '"r20261201"' }, ""];
  return [200, { "content-type": "application/gzip", etag: '"r20261201"', "last-modified": "Tue, 01 Dec 2026 16:00:00 GMT" }, maxmindTgz];
}

const maxmindVars = {
  ...common,
  IPDB_SOURCE_URL: "", // set per test (the server's port)
  IPDB_SOURCE_AUTH: "maxmind",
  MAXMIND_ACCOUNT_ID: ACCOUNT,
  // The five-network fixture is vetted by the figures, not against the serving database.
  IPDB_MIN_COUNTRIES: "1",
  IPDB_MAX_DISAGREEMENT: "1",
};

test("MaxMind: basic auth, wrong credentials answer 401 (never shown), the tar.gz's one .mmdb is taken, 304 on If-None-Match", async () => {
  handler = maxmindHandler;
  const url = `${base}/geoip/databases/GeoLite2-Country/download?suffix=tar.gz`;
  const wrong = await startWorker({ bindings: { ...maxmindVars, IPDB_SOURCE_URL: url, MAXMIND_LICENSE_KEY: "not-the-key-either-but-secret" } });
  try {
    const { status, record } = await runCron(wrong);
    assert.equal(status.outcome, "refused");
    assert.equal(status.reason, "download: answered 401");
    assert.equal(record, null, "nothing published");
    const h = JSON.stringify((await wrong.get("/healthz")).body);
    assert.ok(!h.includes("not-the-key-either") && !JSON.stringify(status).includes("not-the-key-either"));
  } finally {
    await wrong.stop();
  }
  const w = await startWorker({ bindings: { ...maxmindVars, IPDB_SOURCE_URL: url, MAXMIND_LICENSE_KEY: LICENSE } });
  try {
    requests.length = 0;
    let { status, record } = await runCron(w);
    assert.equal(status.outcome, "published", JSON.stringify(status));
    assert.equal(requests.length, 1);
    assert.equal(requests[0].headers["if-none-match"], undefined);
    assert.ok(!requests[0].url.includes(LICENSE), "the key is never in the URL");
    assert.equal(record.sha256, sha256(fixture), "the .mmdb member, not the archive");
    assert.deepEqual(record.origin, {
      kind: "maxmind", url, release: "2026-12-01", etag: '"r20261201"', last_modified: "Tue, 01 Dec 2026 16:00:00 GMT",
    });
    // GeoLite2's attribution, from the file's metadata.
    assert.match(record.attribution.text, /GeoLite2 data created by MaxMind/);
    const text = JSON.stringify(status) + JSON.stringify((await w.get("/healthz")).body);
    assert.ok(!text.includes(LICENSE) && !text.includes(Buffer.from(`${ACCOUNT}:${LICENSE}`).toString("base64")));
    const h = await pollIpdbHealth(w, (s) => s.version === record.version);
    assert.equal(h.origin.release, "2026-12-01");
    assert.match(h.attribution.text, /GeoLite2/);

    // The same release again: one conditional request, answered 304; nothing rewritten.
    requests.length = 0;
    const before = JSON.stringify(record);
    ({ status, record } = await runCron(w));
    assert.deepEqual([status.outcome, status.not_modified, status.version], ["unchanged", true, record.version]);
    assert.equal(requests.length, 1);
    assert.equal(requests[0].headers["if-none-match"], '"r20261201"');
    assert.equal(requests[0].headers["if-modified-since"], "Tue, 01 Dec 2026 16:00:00 GMT");
    assert.equal(JSON.stringify(record), before);
  } finally {
    await w.stop();
  }
});

test("a URL with the licence key in it is refused by name, without the value", async () => {
  const w = await startWorker({ bindings: { IPDB_SOURCE_URL: `${base}/app/geoip_download?edition_id=GeoLite2-Country&license_key=${LICENSE}&suffix=tar.gz` } });
  try {
    const h = await w.get("/healthz");
    assert.equal(h.status, 503);
    assert.equal(h.body.config.var, "IPDB_SOURCE_URL");
    assert.match(h.body.config.error, /MAXMIND_LICENSE_KEY/);
    assert.ok(!JSON.stringify(h.body).includes(LICENSE));
  } finally {
    await w.stop();
  }
});

// Production reads staging's KV namespace and bucket through its own bindings
// (IPDB_STAGING_CONFIG, IPDB_STAGING_BUCKET: on Cloudflare the very namespace and bucket staging
// writes). Two local workers have two local stores, so the test copies staging's keys and
// objects verbatim into production's staging bindings.
async function mirrorStaging(staging, production, edit = (r) => r) {
  const from = await staging.mf.getKVNamespace("IPDB_CONFIG");
  const to = await production.mf.getKVNamespace("IPDB_STAGING_CONFIG");
  const record = edit(JSON.parse(await from.get("ipdb/current")));
  await to.put("ipdb/current", JSON.stringify(record));
  await to.put("ipdb/current:last_update", await from.get("ipdb/current:last_update"));
  const src = await staging.mf.getR2Bucket("IPDB_BUCKET");
  const dst = await production.mf.getR2Bucket("IPDB_STAGING_BUCKET");
  for (const o of (await src.list({ prefix: "ipdb/" })).objects) {
    await dst.put(o.key, await (await src.get(o.key)).arrayBuffer());
  }
  return record;
}

test("staging before production: waiting while young or unprobed, promoted once proved, refused after a failed probe", async () => {
  handler = (req) => (req.url === "/dbip-country-lite.mmdb" ? [200, {}, BUNDLED] : [404, {}, ""]);
  const staging = await startWorker({ bindings: { ...common, IPDB_SOURCE_URL: `${base}/dbip-country-lite.mmdb` } });
  const production = await startWorker({
    bindings: { ...common, IPDB_PROMOTE_FROM_KEY: "ipdb/current", IPDB_PROMOTE_AFTER_HOURS: "24" },
    options: { kvNamespaces: ["IPDB_CONFIG", "IPDB_STAGING_CONFIG"], r2Buckets: ["IPDB_BUCKET", "IPDB_STAGING_BUCKET"] },
  });
  try {
    // Staging publishes a plain .mmdb URL's file; its probe is of what served before.
    let s = await runCron(staging);
    assert.equal(s.status.outcome, "published");
    const v = s.record.version;
    assert.match(s.status.probe.version, /^bundled:/);
    await mirrorStaging(staging, production);
    let p = await runCron(production);
    assert.equal(p.status.outcome, "waiting", JSON.stringify(p.status));
    assert.match(p.status.reason, new RegExp(`^staging has served ${v} for \\d+\\.\\d h; production takes it after 24\\.0 h$`));
    assert.equal(p.record, null);
    // Old enough, but staging's cron has not probed it yet.
    const old = (r) => ({ ...r, updated_at: "2026-01-01T00:00:00Z" });
    await mirrorStaging(staging, production, old);
    p = await runCron(production);
    assert.equal(p.status.outcome, "waiting");
    assert.match(p.status.reason, /has not probed/);
    // Staging's next run probes it (every page loaded and verified): now production takes it.
    s = await runCron(staging);
    assert.deepEqual([s.status.outcome, s.status.probe.version, s.status.probe.ok], ["unchanged", v, true]);
    await mirrorStaging(staging, production, old);
    p = await runCron(production);
    assert.equal(p.status.outcome, "published", JSON.stringify(p.status));
    assert.equal(p.record.version, v);
    assert.equal(p.record.origin.promoted_from, "ipdb/current");
    assert.deepEqual([p.record.sha256, p.record.table_pages], [s.record.sha256, s.record.table_pages]);
    const bucket = await production.mf.getR2Bucket("IPDB_BUCKET");
    assert.equal(sha256(Buffer.from(await (await bucket.get(p.record.object_key)).arrayBuffer())), p.record.sha256, "objects copied into production's bucket");
    const h = await pollIpdbHealth(production, (x) => x.version === v);
    assert.equal(h.origin.promoted_from, "ipdb/current");
    assert.equal((await runCron(production)).status.outcome, "unchanged");

    // A new staging version whose page is corrupt: staging's probe fails, production refuses
    // it and keeps serving v.
    const kv = await staging.mf.getKVNamespace("IPDB_CONFIG");
    const sb = await staging.mf.getR2Bucket("IPDB_BUCKET");
    const rec = JSON.parse(await kv.get("ipdb/current"));
    await sb.put("ipdb/corrupt.table/dir.bin", await (await sb.get(`${rec.table_key}/dir.bin`)).arrayBuffer());
    for (let i = 0; i < rec.table_pages.length; i++) {
      const name = `page-${String(i).padStart(3, "0")}.bin`;
      const page = Buffer.from(await (await sb.get(`${rec.table_key}/${name}`)).arrayBuffer());
      page[page.length >> 1] ^= 0xff;
      await sb.put(`ipdb/corrupt.table/${name}`, page);
    }
    await kv.put("ipdb/current", JSON.stringify({ ...rec, version: "corrupt-pages", table_key: "ipdb/corrupt.table", updated_at: "2026-01-01T00:00:00Z" }));
    s = await runCron(staging);
    assert.equal(s.status.outcome, "refused");
    assert.deepEqual([s.status.failed_probe.version, s.status.failed_probe.ok], ["corrupt-pages", false]);
    assert.match(s.status.failed_probe.reason, /checksum/);
    await mirrorStaging(staging, production);
    p = await runCron(production);
    assert.equal(p.status.outcome, "refused");
    assert.match(p.status.reason, /^promotion: staging's probe of corrupt-pages failed at \S+: .*checksum/);
    assert.equal(p.record.version, v, "production's version untouched");
    const after = await production.get("/healthz");
    assert.equal(after.body.ipdb.version, v);
    assert.match(after.body.ipdb.last_update.reason, /probe of corrupt-pages failed/);
  } finally {
    await staging.stop();
    await production.stop();
  }
});
