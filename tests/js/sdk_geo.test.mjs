// The TypeScript SDK's geo calls (clients/ts/src/geo.ts) against the compiled worker in workerd:
// the shared cases of clients/conformance/geo/cases.json (the Kotlin SDK runs the same file in
// GeoIntegrationTest), so both SDKs give the same answers and error codes for the same inputs.
// Every answer is validated against the served OpenAPI document by the harness.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { startWorker, ROOT } from "./harness.mjs";
import { GeoClient, InboxClient, InboxError } from "../../clients/ts/src/index.ts";

const { cases } = JSON.parse(fs.readFileSync(path.join(ROOT, "clients/conformance/geo/cases.json"), "utf8"));

let w, geo;
before(async () => {
  w = await startWorker();
  geo = new GeoClient({ baseUrl: w.base, retry: { attempts: 0 } });
});
after(async () => { await w?.stop(); });

/** A case's number: the strings "NaN", "Infinity" and "-Infinity" stand for what JSON cannot hold. */
const num = (v) => (typeof v === "string" ? Number(v) : v);

/** One case's call, reduced to what `expect` compares (the same reduction as the Kotlin test). */
async function run(c) {
  const opts = c.fields === undefined ? {} : { fields: c.fields };
  switch (c.call) {
    case "whereIs": {
      const r = await geo.whereIs(num(c.lat), num(c.lon), opts);
      assert.deepEqual([r.lat, r.lon], [c.lat, c.lon], "the point as parsed");
      return { country: r.country?.alpha2 ?? null, timeZone: r.timeZone ?? null };
    }
    case "whereAre": {
      const r = await geo.whereAre(c.points.map(([lat, lon]) => ({ lat: num(lat), lon: num(lon) })), opts);
      return { countries: r.results.map((x) => x?.alpha2 ?? null), timeZones: r.timeZones ?? null };
    }
    case "me": {
      const r = await geo.me(c.at && { lat: num(c.at.lat), lon: num(c.at.lon) });
      const got = { zone: r.time_zone, cfTimezone: r.cf_timezone };
      if (c.at) Object.assign(got, { country: r.coordinates?.country?.alpha2 ?? null, timeZone: r.coordinates?.timeZone ?? null });
      return got;
    }
    default:
      throw new Error(`unknown call ${c.call}`);
  }
}

for (const c of cases) {
  test(`geo: ${c.call}: ${c.name}`, async () => {
    if (c.expect.error) {
      await assert.rejects(run(c), (e) => {
        assert.ok(e instanceof InboxError, String(e));
        assert.deepEqual({ status: e.status, code: e.code }, c.expect.error);
        assert.ok(e.requestId, "the answer's X-Request-Id");
        assert.equal(e.retryable, false);
        return true;
      });
    } else {
      assert.deepEqual(await run(c), c.expect);
    }
  });
}

test("geo: an InboxClient's geo shares its Http (the user's token rides along; the routes are public)", async () => {
  let asked = 0;
  const c = new InboxClient({ baseUrl: w.base, getToken: () => { asked++; return "not-a-jwt"; }, user: "u", live: false, watchVisibility: false });
  assert.equal(c.geo.http, c.http);
  const r = await c.geo.whereIs(47.697, 8.691, { fields: ["country"] });
  assert.deepEqual(r, { lat: 47.697, lon: 8.691, country: { alpha2: "DE", alpha3: "DEU" } });
  assert.equal(asked, 1, "the cached token, asked once");
});
