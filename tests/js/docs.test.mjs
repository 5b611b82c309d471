// The README and docs/ as a newcomer reads them: no measured figure outside the generated
// BENCHMARKS.md, a short README in the agreed order, links that resolve, and no secret command
// without an environment. No worker needed. (The parts checked against the code are in
// tests/docs.rs.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync, existsSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const read = (rel) => readFileSync(path.join(ROOT, rel), "utf8");

/** README.md and every Markdown file under docs/, as paths relative to the root. */
function pages() {
  const out = ["README.md"];
  const walk = (dir) => {
    for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith(".md")) out.push(rel);
    }
  };
  walk("docs");
  return out;
}

// A number (digits, optionally with thousands separators or decimals) followed by a unit of
// time, size, rate, ratio or share. "256×128" (a dimension) is not a figure: × must end the token.
const FIGURE = /(?<![\w.\/^-])\d(?:[\d,.\u202f\u00a0 ]*\d)?\s?(?:ms|ns|µs|us|req\/s|ops\/s|KB|KiB|MB|MiB|GB|GiB|B|×|%)(?![\w\/])/g;

// Definitional constants: limits and defaults that are true by construction, not measurements.
// Each entry is the exact text as written, and why it may stay.
const ALLOWED = new Map([
  ["64 KiB", "the declared body size up to which an early answer still reads and drops the body"],
  ["1 MiB", "body limit of the batch routes (MAX_BATCH_BODY)"],
  ["3 MiB", "the Workers free plan's compressed bundle limit"],
  ["25 MiB", "Workers static assets' per-file limit"],
  ["128 MB", "a Workers isolate's memory limit"],
  ["256 KB", "a Cloudflare Queues sendBatch limit"],
  ["64 KB", "the size a Cloudflare Queues operation is billed by (events are packed up to it)"],
]);

test("no measured figure in README.md or docs/: BENCHMARKS.md is the only place for them", () => {
  const found = [];
  for (const page of pages()) {
    read(page).split("\n").forEach((line, i) => {
      for (const m of line.matchAll(FIGURE)) {
        const text = m[0].trim();
        if (!ALLOWED.has(text)) found.push(`${page}:${i + 1}: "${text}" in: ${line.trim().slice(0, 120)}`);
      }
    });
  }
  assert.deepEqual(found, [], "link to the BENCHMARKS.md section instead (or, for a definitional constant, add it to ALLOWED with the reason)");
});

test("the figure check catches figures in every unit it names", () => {
  const samples = ["12.86 ms", "149 ns", "0.79 µs", "444 req/s", "653 KiB", "495 395 B", "1.2 MB", "0.98×", "99.973%", "134 KB", "2.09 MiB"];
  for (const s of samples) assert.ok(`a ${s} here`.match(FIGURE), s);
  for (const s of ["256×128 top grid", "`NOTIFY_SYNC_SETTLE_MS`", "/v1/geo", "ES256", "page-NNN.bin", "2^31", "HS256", "x86-64"]) {
    assert.equal(`a ${s} here`.match(FIGURE), null, s);
  }
});

test("README: at most 200 lines, sections in the agreed order", () => {
  const readme = read("README.md");
  const lines = readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0);
  assert.ok(lines <= 200, `README.md has ${lines} lines`);
  const headings = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
  assert.deepEqual(headings, ["Requirements", "Two commands", "Three first calls", "From your app", "Deploy", "Data licences", "Links"]);
  assert.match(readme.split("\n## ")[0], /not[^.]*push notifications[^.]*APNs[^.]*FCM/is, "what it is not: no APNs/FCM push");
  for (const claim of ["`sub`", "`exp`", "`iss`", "`aud`", "inbox.v1", "changes?since="]) assert.ok(readme.includes(claim), claim);
  // Every page of docs/ is linked from the README.
  for (const page of pages().filter((p) => p.startsWith("docs/"))) assert.ok(readme.includes(`](${page})`), `README links ${page}`);
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const slug = (h) => h.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
const anchors = (file) => new Set([...readFileSync(file, "utf8").matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1].replace(/`/g, ""))));

test("relative links in README.md and docs/ resolve, anchors included", () => {
  const broken = [];
  for (const page of pages()) {
    const text = read(page).replace(/```[\s\S]*?```/g, "");
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
      const [file, anchor] = target.split("#");
      const abs = file ? path.resolve(path.dirname(path.join(ROOT, page)), file) : path.join(ROOT, page);
      if (!existsSync(abs)) {
        // Pages other helpers are writing in parallel (merged by the lead) may not exist yet.
        if (["docs/mongodb-gateway.md", "clients/ts/README.md", "clients/kotlin/README.md"].includes(path.relative(ROOT, abs))) continue;
        broken.push(`${page}: ${target} (no such file)`);
        continue;
      }
      if (anchor && statSync(abs).isFile() && abs.endsWith(".md") && !anchors(abs).has(anchor)) broken.push(`${page}: ${target} (no such heading)`);
    }
  }
  assert.deepEqual(broken, []);
});

test("every wrangler secret put/bulk names its environment (--env)", () => {
  const files = [...pages(), ".dev.vars.example", ...readdirSync(path.join(ROOT, "scripts")).filter((f) => /\.(sh|py|mjs)$/.test(f)).map((f) => `scripts/${f}`)];
  const bad = [];
  for (const f of files) {
    read(f).split("\n").forEach((line, i) => {
      if (/wrangler secret (put|bulk) [\w$"<]/.test(line) && !/--env\b|\$\{?ENV|"\$@"/.test(line)) bad.push(`${f}:${i + 1}: ${line.trim()}`);
    });
  }
  assert.deepEqual(bad, []);
});

test("issuer and audience are documented per environment, not in the top-level [vars]", () => {
  for (const page of pages()) {
    const text = read(page);
    assert.doesNotMatch(text, /wrangler\.toml \[vars\]: AUTH_ISSUER/, page);
  }
  const toml = read("wrangler.toml");
  for (const env of ["staging", "production"]) {
    const vars = toml.split(`[env.${env}.vars]`)[1]?.split(/^\[/m)[0] ?? "";
    for (const v of ["AUTH_ISSUER", "AUTH_AUDIENCE"]) assert.match(vars, new RegExp(`^${v} = `, "m"), `${v} in [env.${env}.vars]`);
  }
});
