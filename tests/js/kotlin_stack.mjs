// Runs a command (the Kotlin SDK's JUnit run, see clients/kotlin/build.sh) against the compiled
// worker in workerd and the local stack, started here by the same harness as the node tests.
// The command gets everything through its environment and this script exits with its code:
//   INBOX_BASE_URL        the worker (http://127.0.0.1:PORT)
//   INBOX_SERVICE_TOKEN   the service key, to create items as an app backend would
//   INBOX_AUTH_SECRET / INBOX_AUTH_ISSUER / INBOX_AUTH_AUDIENCE
//                         the HS256 setup user tokens are minted with (as tests/js/harness.mjs does)
//   INBOX_DATA_API_URL / INBOX_REDIS_REST_URL
//                         the stack's backends: GET /__stats, POST /__stats/reset, /__faults
//   INBOX_OPENAPI         a file holding the worker's GET /openapi.json
// usage: node tests/js/kotlin_stack.mjs CMD [ARGS…]
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker, AUTH } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const [cmd, ...args] = process.argv.slice(2);
if (!cmd) {
  console.error("usage: node tests/js/kotlin_stack.mjs CMD [ARGS…]");
  process.exit(2);
}
const SERVICE_TOKEN = "kotlin-svc";
const stack = await startStack();
let w, dir, code = 1;
try {
  // One clock for worker and database: the feed's settle window can be 0, so "only the changes
  // since sync" is exact (production holds positions 2 s back and repeats a few entries). No
  // token leeway, so a token minted to expire in 2 s is refused once they have passed.
  w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN, ...AUTH, NOTIFY_SYNC_SETTLE_MS: "0", AUTH_LEEWAY_SECONDS: "0" } });
  const idx = await fetch(`${w.base}/v1/admin/indexes`, { method: "POST", headers: { authorization: `Bearer ${SERVICE_TOKEN}` } });
  if (idx.status !== 200) throw new Error(`indexes: ${idx.status} ${await idx.text()}`);
  dir = mkdtempSync(path.join(tmpdir(), "kotlin-sdk-"));
  const openapi = path.join(dir, "openapi.json");
  writeFileSync(openapi, await (await fetch(`${w.base}/openapi.json`)).text());
  const env = {
    ...process.env,
    INBOX_BASE_URL: w.base,
    INBOX_SERVICE_TOKEN: SERVICE_TOKEN,
    INBOX_AUTH_SECRET: AUTH.AUTH_HS256_SECRET,
    INBOX_AUTH_ISSUER: AUTH.AUTH_ISSUER,
    INBOX_AUTH_AUDIENCE: AUTH.AUTH_AUDIENCE,
    INBOX_DATA_API_URL: stack.info.data_api_url,
    INBOX_REDIS_REST_URL: stack.info.redis_rest_url,
    INBOX_OPENAPI: openapi,
  };
  const child = spawn(cmd, args, { stdio: "inherit", env });
  code = await new Promise((resolve) => {
    child.once("error", (e) => { console.error(e); resolve(1); });
    child.once("exit", (c, sig) => resolve(c ?? (sig ? 1 : 0)));
  });
} catch (e) {
  console.error(e);
} finally {
  await w?.stop();
  await stack.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
