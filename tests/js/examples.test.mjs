// Copying the examples: what a new user pastes must either work or be refused by name.
// - Every URL form of secrets.example.json (the Data API base URL with the Atlas-style
//   /app/<id>/endpoint/data/v1 prefix; the Redis REST root) and the bare form of .dev.vars serve
//   the worker against the production gateway and against the dev stack.
// - A base URL that leads nowhere is named at /healthz (data_api_not_found), not a stream of 404s.
// - A deployed worker (no ENVIRONMENT=development) refuses every published value by name.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { startWorker, ROOT, AUTH, asUser } from "./harness.mjs";
import { startGatewayStack } from "./gateway.mjs";

const EXAMPLE = JSON.parse(fs.readFileSync(path.join(ROOT, "secrets.example.json"), "utf8"));
const DEV_VARS = Object.fromEntries(
  fs.readFileSync(path.join(ROOT, ".dev.vars.example"), "utf8").split("\n")
    .filter((l) => /^[A-Z][A-Z0-9_]*=/.test(l))
    .map((l) => { const [k, ...v] = l.split("="); return [k, v.join("=").replace(/^"|"$/g, "")]; }),
);
const strong = () => crypto.randomBytes(32).toString("hex");
const SERVICE_TOKEN = strong();
const SERVICE = { authorization: `Bearer ${SERVICE_TOKEN}`, "content-type": "application/json" };
let gw;

before(async () => { gw = await startGatewayStack(); });
after(async () => { await gw?.stop(); });

// The example's URL with its host replaced by a local server's (its path kept as written).
const onLocal = (exampleUrl, localBase) => {
  const u = new URL(exampleUrl.replace(/<[^>]+>/g, "app-id-1"));
  return localBase.replace(/\/$/, "") + u.pathname.replace(/\/$/, "");
};

async function roundTrip(bindings, owner) {
  const w = await startWorker({ bindings: { ...bindings, SERVICE_TOKEN, ...AUTH } });
  try {
    const h = await w.get("/healthz");
    assert.equal(h.status, 200, JSON.stringify(h.body));
    assert.deepEqual(h.body.data_api, { probe: "ok" });
    assert.equal((await w.post("/v1/admin/indexes", {}, SERVICE)).status, 200);
    const r = await w.post("/v1/notifications/events", {
      owner, itemKey: "x1", serviceType: "feed", categoryType: "social", notificationType: "like",
      templateType: "default", eventId: `${owner}-1`, sender: { id: "s", name: "S" }, createdTimeMsec: Date.now(),
    }, SERVICE);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    const list = await (await fetch(`${w.base}/v1/notifications`, { headers: asUser(owner) })).json();
    assert.deepEqual(list.items.map((i) => i.itemKey), ["x1"]);
  } finally {
    await w.stop();
  }
}

test("secrets.example.json's URL forms work against the gateway and the dev stack", async () => {
  assert.match(new URL(EXAMPLE.DATA_API_URL).pathname, /^\/app\/[^/]+\/endpoint\/data\/v1$/,
    "the example shows the Atlas-style prefix form");
  // Gateway (production mode), URL with the prefix.
  await roundTrip({
    ...gw.bindings,
    DATA_API_URL: onLocal(EXAMPLE.DATA_API_URL, gw.info.data_api_url),
    REDIS_REST_URL: onLocal(EXAMPLE.REDIS_REST_URL, gw.dev.info.redis_rest_url),
  }, "ex-gw-prefix");
  // Dev stack, URL with the prefix; and the bare base URL of .dev.vars.example.
  await roundTrip({
    ...gw.dev.bindings,
    DATA_API_URL: onLocal(EXAMPLE.DATA_API_URL, gw.dev.info.data_api_url),
  }, "ex-dev-prefix");
  await roundTrip({ ...gw.dev.bindings, DATA_API_URL: onLocal(DEV_VARS.DATA_API_URL, gw.dev.info.data_api_url) }, "ex-dev-bare");
});

test("a Data API base URL that answers 404 is named at /healthz, not discovered as 404s", async () => {
  for (const bindings of [
    { ...gw.bindings, DATA_API_URL: `${gw.info.data_api_url}/v1` }, // the old example's form
    { ...gw.dev.bindings, DATA_API_URL: `${gw.dev.info.data_api_url}/data/v1` },
  ]) {
    const w = await startWorker({ bindings: { ...bindings, SERVICE_TOKEN, ...AUTH } });
    try {
      const h = await w.get("/healthz");
      assert.equal(h.status, 503, JSON.stringify(h.body));
      assert.equal(h.body.status, "degraded");
      assert.equal(h.body.data_api.error, "data_api_not_found");
      assert.match(h.body.data_api.message, /DATA_API_URL/);
    } finally {
      await w.stop();
    }
  }
});

test("a deployed worker refuses the example and .dev.vars values by name, never by value", async () => {
  const published = { ...EXAMPLE };
  // Reachable URLs, so only the secrets are at fault.
  published.DATA_API_URL = gw.bindings.DATA_API_URL;
  published.REDIS_REST_URL = gw.bindings.REDIS_REST_URL;
  for (const [label, vars, expected] of [
    ["secrets.example.json", { ...published, AUTH_ISSUER: "REPLACE-with-the-staging-token-issuer", AUTH_AUDIENCE: "app" },
      ["AUTH_HS256_SECRET", "SERVICE_TOKEN", "DATA_API_KEY", "REDIS_REST_TOKEN", "AUTH_ISSUER",
        "MAXMIND_ACCOUNT_ID", "MAXMIND_LICENSE_KEY"]],
    [".dev.vars.example", { ...DEV_VARS, ENVIRONMENT: "", DATA_API_URL: gw.bindings.DATA_API_URL, REDIS_REST_URL: gw.bindings.REDIS_REST_URL },
      ["AUTH_HS256_SECRET", "SERVICE_TOKEN", "DATA_API_KEY", "REDIS_REST_TOKEN"]],
  ]) {
    // ENVIRONMENT "" = unset: deployed.
    const w = await startWorker({ bindings: { ...vars, ENVIRONMENT: "", ENABLE_BENCH: "false" } });
    try {
      const h = await w.get("/healthz");
      assert.equal(h.status, 503, label);
      assert.deepEqual(h.body.secrets.refused.map((r) => r.var).sort(), [...expected].sort(), label);
      const r = await fetch(`${w.base}/v1/notifications`, { headers: { authorization: `Bearer ${vars.SERVICE_TOKEN}` } });
      assert.equal(r.status, 503);
      const body = await r.json();
      assert.equal(body.error.code, "config_invalid");
      const text = JSON.stringify(h.body) + JSON.stringify(body);
      for (const [k, v] of Object.entries(vars)) {
        if (/SECRET|TOKEN|KEY/.test(k) && v) assert.ok(!text.includes(v), `${label}: ${k}'s value leaked`);
      }
    } finally {
      await w.stop();
    }
  }
  // The same worker with strong secrets of its own serves.
  const ok = await startWorker({
    bindings: { ...gw.bindings, ENVIRONMENT: "", SERVICE_TOKEN: strong(), AUTH_HS256_SECRET: strong(), AUTH_ISSUER: "https://issuer.test", AUTH_AUDIENCE: "app", REDIS_REST_TOKEN: gw.bindings.REDIS_REST_TOKEN },
  });
  try {
    const h = await ok.get("/healthz");
    // The local stack's Redis token is itself published: the one refusal left, by name.
    assert.deepEqual(h.body.secrets.refused.map((r) => r.var), ["REDIS_REST_TOKEN"]);
  } finally {
    await ok.stop();
  }
});
