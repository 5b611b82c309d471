// The README's "Three first calls", pasted as a newcomer would: each ```sh block runs in bash
// against the compiled worker (queue bound, as in wrangler.toml) and the local stack, with the
// local secrets of .dev.vars, and must print the ```json block shown after it. Only `sync`, a
// position that differs per run (as the README says), is compared by shape.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { startWorker, ROOT } from "./harness.mjs";
import { startStack } from "./stack.mjs";

const README_BASE = "http://127.0.0.1:8787";
const devVars = Object.fromEntries(
  readFileSync(path.join(ROOT, existsSync(path.join(ROOT, ".dev.vars")) ? ".dev.vars" : ".dev.vars.example"), "utf8")
    .split("\n")
    .filter((l) => /^[A-Z][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).replace(/^"|"$/g, "")]),
);

let stack, w;
before(async () => {
  stack = await startStack();
  // Everything .dev.vars sets (as wrangler dev would), with the backends of this test's stack.
  w = await startWorker({
    bindings: { ...devVars, ...stack.bindings },
    queue: {},
  });
});
after(async () => {
  await w?.stop();
  await stack?.stop();
});

/** The section's (shell, expected JSON) pairs, in order. */
function firstCalls() {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = readme.split(/^## Three first calls$/m)[1].split(/^## /m)[0];
  return [...section.matchAll(/```sh\n([\s\S]*?)```\n```json\n([\s\S]*?)```/g)].map((m) => ({ sh: m[1], json: m[2].trim() }));
}

const normalize = (v) => {
  if (v && typeof v === "object") {
    const out = Array.isArray(v) ? v.map(normalize) : {};
    if (!Array.isArray(v)) for (const [k, x] of Object.entries(v)) out[k] = k === "sync" ? typeof x : normalize(x);
    return out;
  }
  return v;
};

test("the README's first calls answer as shown when pasted", { timeout: 120_000 }, async () => {
  const calls = firstCalls();
  assert.equal(calls.length, 4, "coordinate, IP, inbox, and one create");
  for (const { sh, json } of calls) {
    const script = `source scripts/env.sh\n${sh.replaceAll(README_BASE, w.base)}`;
    const r = spawnSync("bash", ["-e", "-c", script], { cwd: ROOT, encoding: "utf8" });
    assert.equal(r.status, 0, `${sh}\n${r.stderr}`);
    assert.deepEqual(normalize(JSON.parse(r.stdout)), normalize(JSON.parse(json)), sh);
  }
  // "The item is in the list now" (polled all the same: a queued create would land later).
  const token = spawnSync("bash", ["-c", "source scripts/env.sh && node scripts/dev-token.mjs --sub ana"], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  let page;
  for (;;) {
    page = await (await fetch(`${w.base}/v1/notifications`, { headers: { authorization: `Bearer ${token}` } })).json();
    if (page.items.length > 0) break;
    await new Promise((r) => setTimeout(r, 100)); // poll the list: the condition itself
  }
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
  assert.ok(readme.includes(`"summary":"${page.items[0].summary}"`), page.items[0].summary);
  assert.ok(readme.includes(`"counts":${JSON.stringify(page.counts)}`), JSON.stringify(page.counts));
});
