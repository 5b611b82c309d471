// The TypeScript SDK's figures, as a BENCHMARKS.md section (markdown on stdout):
//  1. applying a 100-entry change-feed page to a 10 000-item store (Node, ms per page);
//  2. a cold start from persisted state (1 000 items, 10 changes since) against a full reload:
//     requests, response bytes and Data API calls, against the compiled worker + local stack;
//  3. create → badge → item in the store, with a live client (the worker + local stack);
//  4. the core entry point's size, minified and gzipped (esbuild, zlib level 9).
//   node bench/probes/sdk.mjs [--quick] [--out FILE]
// The markdown goes to FILE (default stdout); the worker's own log lines go to stdout too, so
// bench/report/80_sdk.sh passes --out.
import { writeFileSync } from "node:fs";
import { performance, PerformanceObserver } from "node:perf_hooks";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import path from "node:path";
import { ROOT, startWorker, AUTH, userToken } from "../../tests/js/harness.mjs";
import { startStack } from "../../tests/js/stack.mjs";
import { InboxClient, InboxStore, MemoryPersistence } from "../../clients/ts/src/index.ts";
import { InboxService } from "../../clients/ts/src/service.ts";

const quick = process.argv.includes("--quick");
const log = (...a) => console.error("[bench-sdk]", ...a);
const out = [];
const say = (s = "") => out.push(s);

// --- 1. applying change pages ----------------------------------------------------------------
function item(i, revision, over = {}) {
  return {
    notificationId: `n${String(i).padStart(8, "0")}`, itemKey: `k${i}`, serviceType: "feed", categoryType: "social",
    notificationType: "like", templateType: "default", createdTimeMsec: revision, expireAtMsec: revision + 1e9, revision,
    originsCount: 1, origins: [{ senderId: `s${i}`, name: "Ana", createdTimeMsec: revision }], read: false, seen: false,
    archived: false, landing: null, messageArguments: {}, summary: "Ana liked your post", ...over,
  };
}
const pos = (ms) => Buffer.from(JSON.stringify([ms, ""])).toString("base64url");

/** V8's GC pauses (start, end) while measuring: a page they overlap paid for one. */
const gcs = [];
new PerformanceObserver((list) => { for (const e of list.getEntries()) gcs.push([e.startTime, e.startTime + e.duration]); }).observe({ entryTypes: ["gc"] });

function applyBench(storeSize, pageSize, pages) {
  const store = new InboxStore();
  store.applyPage({ items: Array.from({ length: storeSize }, (_, i) => item(i, 1_000 + i)), nextCursor: null, counts: { unread: storeSize, unseen: storeSize }, sync: pos(1) });
  store.getSnapshot();
  let next = storeSize, rev = 1_000 + storeSize, ms = 2;
  const apply = [], withSnapshot = [], spans = [];
  for (let p = 0; p < pages; p++) {
    // A page like a busy feed's: 60 merges/marks of held items (random), 20 new, 20 tombstones.
    const entries = [];
    for (let j = 0; j < 60; j++) entries.push(item(Math.floor(Math.random() * next), ++rev, { read: j % 2 === 0 }));
    for (let j = 0; j < 20; j++) entries.push(item(next++, ++rev));
    for (let j = 0; j < 20; j++) entries.push({ itemKey: `k${Math.floor(Math.random() * next)}`, deleted: true });
    const body = { items: entries, sync: pos(ms++), hasMore: false };
    const t0 = performance.now();
    store.applyChanges(body);
    const t1 = performance.now();
    store.getSnapshot().items.length; // what a UI reads after the change: the ordered list and counts
    const t2 = performance.now();
    apply.push(t1 - t0);
    withSnapshot.push(t2 - t0);
    spans.push([t0, t2]);
  }
  return { apply, withSnapshot, spans, size: store.getSnapshot().items.length };
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (f) => s[Math.min(s.length - 1, Math.floor(f * s.length))];
  return { median: q(0.5), p95: q(0.95) };
};

log("apply: warm-up");
applyBench(10_000, 100, 50);
log("apply: measuring");
const ab = applyBench(10_000, 100, quick ? 50 : 300);
await new Promise((r) => setTimeout(r, 100)); // the GC entries are delivered after the loop
const withGc = ab.spans.map(([a, b]) => gcs.some(([s, e]) => s < b && e > a));
const a1 = stats(ab.apply), a2 = stats(ab.withSnapshot);
const a3 = stats(ab.withSnapshot.filter((_, i) => !withGc[i]));
// The same again once V8's optimising tiers have settled: the run above still pays for JIT
// tier-up (its tail falls to a third on a second run in the same process).
log("apply: steady state");
applyBench(10_000, 100, quick ? 50 : 600);
const steady = applyBench(10_000, 100, quick ? 50 : 300);
const s1 = stats(steady.apply), s2 = stats(steady.withSnapshot);
say("## TypeScript SDK (clients/ts)");
say();
say("`node bench/probes/sdk.mjs` (section `bench/report/80_sdk.sh`).");
say();
say(`### Applying a change-feed page to a store of 10 000 items (Node ${process.version})`);
say();
say(`${ab.apply.length} pages of 100 entries each (60 updates of random held items, 20 new items, 20 tombstones), after 50 warm-up pages; the store ends at ${ab.size} items.`);
say();
say("| per page | median | p95 |");
say("|---|---|---|");
say(`| \`applyChanges\` | ${a1.median.toFixed(3)} ms | ${a1.p95.toFixed(3)} ms |`);
say(`| \`applyChanges\` + \`getSnapshot()\` (the ordered list a UI renders) | ${a2.median.toFixed(3)} ms | ${a2.p95.toFixed(3)} ms |`);
say(`| the same, the ${withGc.length - withGc.filter(Boolean).length} pages without a V8 GC pause | ${a3.median.toFixed(3)} ms | ${a3.p95.toFixed(3)} ms |`);
say(`| steady state: \`applyChanges\` (the same pages after 600 more warm-up pages, a new store) | ${s1.median.toFixed(3)} ms | ${s1.p95.toFixed(3)} ms |`);
say(`| steady state: \`applyChanges\` + \`getSnapshot()\` | ${s2.median.toFixed(3)} ms | ${s2.p95.toFixed(3)} ms |`);
say();
say(`The ordered list is brought up to date incrementally (binary search for the items that leave, one merge pass into an array sized once, no per-item hashing); a snapshot is still a new immutable array. ${withGc.filter(Boolean).length} of ${withGc.length} pages overlapped a GC pause (young-generation scavenges promoting the pages' items, which the store keeps).`);
say();

// --- 2. cold start against a full reload -------------------------------------------------------
log("cold start: starting the stack and the worker");
const stack = await startStack();
const w = await startWorker({ bindings: { ...stack.bindings, SERVICE_TOKEN: "svc", ...AUTH } });
try {
  await fetch(`${w.base}/v1/admin/indexes`, { method: "POST", headers: { authorization: "Bearer svc" } });
  const svc = new InboxService({ baseUrl: w.base, serviceKey: "svc" });
  const owner = "bench-cold";
  const N = 1000;
  const now = Date.now();
  for (let b = 0; b < N; b += 100) {
    const events = Array.from({ length: 100 }, (_, i) => ({
      owner, itemKey: `item:${b + i}`, serviceType: "feed", categoryType: "social", notificationType: "comment",
      templateType: "default", eventId: `bench-${b + i}`, sender: { id: `s${b + i}`, name: `Sender ${b + i}` }, createdTimeMsec: now,
    }));
    await svc.sendBatch(events);
  }
  /** A client whose fetch counts requests and response bytes. */
  const metered = (o = {}) => {
    const m = { requests: 0, bytes: 0 };
    const f = async (input, init) => {
      const r = await fetch(input, init);
      const buf = new Uint8Array(await r.arrayBuffer());
      m.requests++;
      m.bytes += buf.length;
      return new Response(buf, { status: r.status, headers: r.headers });
    };
    const c = new InboxClient({ baseUrl: w.base, user: owner, getToken: () => userToken(owner), live: false, pollMs: 3_600_000, watchVisibility: false, pageSize: 100, fetch: f, ...o });
    return { c, m };
  };
  const loadAll = async (c) => { await c.start(); while (await c.loadMore()); };

  // The inbox was filled a while before the app last ran: its persisted position (held 2 s
  // behind now, the settle window) is then past those creates.
  await new Promise((r) => setTimeout(r, 2_100));
  const persistence = new MemoryPersistence();
  const first = metered({ persistence });
  await loadAll(first.c);
  await first.c.stop();
  if (first.c.snapshot.items.length !== N) throw new Error(`held ${first.c.snapshot.items.length} items, not ${N}`);
  // 10 changes: 4 new items, 3 merges, 2 marks from another device, 1 delete.
  for (let i = 0; i < 4; i++) await svc.send({ owner, itemKey: `new:${i}`, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", eventId: `bench-new-${i}`, sender: { id: `n${i}`, name: "New" }, createdTimeMsec: Date.now() });
  for (let i = 0; i < 3; i++) await svc.send({ owner, itemKey: `item:${i * 100}`, serviceType: "feed", categoryType: "social", notificationType: "comment", templateType: "default", eventId: `bench-merge-${i}`, sender: { id: `m${i}`, name: "Merger" }, createdTimeMsec: Date.now() });
  const other = metered();
  await other.c.start();
  await other.c.mark("item:500", "read");
  await other.c.mark("item:501", "read");
  await other.c.remove("item:502");
  await other.c.stop();
  // The change feed is read from a position held 2 s behind now (the settle window): wait until
  // the last change is older than that, on the clock, so every change is in one pull.
  await new Promise((r) => setTimeout(r, 2_100));

  await stack.until(() => true, "an idle stack");
  await stack.reset();
  const cold = metered({ persistence });
  let shownAt = null;
  const t0 = performance.now();
  cold.c.store.subscribe(() => { shownAt ??= performance.now() - t0; });
  await cold.c.start();
  const upToDate = performance.now() - t0;
  const coldData = (await stack.stats()).dataTotal;
  const coldApplied = cold.c.snapshot.items.length;

  await stack.reset();
  const full = metered();
  const t1 = performance.now();
  await loadAll(full.c);
  const fullMs = performance.now() - t1;
  const fullData = (await stack.stats()).dataTotal;
  const same = JSON.stringify(full.c.snapshot.items) === JSON.stringify(cold.c.snapshot.items);
  await cold.c.stop();
  await full.c.stop();

  say(`### Cold start from persisted state: ${N} items held, 10 changes since (workerd + local stack)`);
  say();
  say("The persisted store (memory persistence, the same JSON the other adapters keep) is restored and shown, then the client pulls the change feed from its `sync` and reads the counts once; a full reload pages the whole inbox again (100 items a page). Response bytes are bodies as received (no compression on the local stack).");
  say();
  say("| | requests | response bytes | Data API calls | time |");
  say("|---|---|---|---|---|");
  say(`| cold start (restore + pull) | ${cold.m.requests} | ${cold.m.bytes.toLocaleString("en")} | ${coldData} | shown after ${shownAt.toFixed(1)} ms, up to date after ${upToDate.toFixed(0)} ms |`);
  say(`| full reload | ${full.m.requests} | ${full.m.bytes.toLocaleString("en")} | ${fullData} | ${fullMs.toFixed(0)} ms |`);
  say();
  say(`Both ended with the same ${coldApplied} items in the same order and state: ${same ? "yes" : "**no**"}.`);
  say();

  // --- 3. create → badge → item in the store ---------------------------------------------------
  log("latency: create → badge → item in the store");
  const lowner = "bench-live";
  const live = new InboxClient({ baseUrl: w.base, user: lowner, getToken: () => userToken(lowner), live: true, watchVisibility: false });
  await live.start();
  await new Promise((resolve) => { const off = live.on("status", (st) => { if (st === "live") { off(); resolve(); } }); if (live.status === "live") resolve(); });
  const lat = [];
  const M = quick ? 10 : 40;
  for (let i = 0; i < M; i++) {
    const key = `live:${i}`;
    const t = performance.now();
    const seen = new Promise((resolve) => {
      const check = () => { if (live.snapshot.items.some((x) => x.itemKey === key)) { off(); resolve(); } };
      const off = live.store.subscribe(check);
    });
    await svc.send({ owner: lowner, itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like", templateType: "default", eventId: `bench-live-${i}`, sender: { id: `l${i}`, name: "Live" }, createdTimeMsec: Date.now() });
    await seen;
    lat.push(performance.now() - t);
    // Past the hub's coalescing window (250 ms, crates/core/src/notify/badge.rs), so each create
    // gets its own push at once instead of waiting for the window's trailing push.
    await new Promise((r) => setTimeout(r, 300));
  }
  await live.stop();
  const l = stats(lat);
  say(`### Create → badge → item in the store (workerd + local stack)`);
  say();
  say(`A live client (WebSocket open); ${M} creates one after another through \`InboxService.send\`, 300 ms apart (past the hub's 250 ms coalescing window), each timed from the call until the item is in the client's store (the badge, then the client's pull of the change feed).`);
  say();
  say("| | median | p95 |");
  say("|---|---|---|");
  say(`| create → item in the store | ${l.median.toFixed(1)} ms | ${l.p95.toFixed(1)} ms |`);
  say();
} finally {
  await w.stop();
  await stack.stop();
}

// --- 4. bundle size ----------------------------------------------------------------------------
const sizes = [];
for (const entry of ["index", "indexeddb", "async-storage", "react", "service"]) {
  const r = await build({
    entryPoints: [path.join(ROOT, `clients/ts/src/${entry}.ts`)], bundle: true, minify: true, format: "esm",
    target: "es2022", write: false, external: ["react"], logLevel: "silent",
  });
  const code = r.outputFiles[0].contents;
  sizes.push([entry, code.length, gzipSync(code, { level: 9 }).length]);
}
say("### Bundle size (esbuild `--bundle --minify`, ES2022, gzip -9)");
say();
say("| entry point | minified | minified + gzip |");
say("|---|---|---|");
for (const [e, min, gz] of sizes) say(`| \`@edge-geo-notify/inbox${e === "index" ? "" : `/${e}`}\` | ${(min / 1024).toFixed(1)} KiB | ${(gz / 1024).toFixed(1)} KiB |`);
say();
say("Each entry point is measured alone (the core is included in `/service`'s figure only as far as it imports it).");
const outAt = process.argv.indexOf("--out");
if (outAt > 0) writeFileSync(process.argv[outAt + 1], `${out.join("\n")}\n`);
else console.log(out.join("\n"));
