// Starts the Redis side from the local stack (real redis-server + REST bridge) and the Data API from
// the production gateway (`python -m stack.gateway`: ASGI under uvicorn, no dev endpoints), whose
// pymongo.MongoClient is patched by mongomock (its test engine; no MongoDB server here).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import path from "node:path";
import { ROOT } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const PYTHON = path.join(ROOT, ".venv/bin/python");
export const GATEWAY_KEYS = ["gw-worker-key-new-0123456789", "gw-worker-key-old-9876543210"];

export async function startGatewayStack() {
  const dev = await startStack();
  let proc;
  try {
    proc = spawn(PYTHON, ["-m", "stack.gateway", "--port", "0", "--exit-with-parent"], {
      cwd: ROOT,
      env: { ...process.env, MONGODB_URI: "", GATEWAY_ENGINE: "mongomock-patch", GATEWAY_API_KEYS: GATEWAY_KEYS.join(",") },
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
      async dataApi(action, body, key = GATEWAY_KEYS[1]) {
        const r = await fetch(`${info.data_api_url}/action/${action}`, {
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
