// Starts the compiled worker (build/index.js + wasm) inside workerd via Miniflare, with the real
// assets directory behind the ASSETS binding, on a free loopback port.
import { Miniflare } from "miniflare";
import { fileURLToPath } from "node:url";
import path from "node:path";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export async function startWorker({ assetsDir = path.join(ROOT, "assets"), bindings = {} } = {}) {
  // Node 22's fetch pools connections; workerd closes idle ones, so tests use fresh ones.
  const mf = new Miniflare({
    name: "edge-geo-notify",
    modules: true,
    scriptPath: path.join(ROOT, "build/index.js"),
    modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }],
    compatibilityDate: "2026-07-01",
    assets: {
      directory: assetsDir,
      binding: "ASSETS",
      routerConfig: { invoke_user_worker_ahead_of_assets: true, has_user_worker: true },
    },
    bindings: { ENABLE_BENCH: "true", IPDB_KV_KEY: "ipdb/current", ...bindings },
    kvNamespaces: ["IPDB_CONFIG"],
    r2Buckets: ["IPDB_BUCKET"],
    // A fixed request.cf (Miniflare would otherwise try to download one).
    cf: { country: "GB", colo: "LHR", asn: 64512 },
    host: "127.0.0.1",
    port: 0,
  });
  const url = await mf.ready;
  const base = url.href.replace(/\/$/, "");
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
    async stop() { await mf.dispose(); },
  };
}
