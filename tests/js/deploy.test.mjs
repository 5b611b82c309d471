// Deploying without an account: `wrangler deploy --dry-run` for every environment validates the
// bundle, the assets directory and each environment's bindings; the operating scripts' --dry-run
// plans are checked, and so is the README's Deploy section against them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./harness.mjs";

const ENV = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };
const BUNDLED = path.join(ROOT, "assets/ip/default.mmdb");
const SECRETS = Object.keys(JSON.parse(fs.readFileSync(path.join(ROOT, "secrets.example.json"), "utf8")));

function bash(script, { cwd = ROOT, env = {} } = {}) {
  const r = spawnSync("bash", ["-c", script], { cwd, env: { ...ENV, ...env }, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ENVIRONMENTS = [
  { env: null, bucket: "edge-geo-notify-ipdb", kv: "00000000000000000000000000000000" },
  { env: "staging", bucket: "edge-geo-notify-ipdb-staging", kv: "REPLACE-staging-IPDB_CONFIG-namespace-id" },
  { env: "production", bucket: "edge-geo-notify-ipdb-production", kv: "REPLACE-production-IPDB_CONFIG-namespace-id" },
];

for (const { env, bucket, kv } of ENVIRONMENTS) {
  test(`wrangler deploy --dry-run ${env ? `--env ${env}` : "(top level)"} succeeds with its own bindings`, () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "dry-"));
    const args = ["deploy", "--dry-run", "--outdir", out, ...(env ? ["--env", env] : [])];
    const stdout = execFileSync(process.execPath, [path.join(ROOT, "node_modules/wrangler/bin/wrangler.js"), ...args], {
      cwd: ROOT, env: ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"],
    });
    for (const binding of ["env.ASSETS", "env.IPDB_CONFIG", "env.IPDB_BUCKET", "env.IPDB_KV_KEY", "env.GEO_RATE_LIMITER", "env.USER_RATE_LIMITER", "env.AUTH_ISSUER", "env.AUTH_AUDIENCE"]) {
      assert.match(stdout, new RegExp(binding.replace(".", "\\.")), binding);
    }
    // The environment's own namespace and bucket, not the top level's.
    assert.ok(stdout.includes(`env.IPDB_BUCKET (${bucket})`), stdout);
    assert.ok(stdout.includes(`env.IPDB_CONFIG (${kv})`), stdout);
    assert.doesNotMatch(stdout, /DEV_AUTH/, "no dev-only identity switch is deployed");
    assert.match(stdout, /--dry-run: exiting now/);
    const bundle = fs.readdirSync(out);
    assert.ok(bundle.some((f) => f.endsWith(".wasm")), `bundle has the wasm module: ${bundle}`);
    fs.rmSync(out, { recursive: true, force: true });
  });
}

test("each environment declares its own vars, cron and bindings (nothing relies on inheritance)", () => {
  const r = bash(`python3 - <<'EOF'
import json, tomllib
c = tomllib.load(open("wrangler.toml", "rb"))
print(json.dumps({"top": c, **{k: c["env"][k] for k in ("staging", "production")}}))
EOF`);
  assert.equal(r.code, 0, r.stderr);
  const { top, ...envs } = JSON.parse(r.stdout);
  // No switch lets a header name the user: DEV_AUTH is gone from the file, not merely "false".
  assert.doesNotMatch(fs.readFileSync(path.join(ROOT, "wrangler.toml"), "utf8"), /DEV_AUTH|X-Dev-User/i);
  const limiters = (e) => Object.fromEntries((e.ratelimits ?? []).map((l) => [l.name, l]));
  for (const [name, e] of Object.entries({ top, ...envs })) {
    assert.ok(!("DEV_AUTH" in e.vars), `${name}: no DEV_AUTH`);
    // No secret is ever configured as a var (AUTH_HS256_SECRET included).
    for (const s of SECRETS) assert.ok(!(s in e.vars), `${name}: ${s} must be a secret`);
    // User tokens: the issuer and audience are vars (the HS256 secret or a JWKS URL completes them).
    assert.ok(e.vars.AUTH_ISSUER && e.vars.AUTH_AUDIENCE, `${name}: AUTH_ISSUER and AUTH_AUDIENCE`);
    assert.equal(e.vars.CORS_ALLOWED_ORIGINS, "", `${name}: CORS off unless configured`);
    // Both rate limiters, declared by the environment itself.
    const l = limiters(e);
    assert.deepEqual(Object.keys(l).sort(), ["GEO_RATE_LIMITER", "USER_RATE_LIMITER"], `${name}: rate limiters`);
    for (const x of Object.values(l)) {
      assert.match(x.namespace_id, /^[1-9]\d*$/, `${name}: ${x.name} namespace_id`);
      assert.ok(x.simple.limit > 0 && [10, 60].includes(x.simple.period), `${name}: ${x.name} ${JSON.stringify(x.simple)}`);
    }
  }
  // Staging traffic never counts against production's limits.
  const ids = (e) => (e.ratelimits ?? []).map((l) => l.namespace_id);
  assert.equal(new Set([...ids(envs.staging), ...ids(envs.production)]).size, 4, "distinct rate-limit namespaces");
  for (const [name, e] of Object.entries(envs)) {
    assert.equal(e.vars.ENABLE_BENCH, "false", `${name}: bench off`);
    assert.ok(e.vars.IPDB_KV_KEY && e.vars.IPDB_CHECK_INTERVAL_SECONDS, name);
    assert.equal(e.triggers.crons.length, 1, name);
    assert.deepEqual(e.kv_namespaces.map((b) => b.binding), ["IPDB_CONFIG"], name);
    assert.deepEqual(e.r2_buckets.map((b) => b.binding), ["IPDB_BUCKET"], name);
  }
  assert.notEqual(envs.staging.r2_buckets[0].bucket_name, envs.production.r2_buckets[0].bucket_name);
  assert.notEqual(envs.staging.kv_namespaces[0].id, envs.production.kv_namespaces[0].id);
});

test("publish-ipdb.sh --dry-run: the object upload, the converted table, then the record, all --remote", () => {
  const r = bash(`bash scripts/publish-ipdb.sh ${BUNDLED} --env production --dry-run`);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  const sha = crypto.createHash("sha256").update(fs.readFileSync(BUNDLED)).digest("hex");
  const put = (key, file) =>
    `wrangler r2 object put edge-geo-notify-ipdb-production/${key} --file ${file} --content-type application/octet-stream --remote --env production`;
  assert.equal(lines[0], put(`ipdb/${sha}.mmdb`, BUNDLED));
  const m = lines.at(-1).match(/^wrangler kv key put --binding IPDB_CONFIG ipdb\/current '(.*)' --remote --env production$/);
  assert.ok(m, lines.at(-1));
  const record = JSON.parse(m[1]);
  assert.equal(record.sha256, sha);
  assert.equal(record.object_key, `ipdb/${sha}.mmdb`);
  assert.match(record.version, new RegExp(`^\\d+-${sha.slice(0, 12)}$`));
  // The table converted by the native build, uploaded before the record that names it, each
  // file matching the checksum the record carries.
  assert.equal(record.table_key, `ipdb/${sha}.table`);
  const dir = `build/ipdb/${sha}.table`;
  const hash = (f) => crypto.createHash("sha256").update(fs.readFileSync(path.join(ROOT, f))).digest("hex");
  assert.equal(lines[1], put(`${record.table_key}/dir.bin`, `${dir}/dir.bin`));
  assert.equal(hash(`${dir}/dir.bin`), record.table_sha256);
  assert.ok(record.table_pages.length > 10, `${record.table_pages.length} pages`);
  assert.equal(lines.length, 3 + record.table_pages.length, r.stdout);
  record.table_pages.forEach((h, i) => {
    const page = `page-${String(i).padStart(3, "0")}.bin`;
    assert.equal(lines[2 + i], put(`${record.table_key}/${page}`, `${dir}/${page}`));
    assert.equal(hash(`${dir}/${page}`), h, page);
  });
});

test("publish-ipdb.sh validates before anything is uploaded; remote runs refuse placeholder ids", () => {
  const bad = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "bad-")), "bad.mmdb");
  fs.writeFileSync(bad, "not a database");
  let r = bash(`bash scripts/publish-ipdb.sh ${bad} --env staging --dry-run`);
  assert.equal(r.code, 1);
  assert.match(r.stdout, /not a valid MaxMind DB/);
  assert.doesNotMatch(r.stdout, /wrangler /, "no command printed after a failed validation");
  assert.match(r.stderr, /nothing was published/);
  // Without --dry-run or --local it would go to Cloudflare: not while the KV id is a placeholder.
  r = bash(`bash scripts/publish-ipdb.sh ${BUNDLED} --env staging`);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /placeholder/);
  r = bash("bash scripts/deploy.sh --env production");
  assert.equal(r.code, 1);
  assert.match(r.stderr, /placeholder/);
  r = bash(`bash scripts/publish-ipdb.sh ${BUNDLED} --env qa --dry-run`);
  assert.equal(r.code, 2, "unknown environment is a usage error");
});

// A copy of wrangler.toml with every placeholder of both environments filled in, and a secrets
// file per environment with generated values: what an operator has after step 1 and 2 of
// docs/deploy.md. `edit(text)` may put one placeholder back.
const strong = () => crypto.randomBytes(32).toString("hex");
function filledConfig(edit = (t) => t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "filled-"));
  let toml = fs.readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  for (const env of ["staging", "production"]) {
    toml = toml
      .replace(`REPLACE-${env}-IPDB_CONFIG-namespace-id`, crypto.randomBytes(16).toString("hex"))
      .replace(`REPLACE-with-the-${env}-token-issuer`, `https://issuer.${env}.test`)
      .replace(`REPLACE-with-the-${env}-token-audience`, `app-${env}`);
    const secrets = Object.fromEntries(SECRETS.map((k) => [k, strong()]));
    secrets.DATA_API_URL = `https://data-api.${env}.test`;
    secrets.REDIS_REST_URL = `https://redis.${env}.test`;
    fs.writeFileSync(path.join(dir, `secrets.${env}.json`), JSON.stringify(secrets));
  }
  fs.writeFileSync(path.join(dir, "wrangler.toml"), edit(toml));
  return dir;
}

test("deploy --dry-run refuses each placeholder left in wrangler.toml or the secrets file, by name, before printing anything", () => {
  const cases = [
    ["kv_namespaces IPDB_CONFIG id", (t) => t.replace(/(\[\[env\.staging\.kv_namespaces\]\]\nbinding = "IPDB_CONFIG"\nid = ")[^"]+/, "$1REPLACE-staging-IPDB_CONFIG-namespace-id")],
    ["AUTH_ISSUER", (t) => t.replace("https://issuer.staging.test", "REPLACE-with-the-staging-token-issuer")],
    ["AUTH_AUDIENCE", (t) => t.replace('AUTH_AUDIENCE = "app-staging"', 'AUTH_AUDIENCE = "REPLACE-with-the-staging-token-audience"')],
    ["CORS_ALLOWED_ORIGINS", (t) => t.replace(/(\[env\.staging\.vars\][\s\S]*?CORS_ALLOWED_ORIGINS = )""/, '$1"https://app.example.com"')],
    ["ENVIRONMENT", (t) => t.replace("[env.staging.vars]\n", '[env.staging.vars]\nENVIRONMENT = "development"\n')],
  ];
  const example = JSON.parse(fs.readFileSync(path.join(ROOT, "secrets.example.json"), "utf8"));
  for (const name of SECRETS) cases.push([name, (t) => t, { [name]: example[name] }]);
  const devVars = fs.readFileSync(path.join(ROOT, ".dev.vars.example"), "utf8");
  cases.push(["SERVICE_TOKEN", (t) => t, { SERVICE_TOKEN: devVars.match(/^SERVICE_TOKEN="(.*)"$/m)[1] }]);
  cases.push(["AUTH_HS256_SECRET", (t) => t, { AUTH_HS256_SECRET: "a".repeat(48) }]);
  for (const [name, edit, secrets] of cases) {
    const dir = filledConfig(edit);
    if (secrets) {
      const file = path.join(dir, "secrets.staging.json");
      fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, "utf8")), ...secrets }));
    }
    const r = bash(`bash ${ROOT}/scripts/deploy.sh --env staging --secrets secrets.staging.json --url https://x.test --dry-run`,
      { cwd: dir, env: { WRANGLER_TOML: path.join(dir, "wrangler.toml") } });
    assert.equal(r.code, 1, `${name}: ${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^  ${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `, "m"), `${name} named:\n${r.stderr}`);
    assert.equal(r.stdout, "", `${name}: nothing printed (nothing would be uploaded)`);
    for (const v of Object.values(secrets ?? {})) assert.ok(!r.stderr.includes(v), `${name}: the value is never printed`);
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // The repository's own wrangler.toml with the example secrets: every problem at once.
  const r = bash(`bash scripts/deploy.sh --env production --secrets secrets.example.json --dry-run`);
  assert.equal(r.code, 1, r.stderr);
  for (const name of ["kv_namespaces IPDB_CONFIG id", "AUTH_ISSUER", "AUTH_AUDIENCE", ...SECRETS]) {
    assert.match(r.stderr, new RegExp(`^  ${name}: `, "m"), `${name} in one run:\n${r.stderr}`);
  }
});

test("deploy: secrets go up before the code; the smoke step needs a user token or an explicit --skip-user-auth", () => {
  const dir = filledConfig();
  const env = { WRANGLER_TOML: path.join(dir, "wrangler.toml") };
  const plan = (flags) => bash(`bash ${ROOT}/scripts/deploy.sh --env staging --secrets secrets.staging.json ${flags}`, { cwd: dir, env });
  let r = plan("--url https://x.test --dry-run");
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  const bulk = lines.findIndex((l) => l.startsWith("wrangler secret bulk"));
  const deploy = lines.findIndex((l) => l.startsWith("wrangler deploy"));
  assert.ok(bulk >= 0 && deploy > bulk, `secrets before the code:\n${r.stdout}`);
  assert.match(lines.at(-1), /^bash scripts\/smoke\.sh https:\/\/x\.test --service-key "\$SERVICE_TOKEN" --token "\$USER_TOKEN"$/);
  r = plan("--url https://x.test --dry-run --user-token-cmd 'my-idp print-token'");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^USER_TOKEN="\$\(my-idp print-token\)"$/m);
  r = plan("--url https://x.test --dry-run --skip-user-auth");
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /WARNING: --skip-user-auth/);
  assert.match(r.stdout, /smoke\.sh https:\/\/x\.test --service-key "\$SERVICE_TOKEN" --skip-user-auth$/m);
  // A real run without a token refuses before anything (the config check passes, nothing is run).
  r = bash(`bash ${ROOT}/scripts/deploy.sh --env staging --secrets secrets.staging.json --url https://x.test`,
    { cwd: dir, env: { ...env, SERVICE_TOKEN: "x", USER_TOKEN: "" } });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /must prove user auth/);
  fs.rmSync(dir, { recursive: true, force: true });
});

// docs/deploy.md and the README's Deploy section, read as a runbook: each `bash
// scripts/deploy.sh|publish-ipdb.sh` line must run with --dry-run (on a filled-in copy of
// wrangler.toml, with generated secrets), and each Cloudflare-facing command (wrangler, curl,
// smoke) must be one the scripts print.
test("docs/deploy.md and the README's Deploy checklist run the commands the scripts run", () => {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.split(/^## Deploy$/m)[1].split(/^## /m)[0] + fs.readFileSync(path.join(ROOT, "docs/deploy.md"), "utf8");
  const lines = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .flatMap((m) => m[1].split("\n"))
    .map((l) => l.replace(/\s+#.*$/, "").trim())
    .filter(Boolean);
  const tmp = filledConfig();
  fs.copyFileSync(BUNDLED, path.join(tmp, "new.mmdb")); // "new.mmdb" in the docs; agrees with the default
  const urls = { STAGING_URL: "https://staging.test.invalid", PRODUCTION_URL: "https://production.test.invalid" };
  const normalize = (s) => {
    let t = s.replace(/^npx /, "").replaceAll(`${tmp}/`, "").replaceAll(`${ROOT}/`, "").replace(/ --config \S+/g, "");
    for (const [k, v] of Object.entries(urls)) t = t.replaceAll(v, `$${k}`);
    return t
      .replace(/'\{"version".*?\}'/g, "'<record>'")
      .replace(/\b[0-9a-f]{64}\b/g, "<sha256>")
      .replace(/["']/g, "")
      .replace(/\s+/g, " ")
      .trim();
  };
  const printed = new Set();
  const scripted = lines.filter((l) => /^bash scripts\/(deploy|publish-ipdb)\.sh /.test(l));
  assert.ok(scripted.length >= 3, `the page runs the scripts: ${scripted}`);
  // Production repeats the staging steps; its plan must be printable too.
  const runs = [...scripted, ...scripted.map((l) => l.replaceAll("staging", "production").replaceAll("STAGING", "PRODUCTION"))];
  for (const line of runs) {
    const r = bash(`${line.replace(/^bash scripts\//, `bash ${ROOT}/scripts/`)} --dry-run`,
      { cwd: tmp, env: { ...urls, WRANGLER_TOML: path.join(tmp, "wrangler.toml") } });
    assert.equal(r.code, 0, `${line}\n${r.stdout}\n${r.stderr}`);
    for (const p of r.stdout.split("\n").filter((x) => x && !x.startsWith("#"))) printed.add(normalize(p));
  }
  const cloudflare = lines.filter((l) => /^(npx wrangler|wrangler|curl|bash scripts\/smoke\.sh) /.test(l));
  assert.ok(cloudflare.length >= 8, `the page lists the commands: ${cloudflare}`);
  for (const l of cloudflare) {
    assert.ok(printed.has(normalize(l)), `command not printed by any script:\n  ${normalize(l)}\nprinted:\n  ${[...printed].join("\n  ")}`);
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

test("every environment sets its Workers Logs sampling; production keeps a small share", () => {
  const r = bash(`python3 - <<'EOF'
import json, tomllib
c = tomllib.load(open("wrangler.toml", "rb"))
print(json.dumps({"top": c.get("observability"), **{k: c["env"][k].get("observability") for k in ("staging", "production")}}))
EOF`);
  assert.equal(r.code, 0, r.stderr);
  const obs = JSON.parse(r.stdout);
  for (const [env, o] of Object.entries(obs)) {
    assert.equal(o?.enabled, true, `${env}: [observability] enabled`);
    assert.ok(o.head_sampling_rate > 0 && o.head_sampling_rate <= 1, `${env}: head_sampling_rate ${o.head_sampling_rate}`);
  }
  assert.ok(obs.production.head_sampling_rate <= 0.1, `production samples ${obs.production.head_sampling_rate}`);
});
