// `wrangler deploy --dry-run` validates the bundle, the assets directory and every binding
// without an account (the build step is a no-op when the bundle is up to date).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "./harness.mjs";

test("wrangler deploy --dry-run succeeds with all bindings", () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "dry-"));
  const stdout = execFileSync(
    process.execPath,
    [path.join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", out],
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  for (const binding of ["env.ASSETS", "env.IPDB_CONFIG", "env.IPDB_BUCKET"]) {
    assert.match(stdout, new RegExp(binding.replace(".", "\\.")), binding);
  }
  assert.match(stdout, /--dry-run: exiting now/);
  const bundle = fs.readdirSync(out);
  assert.ok(bundle.some((f) => f.endsWith(".wasm")), `bundle has the wasm module: ${bundle}`);
  fs.rmSync(out, { recursive: true, force: true });
});
