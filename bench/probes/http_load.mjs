// The worker over HTTP straight to workerd (Miniflare's loopback socket, no wrangler proxy),
// loaded by wrk (bounded: 1 thread, 8 connections, a few seconds per endpoint, loopback only),
// against the local stack (redis-server + Data API emulator). Every endpoint is reported as a
// ratio to a trivial endpoint of the same worker in the same run. Prints a markdown table.
// Usage: node bench/probes/http_load.mjs  (wrk on PATH; after scripts/setup.sh; builds the bench build)
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startWorker, AUTH, userToken } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";
import { benchWorker } from "./bench_build.mjs";

process.env.OPENAPI_VALIDATE = "0";
const SECONDS = Number(process.env.HTTP_BENCH_SECONDS ?? 3);
const stack = await startStack();
const w = await startWorker(benchWorker({ bindings: { ...stack.bindings, ...AUTH, SERVICE_TOKEN: "bench" } }));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "wrk-"));
const user = userToken("bench-user", { claims: { exp: Math.floor(Date.now() / 1000) + 3600 } });
const batch = JSON.stringify({ points: Array.from({ length: 100 }, (_, i) => [47.6 + i * 0.001, 8.6 + i * 0.001]) });
const lua = (name, src) => { const p = path.join(tmp, name); fs.writeFileSync(p, src); return p; };
const post = (body, headers) => lua(`p${Math.random()}.lua`, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\n` +
  Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join("\n") + "\n");
// Creates: a fresh eventId per request (a repeated one would measure the duplicate path).
const create = lua("create.lua", `
local n = 0
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["authorization"] = "Bearer bench"
request = function()
  n = n + 1
  local id = tostring(os.time()) .. "-" .. tostring(n) .. "-" .. tostring(math.random(1e9))
  return wrk.format(nil, nil, nil, '{"owner":"bench-user","itemKey":"post:' .. (n % 50) .. '","serviceType":"feed","categoryType":"social","notificationType":"like","templateType":"default","eventId":"' .. id .. '","sender":{"id":"s' .. n .. '","name":"S"},"createdTimeMsec":' .. (os.time() * 1000) .. '}')
end
`);
const endpoints = [
  ["trivial endpoint (`/__bench/noop`)", "/__bench/noop", []],
  ["geo single (`GET /v1/geo/country`, Büsingen)", "/v1/geo/country?lat=47.697&lon=8.691", []],
  ["geo batch (`POST /v1/geo/country`, 100 points)", "/v1/geo/country", ["-s", post(batch, { "content-type": "application/json" })], 100],
  ["IP (`GET /v1/geo/ip`)", "/v1/geo/ip?ip=81.2.69.160", []],
  ["notification list (`GET /v1/notifications`, user JWT)", "/v1/notifications?limit=20", ["-H", `authorization: Bearer ${user}`]],
  ["notification create (`POST /v1/notifications/events`)", "/v1/notifications/events", ["-s", create]],
];
// Asynchronously: a blocked event loop would stop draining workerd's log pipe and stall it.
const wrk = async (args) => (await promisify(execFile)("wrk", args, { encoding: "utf8" })).stdout;
const ms = (v) => (v.endsWith("us") ? parseFloat(v) / 1000 : v.endsWith("ms") ? parseFloat(v) : parseFloat(v) * 1000);
const ROUNDS = 3;
const runs = endpoints.map(() => []);
try {
  for (const [name, p, args] of endpoints) {
    // Warm: the first IP request loads the 5 MB database from ASSETS, far above wrk's timeout.
    if (!args.length) await (await fetch(w.base + p)).arrayBuffer();
    await wrk(["-t1", "-c8", "-d1s", "--timeout", "10s", ...args, w.base + p]);
    console.error(`warmed ${name}`);
  }
  // Short runs, every endpoint once per round: load from other processes on the VM drifts over
  // minutes, so each endpoint sees the same mix of it.
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, [name, p, args]] of endpoints.entries()) {
      const txt = await wrk(["-t1", "-c8", `-d${SECONDS}s`, "--timeout", "10s", "--latency", ...args, w.base + p]);
      const errors = (txt.match(/Socket errors: (.*)/)?.[1] ?? "none");
      const rps = parseFloat(txt.match(/Requests\/sec:\s+([\d.]+)/)[1]);
      const non2xx = Number(txt.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0);
      const p50 = ms(txt.match(/50%\s+(\S+)/)[1]), p99 = ms(txt.match(/99%\s+(\S+)/)[1]);
      runs[i].push({ rps, p50, p99, non2xx, errors });
      console.error(`${name}: ${rps} req/s p50 ${p50} ms p99 ${p99} ms non-2xx ${non2xx}`);
    }
  }
} finally {
  await w.stop();
  await stack.stop?.();
  fs.rmSync(tmp, { recursive: true, force: true });
}
const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const rows = endpoints.map(([name, , , perReq = 1], i) => ({
  name, perReq, rps: med(runs[i].map((r) => r.rps)), p50: med(runs[i].map((r) => r.p50)),
  p99: med(runs[i].map((r) => r.p99)), non2xx: runs[i].reduce((a, r) => a + r.non2xx, 0),
  errors: runs[i].map((r) => r.errors).filter((e) => e !== "none").join("; ") || "none",
}));
const base = rows[0];
console.log("| endpoint | req/s | ratio to trivial | p50 | p99 | non-2xx | socket errors |\n|---|---|---|---|---|---|---|");
for (const r of rows) {
  const pts = r.perReq > 1 ? ` (${(r.rps * r.perReq).toFixed(0)} points/s)` : "";
  console.log(`| ${r.name} | ${r.rps.toFixed(0)}${pts} | ${(r.rps / base.rps).toFixed(2)}× | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${r.non2xx} | ${r.errors} |`);
}
