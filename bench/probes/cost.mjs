// The cost model: what each operation costs per million, measured. Runs every operation against
// the compiled worker in workerd (Miniflare) on the local stack and counts, per operation: worker
// requests (the HTTP calls, and the queue consumer's invocations from its own log lines), queue
// messages (the consumer's log), Redis commands and Data API calls (the stack's counters) and
// Durable Object requests (connects, and the pokes the worker sends per changed owner). Prices
// come from bench/prices.toml (one file, dated, with sources); the scenario too. Prints the
// BENCHMARKS.md section "Cost model".
//   source scripts/env.sh && node bench/probes/cost.mjs [--fan-out 2000] [--out FILE]
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { startWorker, AUTH, asUser, ROOT } from "../../tests/js/harness.mjs";
import { startStack, notificationId } from "../../tests/js/stack.mjs";
import { BadgeSocket } from "../../tests/js/badge.mjs";

const arg = (name, dflt) => { const i = process.argv.indexOf(name); return i > 0 ? process.argv[i + 1] : dflt; };
const FAN_OUT = Number(arg("--fan-out", 2000));
const OUT = arg("--out", null);
const P = JSON.parse(execFileSync("python3", ["-c", "import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],'rb'))))", path.join(ROOT, "bench/prices.toml")], { encoding: "utf8" }));
const SERVICE = { authorization: "Bearer t", "content-type": "application/json" };

// The queue consumer's log lines ({"queue": …, "messages", "events", "owners_changed"}).
const consumed = [];
const onLog = ({ message }) => {
  const i = message.indexOf('{"queue"');
  if (i < 0) return;
  try { consumed.push(JSON.parse(message.slice(i))); } catch { /* another line */ }
};
const stack = await startStack();
const bindings = { ...stack.bindings, SERVICE_TOKEN: "t", ...AUTH };
// The default configuration (queue bound, single creates written at once unless their item is
// hot), the default before (every single create queued), and no queue at all.
const queued = await startWorker({ bindings, queue: { maxBatchTimeout: 1 }, options: { handleStructuredLogs: onLog } });
const allQueued = await startWorker({ bindings: { ...bindings, NOTIFY_HOT_EVENTS: "0" }, queue: { maxBatchTimeout: 1 }, options: { handleStructuredLogs: onLog } });
const direct = await startWorker({ bindings, options: { handleStructuredLogs: () => {} } });
const HOT_LIMIT = 4; // NOTIFY_HOT_EVENTS's default
await direct.post("/v1/admin/indexes", {}, SERVICE);

let seq = 0;
const event = (owner, itemKey, i = ++seq) => ({
  owner, itemKey, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", eventId: `cost-${i}`, sender: { id: `s${i}`, name: `S${i}` }, createdTimeMsec: Date.now() - 60_000,
});
const post = async (w, body) => {
  const r = await fetch(`${w.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(body) });
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return r.json();
};

const totals = (s) => ({ redis: s.redisTotal, data: s.dataTotal });
/** Runs `fn`, waits until the consumer has taken `events` more events (a number, or a function
 * read after `fn`) and the stack is idle, and returns the counts it caused. */
async function measure(fn, { events = 0, scripts = 0 } = {}) {
  await stack.until(() => true, "idle", 60_000);
  const c0 = consumed.length;
  const snap = await stack.stats();
  const s0 = totals(snap);
  const extra = (await fn()) ?? {};
  const since = () => consumed.slice(c0);
  const taken = () => since().reduce((n, l) => n + (l.events ?? 0), 0);
  const deadline = Date.now() + 120_000;
  const want = typeof events === "function" ? events() : events;
  while (taken() < want) {
    if (Date.now() > deadline) throw new Error(`consumer took ${taken()}/${want} events`);
    await new Promise((r) => setTimeout(r, 50));
  }
  // Work after the response (a direct create's dedup commit runs in waitUntil).
  if (scripts) await stack.scriptsDone(snap, scripts, "the deferred script calls");
  await stack.until(() => true, "idle", 60_000);
  const s1 = totals(await stack.stats());
  const lines = since();
  return {
    requests: extra.requests ?? 0,
    invocations: lines.length,
    messages: lines.reduce((n, l) => n + l.messages, 0),
    pokes: (extra.pokes ?? 0) + lines.reduce((n, l) => n + l.owners_changed, 0),
    do_requests: extra.doRequests ?? 0,
    redis: s1.redis - s0.redis - (extra.ownRedis ?? 0),
    data: s1.data - s0.data - (extra.ownData ?? 0),
  };
}
const per = (m, n) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v / n]));

const ops = [];
const N = 100;
// Creates, one event per request: on ordinary items (the default writes them at once), all
// queued (the default before: one message per event), on one hot item, and with no queue.
const ORDINARY = "create, one per request, ordinary item (default: written at once)";
const QUEUED_SINGLE = "create, one per request, every one queued (the default before)";
const HOT = "create, one per request, 1 000 likes on one hot item (default)";
ops.push({ name: ORDINARY, unit: "event", ...per(await measure(async () => {
  for (let i = 0; i < N; i++) await post(queued, event(`o${i % 10}`, `item-o${i}`));
  return { requests: N, pokes: N }; // every one created an item: one poke each
}, { scripts: 2 * N }), N) });
// The same items a day later, when their rosters have expired (what DEL does): the next event on
// each is written, and its roster rebuilt from the document (a read, a script, a tally write).
const IDLE = "create, one per request, on an idle item (its roster expired and is rebuilt)";
for (let i = 0; i < N; i++) await stack.redis(["DEL", `rs:${notificationId(`o${i % 10}`, `item-o${i}`)}`]);
ops.push({ name: IDLE, unit: "event", ...per(await measure(async () => {
  for (let i = 0; i < N; i++) await post(queued, event(`o${i % 10}`, `item-o${i}`));
  return { requests: N, pokes: N };
}, { scripts: 3 * N }), N) });
ops.push({ name: QUEUED_SINGLE, unit: "event", ...per(await measure(async () => {
  for (let i = 0; i < N; i++) await post(allQueued, event(`q${i % 10}`, `item-q${i}`));
  return { requests: N };
}, { events: N }), N) });
const LIKES = 1000;
// 8 requests at a time; the consumer is waited for until it took every event answered 202.
let hotQueued = 0;
const likes = Array.from({ length: LIKES }, () => event("star", "post:viral"));
ops.push({ name: HOT, unit: "event", ...per(await measure(async () => {
  const answered = [];
  let i = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (i < likes.length) {
      const r = await fetch(`${queued.base}/v1/notifications/events`, { method: "POST", headers: SERVICE, body: JSON.stringify(likes[i++]) });
      if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
      answered.push(r.status);
      await r.arrayBuffer();
    }
  }));
  hotQueued = answered.filter((x) => x === 202).length;
  // Written at once: the producer poked their owner (the consumer logs its own pokes).
  return { requests: LIKES, pokes: LIKES - hotQueued };
}, { events: () => hotQueued }), LIKES) });
ops.push({ name: "create, direct (no queue)", unit: "event", ...per(await measure(async () => {
  for (let i = 0; i < N; i++) await post(direct, event(`d${i % 10}`, `item-d${i}`));
  return { requests: N, pokes: N }; // every one created an item: one poke each
}, { scripts: 2 * N }), N) });
// A batch of 100 (queued): packed.
const B = 5;
ops.push({ name: "create, queued, in a batch of 100", unit: "event", ...per(await measure(async () => {
  for (let b = 0; b < B; b++) await post(queued, { events: Array.from({ length: 100 }, (_, i) => event(`b${b}`, `item-b${b}-${i}`)) });
  return { requests: B };
}, { events: B * 100 }), B * 100) });
// A fan-out (scaled: per-event counts grow linearly with the owners).
ops.push({ name: `create, queued, fan-out to ${FAN_OUT} owners`, unit: "event", ...per(await measure(async () => {
  const template = event(undefined, "news:cost");
  delete template.owner;
  await post(queued, { template, owners: Array.from({ length: FAN_OUT }, (_, i) => `f${i}`) });
  return { requests: 1 };
}, { events: FAN_OUT }), FAN_OUT) });

// Roster bytes in Redis per event, for the scenario's senders per item (MEMORY USAGE of the
// rosters of items written with that many senders each).
const SPI = P.scenario.senders_per_item, ITEMS = 100;
for (let b = 0; b < ITEMS * SPI / 100; b++) {
  await post(direct, { events: Array.from({ length: 100 }, (_, i) => event("mem", `mem-${Math.floor((b * 100 + i) / SPI)}`)) });
}
let rosterBytes = 0;
for (let i = 0; i < ITEMS; i++) rosterBytes += await stack.redis(["MEMORY", "USAGE", `rs:${notificationId("mem", `mem-${i}`)}`, "SAMPLES", "0"]);
const rosterBytesPerEvent = rosterBytes / (ITEMS * SPI);

// Reads and marks as user b0 (100 items).
const user = asUser("b0");
const get = async (p) => { const r = await fetch(`${queued.base}${p}`, { headers: user }); if (!r.ok) throw new Error(`${p}: ${r.status}`); return r.json(); };
const R = 50;
ops.push({ name: "list page, with counts", unit: "call", ...per(await measure(async () => { for (let i = 0; i < R; i++) await get("/v1/notifications?limit=20"); return { requests: R }; }), R) });
ops.push({ name: "list page, counts=false", unit: "call", ...per(await measure(async () => { for (let i = 0; i < R; i++) await get("/v1/notifications?limit=20&counts=false"); return { requests: R }; }), R) });
ops.push({ name: "change feed page", unit: "call", ...per(await measure(async () => { for (let i = 0; i < R; i++) await get("/v1/notifications/changes?limit=20"); return { requests: R }; }), R) });
ops.push({ name: "mark one item read", unit: "call", ...per(await measure(async () => {
  for (let i = 0; i < R; i++) {
    const r = await fetch(`${queued.base}/v1/notifications/mark`, { method: "POST", headers: user, body: JSON.stringify({ itemKey: `item-b0-${i}`, flag: "read" }) });
    if (!r.ok) throw new Error(`mark: ${r.status}`);
  }
  return { requests: R, pokes: R }; // each changed the inbox: one poke (no socket open: no read)
}), R) });

// Live badge: connects (each gets its badge), then pushes to an open socket after marks.
const C = 20;
ops.push({ name: "WebSocket connect (with its badge)", unit: "connect", ...per(await measure(async () => {
  for (let i = 0; i < C; i++) {
    const s = await BadgeSocket.open(queued.base, "b1").opened;
    await s.next(() => true, "the connect badge");
    await s.close();
  }
  return { requests: C, doRequests: C };
}), C) });
const socket = await BadgeSocket.open(queued.base, "b2").opened;
await socket.next(() => true, "the connect badge");
const pushes = await measure(async () => {
  for (let i = 0; i < C; i++) {
    const n = socket.messages.length;
    const r = await fetch(`${queued.base}/v1/notifications/mark`, { method: "POST", headers: asUser("b2"), body: JSON.stringify({ all: true, flag: i % 2 ? "read" : "seen", value: i % 4 < 2 }) });
    if (!r.ok) throw new Error(`mark all: ${r.status}`);
    await socket.next((m) => socket.messages.indexOf(m) >= n, `push ${i}`);
  }
  // The marks' own calls (1 Data API call each) are the mark's, not the push's.
  return { requests: 0, pokes: C, ownData: C };
});
await socket.close();
ops.push({ name: "badge push (poke + counts read)", unit: "push", ...per(pushes, C) });

// Geo: no backend at all.
ops.push({ name: "geo lookup, one point", unit: "lookup", requests: 1, invocations: 0, messages: 0, pokes: 0, do_requests: 0, redis: 0, data: 0 });
ops.push({ name: "geo lookup, batch of 100 points", unit: "lookup", requests: 1 / 100, invocations: 0, messages: 0, pokes: 0, do_requests: 0, redis: 0, data: 0 });

await queued.stop();
await allQueued.stop();
await direct.stop();
// The sender index (docs/privacy.md, "Erase a sender"): one entry per new (sender, item) pair,
// written by the create that brings the sender, deleted by the cron once its item is gone.
// Its bytes as MongoDB stores them (BSON of a stored entry), and its size in the scenario.
const entryDoc = (await stack.dataApi("find", { collection: "notifications_senders", filter: {}, limit: 1 })).documents[0];
if (!entryDoc) throw new Error("no sender index entry after the creates");
const entryBytes = Number(execFileSync(path.join(ROOT, ".venv/bin/python"), ["-c",
  "import bson,json,sys,datetime; d=json.loads(sys.argv[1]); d['checkAt']=datetime.datetime.now(); print(len(bson.encode(d)))",
  JSON.stringify({ ...entryDoc, checkAt: null })]).toString().trim());
await stack.stop();

// --- Prices ---------------------------------------------------------------------------------
const w = P.workers, q = P.queues, d = P.durable_objects, r = P.upstash_redis, lg = P.workers_logs;
const SAMPLING = { production: 0.01, every: 1 };
const LOG_EVENTS_PER_REQUEST = 2; // the invocation log and the worker's access line
/** Dollars per operation, by line item (no allowances: those are applied to the month). */
function price(o, sampling = SAMPLING.production) {
  const workerRequests = o.requests + o.invocations;
  const lines = {
    workers: workerRequests * (w.requests_per_million + P.scenario.cpu_ms_per_request * w.cpu_ms_per_million) / 1e6,
    queues: o.messages * 3 * q.operations_per_million / 1e6,
    durable_objects: (o.do_requests + o.pokes) * d.requests_per_million / 1e6,
    redis: o.redis * r.commands_per_100k / 1e5,
    logs: workerRequests * LOG_EVENTS_PER_REQUEST * sampling * lg.events_per_million / 1e6,
  };
  return { ...lines, total: Object.values(lines).reduce((a, b) => a + b, 0) };
}
const $ = (x) => (x >= 100 ? `$${Math.round(x).toLocaleString("en-US")}` : `$${x.toFixed(x < 0.1 ? 3 : 2)}`);
const f = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(x < 0.1 ? 3 : 2));

const byName = Object.fromEntries(ops.map((o) => [o.name, o]));
const sc = P.scenario, days = sc.days_per_month;
const fanOut = ops.find((o) => o.name.startsWith("create, queued, fan-out"));
const singles = sc.events_per_day * sc.single_event_share;
const mix = [
  [ORDINARY, singles * (1 - sc.hot_single_share) * (1 - sc.idle_item_share)],
  [IDLE, singles * (1 - sc.hot_single_share) * sc.idle_item_share],
  [HOT, singles * sc.hot_single_share],
  ["create, queued, in a batch of 100", sc.events_per_day * (1 - sc.single_event_share)],
  ["list page, with counts", sc.list_feed_calls_per_day / 2],
  ["change feed page", sc.list_feed_calls_per_day / 2],
  ["geo lookup, one point", sc.geo_lookups_per_day],
  ["WebSocket connect (with its badge)", sc.connects_per_day],
  ["badge push (poke + counts read)", sc.events_per_day * sc.pushes_per_event],
];
function month(sampling, redisGb, override = {}, rename = {}) {
  const use = { workers: 0, queues: 0, durable_objects: 0, redis: 0, logs: 0 };
  const units = { requests: 0, queueOps: 0, doRequests: 0, doRows: 0, logEvents: 0 };
  for (const [name, perDay] of mix) {
    const o = { ...byName[rename[name] ?? name], ...(override[name] ?? {}) };
    const n = perDay * days;
    const p = price(o, sampling);
    for (const k of Object.keys(use)) use[k] += p[k] * n;
    units.requests += (o.requests + o.invocations) * n;
    units.queueOps += o.messages * 3 * n;
    units.doRequests += (o.do_requests + o.pokes) * n;
    units.doRows += (o.do_rows ?? 0) * n;
    units.logEvents += (o.requests + o.invocations) * LOG_EVENTS_PER_REQUEST * sampling * n;
  }
  // Allowances of the paid plan, then its fee.
  use.workers -= Math.min(units.requests, w.requests_included_per_month) * w.requests_per_million / 1e6;
  use.queues -= Math.min(units.queueOps, q.operations_included_per_month) * q.operations_per_million / 1e6;
  use.durable_objects -= Math.min(units.doRequests, d.requests_included_per_month) * d.requests_per_million / 1e6;
  use.durable_objects += Math.max(0, units.doRows - d.rows_written_included_per_month) * d.rows_written_per_million / 1e6;
  use.logs -= Math.min(units.logEvents, lg.events_included_per_month) * lg.events_per_million / 1e6;
  use.plan = w.plan_per_month;
  // Redis: pay-as-you-go (commands, and storage past the included GB) or the smallest fixed plan
  // that holds the data, whichever is cheaper. The data is the rosters (see rosterGb); the dedup
  // hashes hold minutes of ids, a rounding error.
  const paygRedis = use.redis + Math.max(0, redisGb - r.storage_included_gb) * r.storage_per_gb_month;
  const plan = r.fixed_plans.filter((p) => p.gb >= redisGb).sort((a, b) => a.per_month - b.per_month)[0];
  units.redisPayg = paygRedis;
  units.redisPlan = plan;
  use.redis = plan ? Math.min(paygRedis, plan.per_month) : paygRedis;
  units.redisChoice = plan && plan.per_month < paygRedis ? plan.name : "pay-as-you-go";
  return { use, total: Object.values(use).reduce((a, b) => a + b, 0), units };
}
// Rosters live as long as their item and its tombstone when the document cannot rebuild them
// (past the origins cap), else their item's active days and one idle day after.
const FULL_DAYS = 30 + 7; // NOTIFY_TTL (30 days) + NOTIFY_TOMBSTONE_TTL_HOURS (168 h)
const IDLE_DAYS = 1; // NOTIFY_ROSTER_IDLE_MINUTES (1 440)
const smallDays = sc.roster_active_days + IDLE_DAYS;
const rosterGb = (days) => sc.events_per_day * rosterBytesPerEvent * days / 1e9;
const gbBefore = rosterGb(FULL_DAYS);
const redisGb = rosterGb(smallDays * (1 - sc.past_cap_item_share) + FULL_DAYS * sc.past_cap_item_share);
// Before this change, in the same run: a batched event was one message (as a single create is
// measured above), a connect wrote the owner (one row), and production logged every request.
const before = month(SAMPLING.every, gbBefore, {
  "create, queued, in a batch of 100": { messages: 1, invocations: byName[QUEUED_SINGLE].invocations },
  "WebSocket connect (with its badge)": { do_rows: 1 },
}, { [ORDINARY]: QUEUED_SINGLE, [IDLE]: QUEUED_SINGLE, [HOT]: QUEUED_SINGLE });
const after = month(SAMPLING.production, redisGb);
// The same month with every single create queued (NOTIFY_HOT_EVENTS=0): the cheaper, slower choice.
const QUEUE_ALL = { [ORDINARY]: QUEUED_SINGLE, [IDLE]: QUEUED_SINGLE, [HOT]: QUEUED_SINGLE };
const afterAllQueued = month(SAMPLING.production, redisGb, {}, QUEUE_ALL);

const out = [];
out.push("## Cost model");
out.push("");
out.push(`\`node bench/probes/cost.mjs\` (section 90): every operation run against the compiled worker in workerd on the local stack, counting worker requests, queue-consumer invocations and messages (the consumer's log lines), Redis commands and Data API calls (the stack's counters) and Durable Object requests; priced with \`bench/prices.toml\` (seen ${P.seen}; the entries marked unverified there are issue #31's figures or assumptions). Database excluded. Fan-out measured to ${FAN_OUT} owners (per-event counts are linear in the owners). Workers Logs at production's \`head_sampling_rate\` (${SAMPLING.production}), ${LOG_EVENTS_PER_REQUEST} log events per request; CPU assumed ${sc.cpu_ms_per_request} ms per request (not measured). A connect writes no storage (\`tests/js/notify_stream.test.mjs\`).`);
out.push("");
out.push("| operation | worker requests | consumer invocations | queue messages | Redis commands | Data API calls | DO requests | $ per 1 M | of which Queues | of which Redis |");
out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const o of ops) {
  const p = price(o);
  out.push(`| ${o.name} (per ${o.unit}) | ${f(o.requests)} | ${f(o.invocations)} | ${f(o.messages)} | ${f(o.redis)} | ${f(o.data)} | ${f(o.do_requests + o.pokes)} | ${$(p.total * 1e6)} | ${$(p.queues * 1e6)} | ${$(p.redis * 1e6)} |`);
}
const single = byName[QUEUED_SINGLE], batched = byName["create, queued, in a batch of 100"];
out.push("");
out.push(`Queue messages per event, same run: ${f(single.messages)} sent one per request (the format of every queued event before packing) → ${f(batched.messages)} in a batch of 100 (${f(single.messages / Math.max(batched.messages, 1e-9))}× fewer) and ${f(fanOut.messages)} in a fan-out (${f(single.messages / Math.max(fanOut.messages, 1e-9))}× fewer).`);
out.push("");
const hot = byName[HOT], ordinary = byName[ORDINARY];
out.push("");
out.push(`A hot item, same run: ${LIKES} likes, ${HOT_LIMIT} written at once and ${hotQueued} queued, cost ${f(hot.data * LIKES)} Data API calls in all (${(1 / Math.max(hot.data, 1e-9)).toFixed(0)}× fewer than one per like) and ${f(hot.messages)} queue messages per like; an ordinary create costs ${f(ordinary.redis)} Redis commands (the reservation with its hot check, and the commit) and no queue message.`);
out.push("");
out.push(`**Scenario "${sc.name}"**, a month of ${days} days: ${(sc.events_per_day / 1e6).toFixed(1)} M events a day (${sc.single_event_share * 100} in 100 one per request, ${sc.hot_single_share * 100} in 100 of those on hot items, the rest in batches of 100), ${(sc.list_feed_calls_per_day / 1e6).toFixed(0)} M list/feed calls (half each), ${(sc.geo_lookups_per_day / 1e6).toFixed(0)} M geo lookups, ${(sc.connects_per_day / 1e6).toFixed(0)} M connects and ${sc.pushes_per_event} badge pushes per event; allowances of the Workers Paid plan applied.`);
out.push("");
out.push("| line item | before (every single create queued, one message per event, owner written per connect, logs at 1) | now (default: hot items queued) | now with `NOTIFY_HOT_EVENTS=0` (every single create queued) |");
out.push("|---|---:|---:|---:|");
for (const k of ["workers", "queues", "durable_objects", "redis", "logs", "plan"]) out.push(`| ${k.replace("_", " ")} | ${$(before.use[k])} | ${$(after.use[k])} | ${$(afterAllQueued.use[k])} |`);
out.push(`| **total a month** | **${$(before.total)}** | **${$(after.total)}** | **${$(afterAllQueued.total)}** |`);
out.push("");
const idle = byName[IDLE];
out.push(`Redis holds ${redisGb.toFixed(2)} GB of rosters in this scenario (${rosterBytesPerEvent.toFixed(1)} B per event at ${SPI} senders per item, measured with \`MEMORY USAGE\` in this run; a roster the document can rebuild is kept ${smallDays} days, its item's ${sc.roster_active_days} active ${sc.roster_active_days === 1 ? "day" : "days"} and one idle, the ${sc.past_cap_item_share * 100} in 100 past the origins cap ${FULL_DAYS}; before, every roster was kept ${FULL_DAYS} days: ${gbBefore.toFixed(1)} GB). The rebuild is paid by the next event on an idle item (${sc.idle_item_share * 100} in 100 of the ordinary single creates, assumed): ${f(idle.redis)} Redis commands and ${f(idle.data)} Data API calls instead of ${f(byName[ORDINARY].redis)} and ${f(byName[ORDINARY].data)}. Each month is priced on the cheaper of pay-as-you-go (${$(before.units.redisPayg)} before, ${$(after.units.redisPayg)} now, ${$(afterAllQueued.units.redisPayg)} with every single create queued) and the smallest fixed plan that holds it (${after.units.redisPlan ? `${after.units.redisPlan.name}, ${$(after.units.redisPlan.per_month)}` : "none"}). A create written at once costs ${f(ordinary.redis)} Redis commands (the reservation and its commit), a queued one ${f(single.redis)}: ${after.total > afterAllQueued.total ? `the default buys a badge within milliseconds instead of the consumer's batch timeout (section "Burst-only queueing") with about ${$(after.total - afterAllQueued.total)} a month here` : `on a fixed plan the commands cost nothing more, so the default's badge within milliseconds (section "Burst-only queueing") also saves about ${$(afterAllQueued.total - after.total)} a month of queue operations here`}.`);
// Per 1 M creates in the scenario's mix (singles, hot singles, batches), Redis either way.
const createMix = mix.filter(([n]) => n.startsWith("create"));
const createEvents = createMix.reduce((a, [, d]) => a + d, 0);
// Redis per event either on pay-as-you-go, or as the month's bill spread over the month's events
// when that bill is a fixed plan.
const perCreate = (m, rename = {}) => {
  const fixed = m.units.redisChoice !== "pay-as-you-go";
  return createMix.reduce((a, [n, d]) => {
    const p = price(byName[rename[n] ?? n]);
    return a + (p.total - (fixed ? p.redis : 0)) * d;
  }, 0) / createEvents * 1e6 + (fixed ? m.use.redis / (createEvents * days) * 1e6 : 0);
};
const connect = price(byName["WebSocket connect (with its badge)"]).total * 1e6;
// How far the assumption on active days can go before the rosters need the next plan, and what
// a create costs then.
const plans = [...r.fixed_plans].sort((a, b) => a.gb - b.gb);
const planNow = after.units.redisChoice !== "pay-as-you-go" ? plans.find((p) => p.name === after.units.redisChoice) : null;
const nextPlan = planNow && plans.find((p) => p.gb > planNow.gb);
const activeDaysFit = planNow && Math.floor(planNow.gb / rosterGb(1) - IDLE_DAYS);
const sensitivity = nextPlan
  ? ` The rosters fit the ${planNow.name} plan while items stay active up to ${activeDaysFit} days (the scenario assumes ${sc.roster_active_days}); past that the ${nextPlan.name} plan (${$(nextPlan.per_month)}) puts a create at ${$(perCreate({ ...after, use: { ...after.use, redis: nextPlan.per_month } }))} per 1 M.`
  : "";
out.push("");
out.push(`Issue #31's goal (≤ $0.60 per 1 M, database excluded), by this model: a create in the scenario's mix costs ${$(perCreate(after))} per 1 M by default and ${$(perCreate(afterAllQueued, QUEUE_ALL))} with every single create queued (Redis as billed above); an event in a batch of 100 ${$(price(batched).total * 1e6)}, in a fan-out ${$(price(fanOut).total * 1e6)}; a WebSocket connect ${$(connect)}. ${perCreate(after) <= 0.6 ? "The default meets the goal" : "The default misses the goal"}: a single create's own request ($${w.requests_per_million.toFixed(2)} per 1 M) and its owner's poke ($${d.requests_per_million.toFixed(2)}) leave $${(0.6 - w.requests_per_million - d.requests_per_million).toFixed(2)} for the rest, less than one queue message (three operations, $${(3 * q.operations_per_million).toFixed(2)}) or one pay-as-you-go Redis command ($${(r.commands_per_100k * 10).toFixed(2)} per 1 M), so the goal needs the direct write and a fixed Redis plan, whose fee is set by the rosters' memory.${sensitivity}`);
// The sender index in the scenario: at most one entry per event, each living as long as its item.
const liveEntries = sc.events_per_day * FULL_DAYS;
out.push("");
out.push(`The sender index (what finds a sender's items for its erasure): one entry of ${entryBytes} bytes of BSON (plus its keys in the \`_id\`, \`o\` and \`checkAt\` indexes) per new (sender, item) pair, written by the create that brings the sender: the Data API calls of the create rows above include it (an ordinary create ${f(byName[ORDINARY].data)}); a returning sender writes none. An entry lives as long as its item (the cron deletes it once the item is gone), so at one entry per event (the upper bound) this scenario holds at most ${(liveEntries / 1e6).toFixed(0)} M entries (${sc.events_per_day / 1e6} M a day × ${FULL_DAYS} days), ${(liveEntries * entryBytes / 1e9).toFixed(1)} GB of documents. The database's price is outside this model, for the index as for the items.`);
out.push("");
const eventsMonth = sc.events_per_day * days;
out.push(`Hosted peers for the same ${(eventsMonth / 1e6).toFixed(0)} M notifications a month, at their list prices (bench/prices.toml; database and delivery channels excluded on both sides):`);
out.push("");
out.push("| peer | unit | $ per 1 000 | a month | verified |");
out.push("|---|---|---:|---:|---|");
for (const p of P.peers) out.push(`| ${p.name} | ${p.unit} | ${p.per_thousand.toFixed(2)} | ${$(p.per_thousand * eventsMonth / 1000)} | ${p.verified ? "yes" : "no: " + p.source} |`);
const text = out.join("\n") + "\n";
if (OUT) writeFileSync(OUT, text);
process.stdout.write(text);
