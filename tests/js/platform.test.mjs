// Any developer laptop: the npm lockfile installs on Linux x86-64/arm64 and macOS arm64/x86-64,
// scripts/env.sh picks that platform's Node and esbuild, and scripts/setup.sh has a branch per
// platform whose plan (`--plan`) can be printed without changing anything. No worker needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const lock = JSON.parse(readFileSync(path.join(ROOT, "package-lock.json"), "utf8"));
const asList = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const PLATFORMS = [
  { name: "linux-x64", os: "linux", cpu: "x64" },
  { name: "linux-arm64", os: "linux", cpu: "arm64" },
  { name: "darwin-arm64", os: "darwin", cpu: "arm64" },
  { name: "darwin-x64", os: "darwin", cpu: "x64" },
];

/** Lock entries installable on (os, cpu): no os/cpu restriction, or one that admits it. */
function admits(entry, os, cpu) {
  const ok = (list, v) => list.length === 0 || (list.some((x) => !x.startsWith("!")) ? list.includes(v) : !list.includes(`!${v}`));
  return ok(asList(entry.os), os) && ok(asList(entry.cpu), cpu);
}

test("every os/cpu-restricted package in package-lock.json is optional", () => {
  const bad = Object.entries(lock.packages)
    .filter(([name, e]) => name && (e.os !== undefined || e.cpu !== undefined) && !e.optional)
    .map(([name, e]) => `${name} (os ${asList(e.os)}, cpu ${asList(e.cpu)})`);
  assert.deepEqual(bad, [], "npm ci refuses these on other platforms: make them optionalDependencies");
});

test("each supported platform gets a Node >= 22, an esbuild and a workerd binary from the lockfile", () => {
  for (const p of PLATFORMS) {
    const names = Object.entries(lock.packages).filter(([n, e]) => n && (e.os || e.cpu) && admits(e, p.os, p.cpu)).map(([n, e]) => [n, e]);
    const node = names.filter(([n]) => /\/node-(bin-)?(linux|darwin)-[a-z0-9]+$/.test(n));
    assert.equal(node.length, 1, `${p.name}: exactly one Node package, got ${node.map(([n]) => n)}`);
    assert.ok(Number(node[0][1].version.split(".")[0]) >= 22, `${p.name}: ${node[0][0]} ${node[0][1].version} is older than 22`);
    assert.ok(names.some(([n]) => n === `node_modules/@esbuild/${p.name}`), `${p.name}: no @esbuild/${p.name}`);
    const workerd = names.filter(([n]) => n.endsWith(`/workerd-${p.os}-${p.cpu === "x64" ? "64" : p.cpu}`));
    assert.ok(workerd.length >= 1, `${p.name}: no workerd binary`);
  }
});

test("scripts/env.sh picks the platform's Node and esbuild packages, the ones the lockfile has", () => {
  for (const p of PLATFORMS) {
    const r = spawnSync("bash", ["-c", 'source scripts/env.sh && echo "$EGN_NODE_PKG $EGN_ESBUILD_PKG" && echo "$PATH"'], {
      cwd: ROOT, env: { ...process.env, EGN_PLATFORM: p.name }, encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const [pkgs, pathVar] = r.stdout.trim().split("\n");
    const [nodePkg, esbuildPkg] = pkgs.split(" ");
    for (const pkg of [nodePkg, esbuildPkg]) {
      const e = lock.packages[`node_modules/${pkg}`];
      assert.ok(e, `${p.name}: ${pkg} is not in package-lock.json`);
      assert.ok(admits(e, p.os, p.cpu), `${p.name}: ${pkg} is for ${asList(e.os)}/${asList(e.cpu)}`);
    }
    assert.ok(pathVar.startsWith(path.join(ROOT, "node_modules", nodePkg, "bin")), `${p.name}: PATH starts with ${pathVar.split(":")[0]}`);
  }
  const build = readFileSync(path.join(ROOT, "scripts/build-worker.sh"), "utf8");
  assert.match(build, /ESBUILD_BIN="\$\{ESBUILD_BIN:-\$PWD\/node_modules\/\$EGN_ESBUILD_PKG\/bin\/esbuild\}"/);
});

/** `bash scripts/setup.sh --plan` with a simulated platform and commands pretended absent/present. */
function plan(platform, { missing = [], present = [] } = {}) {
  const r = spawnSync("bash", ["scripts/setup.sh", "--plan"], {
    cwd: ROOT,
    env: { ...process.env, SETUP_PLATFORM: platform, SETUP_MISSING: missing.join(","), SETUP_PRESENT: present.join(",") },
    encoding: "utf8",
  });
  return { status: r.status, out: r.stdout + r.stderr };
}

test("setup --plan on Debian/Ubuntu installs what is missing with apt-get, and changes nothing", () => {
  const { status, out } = plan("debian", { missing: ["redis-server", "jq", "chromium"] });
  assert.equal(status, 0, out);
  assert.match(out, /platform: debian/);
  assert.match(out, /would run: (sudo )?apt-get install -y -qq redis-server jq chromium/);
  assert.doesNotMatch(out, /brew/);
  assert.match(out, /plan only: nothing was changed/);
  assert.doesNotMatch(out.replace(/\[setup\] would run: .*/g, ""), /\[setup\] ready/);
});

test("setup --plan on macOS installs with Homebrew and says the browser tests are skipped without chromium", () => {
  const { status, out } = plan("macos", { missing: ["redis-server", "jq", "chromium"], present: ["brew"] });
  assert.equal(status, 0, out);
  assert.match(out, /platform: macos/);
  assert.match(out, /would run: brew install redis jq/);
  assert.match(out, /chromium not found: .*browser tests.*skipped/);
  assert.match(out, /brew install --cask chromium/);
  assert.doesNotMatch(out, /apt-get/);
  const noBrew = plan("macos", { missing: ["brew"] });
  assert.notEqual(noBrew.status, 0);
  assert.match(noBrew.out, /Homebrew is missing/);
});

test("setup on any other platform prints exactly what to install and exits non-zero", () => {
  const { status, out } = plan("other", { missing: ["redis-server"] });
  assert.notEqual(status, 0, out);
  assert.match(out, /unsupported platform/);
  for (const what of [/redis-server >= 7 +MISSING/, /jq +present/, /python3 with venv/, /chromium \(browser tests\)/]) assert.match(out, what);
  assert.doesNotMatch(out, /would run/);
});

test("setup checks its prerequisites first: Rust, Node with npm, Python", () => {
  const { status, out } = plan("debian", { missing: ["rustup", "npm"] });
  assert.equal(status, 1, out);
  assert.match(out, /Rust via rustup/);
  assert.match(out, /Node >= 20 with npm/);
  assert.doesNotMatch(out, /Python 3 \(python3\)/);
});
