// Starts the compiled worker (build/index.js + wasm) inside workerd via Miniflare, with the real
// assets directory behind the ASSETS binding, on a free loopback port.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { readFileSync } from "node:fs";
import crypto from "node:crypto";
import { compileText } from "./openapi.mjs";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

// Every answer a test receives from a started worker is validated against the worker's own
// OpenAPI document (tests/js/openapi.mjs): `fetch` is wrapped once, and a request whose URL is
// under a running worker's base has its response checked before the test sees it; a violation
// rejects that fetch, so the test that caused it fails. `/openapi.json` itself is not checked,
// nor, on a worker started from another build than build/ (`buildDir`), its own routes under
// `/__`, which are outside the contract. OPENAPI_VALIDATE=0 turns this off.
const realFetch = globalThis.fetch;
const validators = new Map(); // base URL → { v: compiled document, internal: answers under /__ unchecked }

function validatorFor(url) {
  for (const [base, v] of validators) {
    if (url === base || url.startsWith(`${base}/`) || url.startsWith(`${base}?`)) return v;
  }
  return null;
}

async function validatingFetch(input, init) {
  let res;
  try {
    res = await realFetch(input, init);
  } catch (e) {
    // undici's "fetch failed" hides why in `cause`, which the TAP report does not print.
    if (e?.cause && !e.message.includes("cause:")) e.message += ` (cause: ${e.cause.code ?? ""} ${e.cause.message ?? e.cause})`;
    throw e;
  }
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  const entry = validatorFor(url);
  if (!entry) return res;
  const { v, internal } = entry;
  const { pathname } = new URL(url);
  if ((internal && pathname.startsWith("/__")) || pathname === "/openapi.json") return res;
  const method = init?.method ?? (input instanceof Request ? input.method : "GET");
  // CORS preflights are protocol, not API: the document does not list OPTIONS.
  if (method.toUpperCase() === "OPTIONS") return res;
  const text = await res.clone().text();
  v.validateResponse(method, url, res.status, res.headers, text);
  return res;
}

async function validateAnswers(base, internal) {
  if (process.env.OPENAPI_VALIDATE === "0") return;
  let v;
  const r = await realFetch(`${base}/openapi.json`);
  const text = await r.text();
  if (r.status === 200) {
    v = compileText(text);
  } else if (process.env.OPENAPI_DOC) {
    // Until the worker serves the document: cargo run -p egn-tools --bin openapi > openapi.json.
    v = compileText(readFileSync(process.env.OPENAPI_DOC, "utf8"));
  } else {
    // The worker serves its contract: not being able to read it is a failure, not a skip.
    throw new Error(`${base}/openapi.json answered ${r.status}; set OPENAPI_VALIDATE=0 to run without validation`);
  }
  validators.set(base, { v, internal });
  globalThis.fetch = validatingFetch;
}

// The simple HS256 setup (three variables) that tests sign user tokens for.
export const AUTH = {
  AUTH_HS256_SECRET: "test-hs256-secret-of-at-least-32-characters",
  AUTH_ISSUER: "test-issuer",
  AUTH_AUDIENCE: "test-app",
};

const b64url = (x) => Buffer.from(typeof x === "string" ? x : JSON.stringify(x)).toString("base64url");

/// A JWT for `sub`. `sign(input)` returns the raw signature (default: HS256 with AUTH's secret).
export function userToken(sub, { header = {}, claims = {}, sign } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const h = { alg: "HS256", typ: "JWT", ...header };
  const c = { sub, iss: AUTH.AUTH_ISSUER, aud: AUTH.AUTH_AUDIENCE, iat: now, exp: now + 600, ...claims };
  const input = `${b64url(h)}.${b64url(c)}`;
  const sig = sign ? sign(input) : crypto.createHmac("sha256", AUTH.AUTH_HS256_SECRET).update(input).digest();
  return `${input}.${Buffer.from(sig).toString("base64url")}`;
}

/// Headers of a request made as user `sub`.
export const asUser = (sub) => ({ authorization: `Bearer ${userToken(sub)}`, "content-type": "application/json" });

/// Miniflare options that bind the events queue (NOTIFY_QUEUE) and its dead-letter queue, both
/// consumed by the worker itself. Opt-in (`startWorker({ queue: {...} })`): without it the worker
/// has no binding and creates take the synchronous path. The batch sizes are wrangler.toml's: a
/// message carries up to 10 packed events, so 100 messages bound an invocation to 1 000 events.
export function queueOptions({ maxRetries = 3, maxBatchTimeout = 1, dlqMaxRetries = 10, maxBatchSize = 100, dlqMaxBatchSize = 10 } = {}) {
  return {
    queueProducers: { NOTIFY_QUEUE: { queueName: "notify-events" } },
    queueConsumers: {
      "notify-events": { maxBatchSize, maxBatchTimeout, maxRetries, deadLetterQueue: "notify-events-dlq" },
      "notify-events-dlq": { maxBatchSize: dlqMaxBatchSize, maxBatchTimeout, maxRetries: dlqMaxRetries },
    },
  };
}

/// The bench build (`bash scripts/build-worker.sh --bench`), for the probes in bench/ and the
/// test that checks it. The other tests run `build/`, the deployed artifact.
export const BENCH_BUILD = path.join(ROOT, "build-bench");

/// One worker's Miniflare options: the compiled worker, its assets, bindings and local
/// backends (shared by `startWorker` and benchmarks that run several isolates in one runtime).
export function workerOptions({ assetsDir = path.join(ROOT, "assets"), buildDir = path.join(ROOT, "build"), bindings = {}, queue } = {}) {
  return {
    name: "edge-geo-notify",
    modules: true,
    scriptPath: path.join(buildDir, "index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-07-01",
    assets: {
      directory: assetsDir,
      binding: "ASSETS",
      routerConfig: { invoke_user_worker_ahead_of_assets: true, has_user_worker: true },
    },
    // Local development: the public test secrets are accepted (pass ENVIRONMENT: "" to run as
    // a deployed worker, which refuses them).
    bindings: { ENVIRONMENT: "development", IPDB_KV_KEY: "ipdb/current", ...bindings },
    kvNamespaces: ["IPDB_CONFIG"],
    durableObjects: { INBOX_HUB: "InboxHub" },
    r2Buckets: ["IPDB_BUCKET"],
    ...(queue ? queueOptions(queue) : {}),
  };
}

/// Runtime-wide options: a fixed request.cf (Miniflare would otherwise try to download one)
/// and a free loopback port.
export const RUNTIME = { cf: { country: "GB", colo: "LHR", asn: 64512, timezone: "Europe/London" }, host: "127.0.0.1", port: 0 };

export async function startWorker({ assetsDir, buildDir, bindings = {}, options = {}, queue } = {}) {
  // Node 22's fetch pools connections; workerd closes idle ones, so tests use fresh ones.
  const mf = new Miniflare({ ...workerOptions({ assetsDir, buildDir, bindings, queue }), ...RUNTIME, ...options });
  const url = await mf.ready;
  const base = url.href.replace(/\/$/, "");
  await validateAnswers(base, buildDir !== undefined);
  return {
    mf,
    base,
    async get(p) {
      const r = await fetch(base + p);
      return { status: r.status, headers: r.headers, body: await r.json() };
    },
    async post(p, body, headers = {}) {
      const r = await fetch(base + p, {
        method: "POST",
        body: typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body),
        headers,
      });
      const text = await r.text();
      let json;
      try { json = JSON.parse(text); } catch { json = text; }
      return { status: r.status, headers: r.headers, body: json };
    },
    async stop() { validators.delete(base); await mf.dispose(); },
  };
}

// Polls `/healthz` until its `ipdb` report satisfies `pred`, each round after one IP lookup (the
// hot-swap check runs after a lookup's response, in waitUntil); returns that report.
export async function pollIpdbHealth(w, pred, ip = "81.2.69.160") {
  for (let i = 0; i < 200; i++) {
    await w.get(`/v1/geo/ip?ip=${ip}`);
    const h = await w.get("/healthz");
    if (pred(h.body.ipdb)) return h.body.ipdb;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error("/healthz never reported the expected ipdb state");
}
