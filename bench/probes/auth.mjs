// What user authentication costs inside workerd (Miniflare on loopback, bounded): token
// verification per algorithm with warm key caches, and an authenticated route's throughput next
// to a public geo route and a trivial endpoint of the same worker, in the same run.
// Usage: node bench/probes/auth.mjs   (after scripts/setup.sh)
import crypto from "node:crypto";
import http from "node:http";
import { startWorker, AUTH, userToken } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";
import { benchWorker } from "./bench_build.mjs";

process.env.OPENAPI_VALIDATE = "0"; // measure the worker, not the test harness
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const now = () => performance.now();

const rsa = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const jwk = (k, kid, alg) => ({ ...k.publicKey.export({ format: "jwk" }), kid, alg, use: "sig" });
const server = http.createServer((_, res) => {
  res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=3600" });
  res.end(JSON.stringify({ keys: [jwk(rsa, "r", "RS256"), jwk(ec, "e", "ES256")] }));
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const ISS = "https://bench.issuer", AUD = "bench";
const signed = (alg, kid, key, opts) => userToken("bench-user", {
  header: { alg, kid }, claims: { iss: ISS, aud: AUD, exp: Math.floor(Date.now() / 1000) + 3600 },
  sign: (i) => crypto.sign("sha256", Buffer.from(i), opts ?? key),
});
const tokens = {
  HS256: userToken("bench-user", { claims: { exp: Math.floor(Date.now() / 1000) + 3600 } }),
  RS256: signed("RS256", "r", rsa.privateKey),
  ES256: signed("ES256", "e", null, { key: ec.privateKey, dsaEncoding: "ieee-p1363" }),
};

const stack = await startStack();
const w = await startWorker(benchWorker({
  bindings: {
    ...stack.bindings, ...AUTH, SERVICE_TOKEN: "bench",
    AUTH_JWKS_URL: `http://127.0.0.1:${server.address().port}/jwks`, AUTH_JWKS_ISSUER: ISS, AUTH_JWKS_AUDIENCE: AUD,
    AUTH_JWKS_ALGS: "RS256,ES256",
  },
}));
const get = async (p, token) => {
  const r = await fetch(w.base + p, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = await r.text();
  if (r.status !== 200) throw new Error(`${p}: ${r.status} ${body}`);
  return body;
};

console.log("| measurement | value |\n|---|---|");
// Per-verification cost: n verifications in one request minus n=0, median of 15 rounds.
const N = 2000;
for (const [alg, t] of Object.entries(tokens)) {
  await get(`/__bench/auth?n=10`, t); // warm: JWKS fetched, keys imported
  const per = [];
  for (let k = 0; k < 15; k++) {
    let t0 = now(); await get(`/__bench/auth?n=0`, t); const base = now() - t0;
    t0 = now(); const body = JSON.parse(await get(`/__bench/auth?n=${N}`, t)); const full = now() - t0;
    if (body.ok !== N) throw new Error(`${alg}: ${body.ok}/${N} verified`);
    per.push(((full - base) / N) * 1000);
  }
  console.log(`| ${alg} verification, warm key cache (workerd) | ${median(per).toFixed(1)} µs |`);
}

async function rps(p, token, n = 3000, conc = 8) {
  let i = 0;
  const lat = [];
  const t = now();
  await Promise.all(Array.from({ length: conc }, async () => {
    while (i++ < n) { const s = now(); await get(p, token); lat.push(now() - s); }
  }));
  return { rps: n / ((now() - t) / 1000), p50: median(lat) };
}
await get("/v1/notifications/unread-count", tokens.HS256);
const noop = await rps("/__bench/noop");
const geo = await rps("/v1/geo/country?lat=47.697&lon=8.691");
const user = {};
for (const alg of Object.keys(tokens)) user[alg] = await rps("/v1/notifications/unread-count", tokens[alg], 1500);
console.log(`| req/s trivial endpoint | ${noop.rps.toFixed(0)} (p50 ${noop.p50.toFixed(2)} ms) |`);
console.log(`| req/s public geo (GET /v1/geo/country) | ${geo.rps.toFixed(0)} (${(geo.rps / noop.rps).toFixed(2)}× trivial) |`);
for (const [alg, r] of Object.entries(user)) {
  console.log(`| req/s authenticated unread-count, ${alg} (1 Data API call to the local stack) | ${r.rps.toFixed(0)} (${(r.rps / geo.rps).toFixed(2)}× geo; p50 ${r.p50.toFixed(2)} ms) |`);
}
await w.stop();
await stack.stop();
server.close();
