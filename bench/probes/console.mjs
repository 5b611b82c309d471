// Console first load in Chromium against the local worker (workerd via Miniflare + the local
// stack): bytes transferred and time to interactive, cold cache, median of N runs, with a
// trivial worker route (`/healthz`) loaded the same way in the same run as the anchor.
// Usage: node bench/probes/console.mjs [--runs 9]   (after bash scripts/build-worker.sh)
import { chromium } from "playwright-core";
import { gzipSync } from "node:zlib";
import { readFileSync } from "node:fs";
import path from "node:path";
import { startWorker, AUTH, ROOT } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";

const runs = Number(process.argv[process.argv.indexOf("--runs") + 1]) || 9;
const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, ...AUTH } });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_BIN ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

/** One cold load of `url` in a fresh context: bytes on the wire (CDP) and timings (ms). */
async function load(url, readyMark) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  const files = new Map();
  cdp.on("Network.responseReceived", (e) => files.set(e.requestId, { url: e.response.url, bytes: 0 }));
  cdp.on("Network.loadingFinished", (e) => { const f = files.get(e.requestId); if (f) f.bytes = e.encodedDataLength; });
  await page.goto(url, { waitUntil: "load" });
  let ready = null;
  if (readyMark) {
    await page.waitForSelector("#map[data-ready=true]");
    ready = await page.evaluate((m) => performance.getEntriesByName(m)[0]?.startTime, readyMark);
    // The "you" panel and IPDB card are filled by then or shortly after; wait so their bytes count.
    await page.waitForFunction(() => !document.getElementById("ipdb").textContent.includes("Loading"));
  }
  const nav = await page.evaluate(() => { const n = performance.getEntriesByType("navigation")[0]; return { dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd }; });
  await ctx.close();
  return { ...nav, ready, files: [...files.values()] };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
await load(`${w.base}/`, "console-map-ready"); // warm the isolate and the asset reader
const consoleRuns = [], anchorRuns = [];
for (let i = 0; i < runs; i++) {
  anchorRuns.push(await load(`${w.base}/healthz`));
  consoleRuns.push(await load(`${w.base}/`, "console-map-ready"));
}
const last = consoleRuns.at(-1);
console.log(`console first load, ${runs} cold runs (median), Chromium ${browser.version()} headless:`);
console.log("| request | bytes on the wire | gzip -9 of the body |");
console.log("|---|---:|---:|");
for (const f of last.files) {
  const p = new URL(f.url).pathname;
  const local = p === "/" ? "assets/www/index.html" : p.startsWith("/www/") ? `assets${p}` : null;
  const gz = local ? gzipSync(readFileSync(path.join(ROOT, local)), { level: 9 }).length : "";
  console.log(`| ${p} | ${f.bytes} | ${gz} |`);
}
const total = last.files.reduce((s, f) => s + f.bytes, 0);
console.log(`| total (${last.files.length} requests) | ${total} | |`);
const c = (k) => median(consoleRuns.map((r) => r[k]));
const anchor = median(anchorRuns.map((r) => r.load));
console.log(`DOMContentLoaded ${c("dcl").toFixed(0)} ms; load ${c("load").toFixed(0)} ms; interactive (outline drawn, clicks handled) ${c("ready").toFixed(0)} ms`);
console.log(`anchor: /healthz loaded the same way ${anchor.toFixed(0)} ms → interactive = ${(c("ready") / anchor).toFixed(1)}× the anchor`);
await browser.close();
await w.stop();
await stack.stop();
