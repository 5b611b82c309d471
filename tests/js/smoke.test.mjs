// The operating scripts against a real local deployment: `wrangler dev --env staging` on the
// local backend stack, with Miniflare state in a temporary --persist-to directory.
// - scripts/smoke.sh passes against it, and fails against broken targets;
// - scripts/publish-ipdb.sh --local (the same code path as --remote) writes into that state and
//   the running worker swaps to the new database.
// The worker is configured with the harness's HS256 variables (AUTH) and smoke.sh authenticates the
// list with a token minted for them (userToken). A worker with secrets missing (Miniflare
// harness) names them in /healthz.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { AUTH, ROOT, startWorker, userToken } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const SERVICE_TOKEN = "smoke-test-service-token";
// A staleness threshold no bundled database reaches (the real default is 45 days).
const FRESH_FOR_EVER = "36500";
const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };
let stack, dev, base, persist, devLog = "";

async function freePort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

// Runs a command to completion (asynchronously, so the worker keeps serving meanwhile).
function run(cmd, args, { env = {} } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: ROOT, env: { ...ENV, ...env } });
    let stdout = "", stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

// Polls until `probe` returns a truthy value or the deadline passes.
async function waitFor(what, probe, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) assert.fail(`${what} not reached within ${ms} ms\n${devLog.slice(-3000)}`);
    await delay(200);
  }
}

before(async () => {
  stack = await startStack();
  persist = fs.mkdtempSync(path.join(os.tmpdir(), "wrangler-state-"));
  const port = await freePort();
  const vars = {
    ...stack.bindings,
    SERVICE_TOKEN,
    // wrangler dev also reads .dev.vars; --var overrides it, as for every other value here.
    ...AUTH,
    IPDB_CHECK_INTERVAL_SECONDS: "0",
    // The bundled database's age must not decide this run: its staleness is tested below.
    IPDB_STALE_AFTER_DAYS: FRESH_FOR_EVER,
    ENVIRONMENT: "development",
  };
  const args = [
    path.join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "dev", "--env", "staging",
    "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persist,
    "--show-interactive-dev-session=false",
    ...Object.entries(vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
  ];
  // Its own process group, so the worker runtime it starts is stopped with it.
  dev = spawn(process.execPath, args, { cwd: ROOT, env: ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  dev.stdout.on("data", (d) => (devLog += d));
  dev.stderr.on("data", (d) => (devLog += d));
  base = `http://127.0.0.1:${port}`;
  // The custom build (asset check, incremental worker build) runs first.
  await waitFor("wrangler dev answering /healthz", async () => (await fetch(`${base}/healthz`)).status === 200, 240_000);
});

after(async () => {
  if (dev && dev.exitCode === null) {
    const exited = new Promise((r) => dev.once("exit", r));
    process.kill(-dev.pid, "SIGTERM");
    await exited;
  }
  await stack?.stop();
  if (persist) fs.rmSync(persist, { recursive: true, force: true });
});

const smoke = (url, ...flags) => run("bash", [path.join(ROOT, "scripts/smoke.sh"), url, ...flags]);

test("smoke.sh passes against the local wrangler dev worker: public routes, list, create/retract", async () => {
  const token = userToken("smoke-ana");
  const r = await smoke(base, "--service-key", SERVICE_TOKEN, "--token", token);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  for (const line of [
    "PASS healthz: 200, status ok",
    "PASS healthz: no missing secrets",
    "PASS GET /v1/geo/country (Paris → FR)",
    "PASS GET /v1/geo/ip (public address, IPDB version)",
    "PASS IP database is fresh",
    "PASS unknown route → 404 JSON error",
    "PASS GET /v1/notifications without credentials → 401",
    "PASS GET /v1/notifications (authenticated list)",
    "PASS POST /v1/notifications/events (service create)",
    "PASS created item is listed for its owner",
    "PASS POST /v1/notifications/retractions (service retract)",
  ]) {
    assert.ok(r.stdout.split("\n").includes(line), `${line}\n${r.stdout}`);
  }
  assert.doesNotMatch(r.stdout, /^(FAIL|SKIP) /m);
  assert.match(r.stdout, /^smoke: \d+ passed, 0 failed$/m);
  assert.ok(!r.stdout.includes(SERVICE_TOKEN), "the service key is never printed");
  assert.ok(!r.stdout.includes(token), "the user token is never printed");
  // The retraction removed the smoke item: the owner's list no longer has it.
  const list = await (await fetch(`${base}/v1/notifications?limit=100`, { headers: { authorization: `Bearer ${token}` } })).json();
  assert.ok(!list.items.some((i) => i.itemKey.startsWith("smoke:")), JSON.stringify(list));
});

test("smoke.sh --token: the worker verifies it (no header names a user any more)", async () => {
  // A token signed with another secret fails the list; the old dev header is no credential.
  const forged = userToken("smoke-ana", { sign: (input) => crypto.createHmac("sha256", "another-secret-of-at-least-32-characters").update(input).digest() });
  let r = await smoke(base, "--token", forged);
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /^FAIL GET \/v1\/notifications \(authenticated list\): HTTP 401/m);
  const dev = await fetch(`${base}/v1/notifications?limit=1`, { headers: { "x-dev-user": "smoke-ana" } });
  assert.equal(dev.status, 401);
  assert.equal((await dev.json()).error.code, "unauthorized");
  // --owner other than the token's user: created and retracted, but not looked for in the list.
  r = await smoke(base, "--service-key", SERVICE_TOKEN, "--token", userToken("smoke-ana"), "--owner", "smoke-other");
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.doesNotMatch(r.stdout, /created item is listed/);
  assert.match(r.stdout, /^PASS POST \/v1\/notifications\/retractions \(service retract\)$/m);
  // The dev flag is gone.
  r = await smoke(base, "--dev-user", "smoke-ana");
  assert.equal(r.code, 2, r.stdout + r.stderr);
});

test("smoke.sh fails against broken targets", async () => {
  // A wrong service key: the public part passes, create and retract fail.
  let r = await smoke(base, "--service-key", "not-the-key");
  assert.equal(r.code, 1, r.stdout);
  assert.match(r.stdout, /^FAIL POST \/v1\/notifications\/events \(service create\): HTTP 401/m);
  // No --token: user auth was not exercised, which fails the run.
  assert.match(r.stdout, /^FAIL authenticated list: no --token/m);
  // Something that answers 200 with HTML everywhere (a misrouted domain): no JSON check passes.
  const server = http.createServer((req, res) => { res.writeHead(200, { "content-type": "text/html" }); res.end("<html>parked</html>"); });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  try {
    r = await smoke(`http://127.0.0.1:${server.address().port}`);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^FAIL healthz: 200, status ok: unexpected body/m);
    assert.equal(r.stdout.match(/^PASS /gm)?.length ?? 0, 1, `only the console check passes:\n${r.stdout}`);
  } finally {
    server.close();
  }
  // Nothing listening.
  r = await smoke(`http://127.0.0.1:${await freePort()}`);
  assert.equal(r.code, 1);
  assert.doesNotMatch(r.stdout, /^PASS /m);
  r = await smoke("not-a-url");
  assert.equal(r.code, 2);
});

test("smoke.sh proves user auth: a worker whose issuer is wrong fails; --skip-user-auth is an explicit, warned skip", async () => {
  // Everything else passes, so a failure can only come from user auth.
  const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN, ...AUTH, AUTH_ISSUER: "https://not-the-token-issuer.test", IPDB_STALE_AFTER_DAYS: FRESH_FOR_EVER } });
  try {
    let r = await smoke(w.base, "--service-key", SERVICE_TOKEN, "--token", userToken("smoke-iss"));
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^FAIL GET \/v1\/notifications \(authenticated list\): HTTP 401/m);
    assert.match(r.stdout, /^PASS POST \/v1\/notifications\/events \(service create\)$/m);
    r = await smoke(w.base, "--service-key", SERVICE_TOKEN);
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^FAIL authenticated list: no --token/m);
    r = await smoke(w.base, "--service-key", SERVICE_TOKEN, "--skip-user-auth");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^SKIP authenticated list: --skip-user-auth/m);
    assert.match(r.stderr, /^WARNING --skip-user-auth/m);
  } finally {
    await w.stop();
  }
});

test("smoke.sh flags a stale IP database (older than IPDB_STALE_AFTER_DAYS) and fails", async () => {
  const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN, ...AUTH, IPDB_STALE_AFTER_DAYS: "0" } });
  try {
    const r = await smoke(w.base, "--service-key", SERVICE_TOKEN, "--token", userToken("smoke-stale"));
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /^FAIL IP database is fresh: STALE: built \d{4}-\d\d-\d\dT[\d:]+Z, \d+ days ago; stale after 0 days; last successful update never, next unknown$/m);
    // Everything else passes: the database's age alone failed the run.
    assert.equal(r.stdout.match(/^FAIL /gm).length, 1, r.stdout);
    const h = (await w.get("/healthz")).body.ipdb.freshness;
    assert.deepEqual([h.stale, h.stale_after_days, h.last_success_at], [true, 0, null]);
  } finally {
    await w.stop();
  }
});

test("a missing secret shows by name in /healthz (never a value) and fails the smoke test", async () => {
  const secrets = Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, "secrets.example.json"), "utf8")));
  const w = await startWorker({ bindings: { SERVICE_TOKEN: "value-that-must-not-leak", REDIS_REST_URL: "" } });
  try {
    const h = await w.get("/healthz");
    assert.equal(h.status, 200, "geo still serves");
    // The required ones, by name; AUTH_HS256_SECRET is optional (JWKS can replace it).
    assert.deepEqual(h.body.secrets.missing, ["DATA_API_URL", "DATA_API_KEY", "REDIS_REST_URL", "REDIS_REST_TOKEN"]);
    for (const s of h.body.secrets.missing) assert.ok(secrets.includes(s), `${s} is in secrets.example.json`);
    assert.ok(!JSON.stringify(h.body).includes("value-that-must-not-leak"));
    const r = await smoke(w.base);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /^FAIL healthz: no missing secrets: missing \["DATA_API_URL","DATA_API_KEY","REDIS_REST_URL","REDIS_REST_TOKEN"\]$/m);
  } finally {
    await w.stop();
  }
});

test("publish-ipdb.sh --local: validated, object then record into wrangler's state; the running worker swaps", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "publish-"));
  const file = path.join(dir, "geoip2.mmdb");
  execFileSync(path.join(ROOT, ".venv/bin/python"), [path.join(ROOT, "tests/fixtures/make_geoip2_mmdb.py"), file]);
  const publish = (...flags) => run("bash", [path.join(ROOT, "scripts/publish-ipdb.sh"), file, "--env", "staging", "--local", "--persist-to", persist, ...flags]);
  let r = await fetch(`${base}/v1/geo/ip?ip=9.9.9.9`).then((x) => x.json());
  assert.equal(r.ipdb.source, "bundled");

  // The five-network fixture disagrees with the default on nearly every probe: refused, and
  // nothing reaches the worker's state.
  let p = await publish("--url", base);
  assert.equal(p.code, 1, p.stderr);
  assert.match(p.stdout, /disagrees with assets\/ip\/default\.mmdb/);
  assert.doesNotMatch(p.stderr, /\+ wrangler/);
  const h = await fetch(`${base}/healthz`).then((x) => x.json());
  assert.match(h.ipdb.last_check_outcome, /no record/);

  // Allowed explicitly, it is published and served.
  p = await publish("--max-disagreement", "1", "--url", base, "--timeout", "120");
  assert.equal(p.code, 0, p.stdout + p.stderr);
  const put = p.stderr.indexOf("+ wrangler r2 object put edge-geo-notify-ipdb-staging/ipdb/");
  const record = p.stderr.indexOf("+ wrangler kv key put --binding IPDB_CONFIG ipdb/current");
  assert.ok(put >= 0 && record > put, `object before record:\n${p.stderr}`);
  assert.match(p.stderr, /--local --persist-to \S+ --env staging/);
  const version = p.stderr.match(/OK: \S+ serves (\S+)/)?.[1];
  assert.ok(version, p.stderr);
  // The worker answers from the new database: the fixture knows 81.2.69.0/24 but not 9.9.9.9.
  r = await fetch(`${base}/v1/geo/ip?ip=81.2.69.160`).then((x) => x.json());
  assert.deepEqual([r.country, r.ipdb.version, r.ipdb.source], ["GB", version, "r2"]);
  r = await fetch(`${base}/v1/geo/ip?ip=9.9.9.9`).then((x) => x.json());
  assert.equal(r.reason, "not_found");
  fs.rmSync(dir, { recursive: true, force: true });
});
