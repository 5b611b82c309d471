// Starts the Redis side from the local stack (real redis-server + REST bridge) and the Data API from
// the production gateway (`python -m stack.gateway`: ASGI under uvicorn, no dev endpoints), whose
// pymongo.MongoClient is patched by mongomock (its test engine; no MongoDB server here). The
// gateway runs in production mode: only the app database and the worker's collections, with
// server-side JavaScript and cross-collection stages refused, and the failed-auth limiter on.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import { createInterface } from "node:readline";
import path from "node:path";
import { readFileSync } from "node:fs";
import { ROOT } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const PYTHON = path.join(ROOT, ".venv/bin/python");
// Drawn per run: the gateway refuses keys under 32 bytes or ~128 bits, and a fixed one would be
// a published value. Hex: it can never spell a placeholder marker (xxxx, todo, ...).
export const GATEWAY_KEYS = [crypto.randomBytes(32).toString("hex"), crypto.randomBytes(32).toString("hex")];
/// The worker's collections, exactly as docs/mongodb-gateway.md's production setup names them
/// (tests/docs.rs checks that line against the worker's own list, `notify::Collections`): the
/// gateway here runs the documented configuration, not a copy of it.
export const GATEWAY_COLLECTIONS = (() => {
  const doc = readFileSync(path.join(ROOT, "docs/mongodb-gateway.md"), "utf8");
  const line = doc.split("\n").map((l) => l.trim()).find((l) => l.startsWith("GATEWAY_COLLECTIONS="));
  if (!line) throw new Error("docs/mongodb-gateway.md: no GATEWAY_COLLECTIONS= line");
  return line.slice("GATEWAY_COLLECTIONS=".length);
})();

export async function startGatewayStack() {
  const dev = await startStack();
  let proc;
  try {
    proc = spawn(PYTHON, ["-m", "stack.gateway", "--port", "0", "--exit-with-parent"], {
      cwd: ROOT,
      env: {
        ...process.env, MONGODB_URI: "", GATEWAY_ENGINE: "mongomock-patch", GATEWAY_API_KEYS: GATEWAY_KEYS.join(","),
        GATEWAY_MODE: "production", GATEWAY_DATABASES: "app", GATEWAY_COLLECTIONS,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const logs = [];
    createInterface({ input: proc.stderr }).on("line", (line) => logs.push(line));
    const info = await new Promise((resolve, reject) => {
      proc.once("error", reject);
      proc.once("exit", (code) => reject(new Error(`gateway exited early (code ${code}): ${logs.join("\n")}`)));
      createInterface({ input: proc.stdout }).once("line", (line) => resolve(JSON.parse(line)));
    });
    proc.removeAllListeners("exit");
    const gw = {
      info,
      dev,
      logs,
      bindings: {
        ...dev.bindings,
        DATA_API_URL: info.data_api_url,
        DATA_API_KEY: GATEWAY_KEYS[0],
        DATA_SOURCE: "mongodb-atlas",
        DATABASE: "app",
      },
      async dataApi(action, body, key = GATEWAY_KEYS[1], base = info.data_api_url) {
        const r = await fetch(`${base}/action/${action}`, {
          method: "POST",
          headers: { "content-type": "application/json", apiKey: key },
          body: JSON.stringify({ dataSource: "mongodb-atlas", database: "app", ...body }),
        });
        return { status: r.status, body: await r.json() };
      },
      async stop() {
        if (proc.exitCode === null) {
          const exited = new Promise((r) => proc.once("exit", (code, signal) => r({ code, signal })));
          proc.kill("SIGTERM");
          gw.exit = await exited;
        }
        await dev.stop();
      },
    };
    return gw;
  } catch (e) {
    proc?.kill("SIGKILL");
    await dev.stop();
    throw e;
  }
}
