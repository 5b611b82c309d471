// What GeoClient sends, with a recording fetch (the answers against the worker, and the same
// cases in Kotlin, are clients/conformance/geo/cases.json, run by tests/js/sdk_geo.test.mjs):
// no token on the public routes (a 401 is final), the query and body as written, non-finite
// numbers in a batch as null (Kotlin's GeoUnitTest checks it sends the same), errors with the
// server's code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { GeoClient } from "../src/geo.ts";
import { InboxError } from "../src/http.ts";

function recording(status: number, body: unknown) {
  const calls: Array<{ url: string; method: string; headers: Record<string, string>; body?: string }> = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit) => {
    calls.push({ url: String(url), method: init?.method ?? "GET", headers: { ...(init?.headers as Record<string, string>) }, body: init?.body as string | undefined });
    return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "x-request-id": "r1" } });
  };
  return { fetch: fetch as typeof globalThis.fetch, calls };
}

const geo = (f: typeof globalThis.fetch) => new GeoClient({ baseUrl: "http://x/", fetch: f, retry: { attempts: 0 } });

test("requests as written, without a token", async () => {
  const s = recording(200, { lat: 47.697, lon: 8.691, country: { alpha2: "DE", alpha3: "DEU" } });
  const r = await geo(s.fetch).whereIs(47.697, 8.691, { fields: ["country"] });
  assert.deepEqual(r, { lat: 47.697, lon: 8.691, country: { alpha2: "DE", alpha3: "DEU" } });
  assert.equal(`${s.calls[0].method} ${s.calls[0].url}`, "GET http://x/v1/geo/country?lat=47.697&lon=8.691&fields=country");
  assert.equal("authorization" in s.calls[0].headers, false);
  await geo(s.fetch).whereIs(0, -150, { fields: [] });
  assert.equal(s.calls[1].url, "http://x/v1/geo/country?lat=0&lon=-150&fields=");
  await geo(s.fetch).me({ lat: 1e-7, lon: -2.5 });
  assert.equal(s.calls[2].url, "http://x/v1/geo/me?lat=1e-7&lon=-2.5");
  await geo(s.fetch).me();
  assert.equal(s.calls[3].url, "http://x/v1/geo/me");
});

test("a batch sends non-finite numbers as null", async () => {
  const s = recording(200, { results: [{ alpha2: "DE", alpha3: "DEU" }, null], timeZones: ["Europe/Busingen", "Etc/GMT+10"] });
  await geo(s.fetch).whereAre([{ lat: 47.697, lon: 8.691 }, { lat: NaN, lon: -Infinity }], { fields: ["country", "timeZone"] });
  assert.equal(`${s.calls[0].method} ${s.calls[0].url}`, "POST http://x/v1/geo/country?fields=country,timeZone");
  assert.equal(s.calls[0].body, '{"points":[[47.697,8.691],[null,null]]}');
});

test("errors carry the server's code; a 401 is final without a token", async () => {
  const refused = recording(400, { error: { code: "invalid_coordinate", message: "lat" } });
  const e = await geo(refused.fetch).whereIs(91, 0).catch((x) => x);
  assert.ok(e instanceof InboxError);
  assert.deepEqual([e.status, e.code, e.requestId], [400, "invalid_coordinate", "r1"]);
  const unauthorized = recording(401, { error: { code: "unauthorized", message: "no" } });
  const u = await geo(unauthorized.fetch).me().catch((x) => x);
  assert.equal(u.code, "unauthorized");
  assert.equal(unauthorized.calls.length, 1, "no token to refresh");
});
