// Conformance: the official @upstash/redis client against the local stack's REST bridge.
// Run: node --test tests/js/stack_upstash.test.mjs   (needs .venv: see stack/README.md)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash, randomUUID } from "node:crypto";
import { Redis } from "@upstash/redis";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const PYTHON = join(ROOT, ".venv", "bin", "python");
// A missing venv is a setup failure, not a reason to skip: scripts/setup.sh creates it.
if (!existsSync(PYTHON)) throw new Error("no .venv: run bash scripts/setup.sh");

let proc;
let info;

function startStack() {
  return new Promise((resolve, reject) => {
    proc = spawn(PYTHON, ["-m", "stack", "--redis-rest-port", "0", "--data-api-port", "0", "--exit-with-parent"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    proc.once("error", reject);
    proc.once("exit", (code) => reject(new Error(`stack exited early (code ${code})`)));
    createInterface({ input: proc.stdout }).once("line", (line) => resolve(JSON.parse(line)));
  });
}

before(async () => {
  info = await startStack();
});

after(async () => {
  if (!proc || proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.once("exit", r));
  proc.removeAllListeners("exit");
  proc.kill("SIGTERM");
  await exited;
});

const client = (opts = {}) =>
  new Redis({ url: info.redis_rest_url, token: info.redis_token, retry: false, ...opts });
const key = (p) => `${p}:${randomUUID()}`;

test("set/get (default base64 response encoding + automatic deserialization)", async () => {
  const redis = client();
  const k = key("s");
  assert.equal(await redis.set(k, "héllo wörld ✓"), "OK");
  assert.equal(await redis.get(k), "héllo wörld ✓");
  await redis.set(k, { a: 1, nested: [1, "x"] });
  assert.deepEqual(await redis.get(k), { a: 1, nested: [1, "x"] });
  assert.equal(await redis.get(key("missing")), null);
  assert.equal(await redis.incr(key("n")), 1);
  assert.equal(await redis.ping(), "PONG");
});

test("responseEncoding disabled and automaticDeserialization off", async () => {
  const redis = client({ responseEncoding: false, automaticDeserialization: false });
  const k = key("plain");
  await redis.set(k, '{"a":1}');
  assert.equal(await redis.get(k), '{"a":1}');
});

test("hset/hsetnx/hgetall", async () => {
  const redis = client();
  const k = key("h");
  assert.equal(await redis.hset(k, { a: "1", b: "two" }), 2);
  assert.equal(await redis.hsetnx(k, "a", "9"), 0);
  assert.equal(await redis.hsetnx(k, "c", "3"), 1);
  assert.deepEqual(await redis.hgetall(k), { a: 1, b: "two", c: 3 });
});

test("eval / evalsha / script load / createScript NOSCRIPT fallback", async () => {
  const redis = client();
  const k = key("lua");
  const src = "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])";
  assert.equal(await redis.eval(src, [k], ["v1"]), "v1");
  const sha = await redis.scriptLoad(src);
  assert.equal(sha, createHash("sha1").update(src).digest("hex"));
  assert.equal(await redis.evalsha(sha, [k], ["v2"]), "v2");
  const fresh = `return ARGV[1] .. '${randomUUID()}'`;
  const freshSha = createHash("sha1").update(fresh).digest("hex");
  await assert.rejects(redis.evalsha(freshSha, [], ["x"]), /NOSCRIPT/);
  const script = redis.createScript(fresh);
  assert.match(await script.exec([], ["x"]), /^x/); // evalsha -> NOSCRIPT -> eval
});

test("pipeline (non-atomic, per-command errors)", async () => {
  const redis = client();
  const k = key("p");
  const p = redis.pipeline();
  p.set(k, "1").incr(k).get(k).lpush(k, "x");
  const res = await p.exec({ keepErrors: true });
  assert.deepEqual(res.slice(0, 3).map((r) => r.result), ["OK", 2, 2]);
  assert.match(res[3].error, /WRONGTYPE/);
  const p2 = redis.pipeline();
  p2.set(k, "a").lpush(k, "x");
  await assert.rejects(p2.exec(), /WRONGTYPE/);
});

test("multi-exec (redis.multi())", async () => {
  const redis = client();
  const k = key("m");
  const tx = redis.multi();
  tx.set(k, "5").incrby(k, 3).get(k);
  assert.deepEqual(await tx.exec(), ["OK", 8, 8]);
  const bad = redis.multi();
  bad.set(k, "100");
  bad.eval("return redis.call('INCR')", [], []); // runtime error inside EXEC
  const res = await bad.exec({ keepErrors: true });
  assert.equal(res[0].result, "OK");
  assert.ok(res[1].error);
});

test("read-only token rejects writes", async () => {
  const rw = client();
  const ro = client({ token: info.redis_readonly_token });
  const k = key("ro");
  await rw.set(k, "v");
  assert.equal(await ro.get(k), "v");
  await assert.rejects(ro.set(k, "w"), /NOPERM/);
  await assert.rejects(ro.eval("return 1", [], []), /NOPERM/);
  assert.equal(await rw.get(k), "v");
});

test("bad token is rejected", async () => {
  const bad = client({ token: "wrong" });
  await assert.rejects(bad.get("x"), /Unauthorized/);
});
