// Starts the local backend stack (real redis-server + REST bridge + Data API emulator) on free
// ports and gives tests its URLs, counters and fault injection.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { createHash } from "node:crypto";
import path from "node:path";
import { ROOT } from "./harness.mjs";

const PYTHON = path.join(ROOT, ".venv/bin/python");

// The sender count a stored document shows: the roster's tally when Redis counts the senders
// (oc = changes * 2^24 + senders), else the document's own originsCount.
export const countOf = (d) => (typeof d.oc === "number" ? d.oc % 2 ** 24 : d.originsCount);

// An item's id, as the worker derives it (notify::notification_id); its Redis keys end in it.
export const notificationId = (owner, itemKey) =>
  createHash("sha256").update(`${owner}\0${itemKey}`).digest().subarray(0, 12).toString("base64url");

export async function startStack() {
  if (!existsSync(PYTHON)) throw new Error("no .venv: run bash scripts/setup.sh");
  const proc = spawn(PYTHON, ["-m", "stack", "--redis-rest-port", "0", "--data-api-port", "0", "--exit-with-parent"], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const info = await new Promise((resolve, reject) => {
    proc.once("error", reject);
    proc.once("exit", (code) => reject(new Error(`stack exited early (code ${code})`)));
    createInterface({ input: proc.stdout }).once("line", (line) => resolve(JSON.parse(line)));
  });
  proc.removeAllListeners("exit");
  const call = async (base, p, method = "GET", body) => {
    const r = await fetch(base + p, { method, body: body && JSON.stringify(body), headers: { "content-type": "application/json" } });
    return r.status === 204 ? null : r.json();
  };
  return {
    info,
    // One command through the REST bridge, as the worker sends it; the reply's result.
    async redis(cmd) {
      const r = await fetch(info.redis_rest_url, { method: "POST", headers: { authorization: `Bearer ${info.redis_token}` }, body: JSON.stringify(cmd) });
      return (await r.json()).result;
    },
    bindings: {
      DATA_API_URL: info.data_api_url,
      DATA_API_KEY: info.data_api_key,
      DATA_SOURCE: info.data_source,
      DATABASE: info.database,
      REDIS_REST_URL: info.redis_rest_url,
      REDIS_REST_TOKEN: info.redis_token,
    },
    async stats() {
      const [d, r] = await Promise.all([call(info.data_api_url, "/__stats"), call(info.redis_rest_url, "/__stats")]);
      for (const s of [d, r]) if (typeof s?.total !== "number") throw new Error(`broken /__stats: ${JSON.stringify(s)}`);
      return {
        data: d.requests, dataTotal: d.total, dataLast: d.last,
        redis: r.requests, redisTotal: r.total, redisLast: r.last, redisErrors: r.errors,
        inFlight: d.in_flight + r.in_flight, dataInFlight: d.in_flight,
      };
    },
    // Polls the counters until `pred(stats)` holds and nothing is in flight; fails after `ms`.
    // Tests wait on this observable state, never on a fixed sleep.
    async until(pred, what, ms = 20_000) {
      return this.poll((s) => s.inFlight === 0 && pred(s), what, ms);
    },
    // Waits until `n` more Lua script calls than in `before` (a stats snapshot) have finished
    // and nothing is in flight. A call is one EVALSHA that ran, or, on a cold script cache, an
    // EVALSHA answered NOSCRIPT followed by an EVAL: counting finished calls (not EVALSHAs)
    // cannot stop between the two. For work the worker does after its response (waitUntil).
    async scriptsDone(before, n, what) {
      const done = (s) => (s.redis.evalsha ?? 0) - (s.redisErrors.evalsha ?? 0) + (s.redis.eval ?? 0);
      return this.until((s) => done(s) - done(before) >= n, what);
    },
    // Like `until`, without requiring an idle stack (e.g. to see a request being held).
    async poll(pred, what, ms = 20_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const s = await this.stats();
        if (pred(s)) return s;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(s)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async faultsFired(which) {
      const base = which === "data" ? info.data_api_url : info.redis_rest_url;
      return (await call(base, "/__faults")).rules.map((r) => r.fired);
    },
    async reset() {
      await Promise.all([call(info.data_api_url, "/__stats/reset", "POST"), call(info.redis_rest_url, "/__stats/reset", "POST")]);
    },
    async faults(which, rules, seed) {
      const base = which === "data" ? info.data_api_url : info.redis_rest_url;
      return call(base, "/__faults", "POST", { rules, seed });
    },
    async clearFaults() {
      await Promise.all([call(info.data_api_url, "/__faults", "DELETE"), call(info.redis_rest_url, "/__faults", "DELETE")]);
    },
    async dataApi(action, body) {
      const r = await fetch(`${info.data_api_url}/action/${action}`, {
        method: "POST",
        headers: { "content-type": "application/json", apiKey: info.data_api_key },
        body: JSON.stringify({ dataSource: info.data_source, database: info.database, ...body }),
      });
      return r.json();
    },
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once("exit", r));
      proc.kill("SIGTERM");
      await exited;
    },
  };
}
