// The interleaving harness: a seeded scheduler drives the client, a scripted in-process server
// (support/model.ts) and a fake clock through random orders of start/restart, resume, online,
// socket open/close/refuse, badges, poll ticks and retries (time), flush, pull, new operations,
// another device's creates and deletes, and answers delivered at once, late, dropped after
// being applied, lost, or 503. After every step and after each run the invariants of
// clients/conformance/README.md hold; a failure prints the seeds.
//   HARNESS_SEEDS=n (default 300) · HARNESS_FIRST=seed · INBOX_CLIENT_MODULE=path to another client.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { MemoryPersistence } from "../src/persistence.ts";
import { FakeClock, ScriptedSocket, settle } from "./support/fake.ts";
import { ServerModel, T0 } from "./support/model.ts";

const SEEDS = Number(process.env.HARNESS_SEEDS ?? 300);
const FIRST = Number(process.env.HARNESS_FIRST ?? 1);
const STEPS = 60;
const modulePath = process.env.INBOX_CLIENT_MODULE ? path.resolve(process.env.INBOX_CLIENT_MODULE) : "../src/client.ts";
const { InboxClient } = (await import(modulePath)) as { InboxClient: new (o: any) => any };

/** mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface MadeOp { name: string; id: string; key: string; kind: "mark" | "delete"; itemKey: string; flag?: "read" | "seen"; value?: boolean; index: number }

/** One seeded run; returns the violations found (empty: all invariants held). */
export async function runSeed(seed: number): Promise<string[]> {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const clock = new FakeClock(T0);
  const server = new ServerModel(["a", "b", "c", "d", "e"]);
  const persistence = new MemoryPersistence();
  const live = r() < 0.7;
  const violations: string[] = [];
  const ops: MadeOp[] = [];
  const byId = new Map<string, MadeOp>();
  const rollbacks: string[] = [];
  const results = new Map<string, string>();
  let delayed = 0;
  let created = 0;
  const trace: string[] = [];
  ScriptedSocket.made = [];
  ScriptedSocket.throws = false;
  ScriptedSocket.onMade = null;

  const make = () => {
    const c = new InboxClient({
      baseUrl: "https://api.test", user: "u1", getToken: () => "t1", persistence, live, pollMs: 5_000, watchVisibility: false,
      fetch: server.fetch, WebSocket: ScriptedSocket, random: r, clock, retry: { attempts: 2, maxWaitMs: 60_000 },
      // main's client takes only a sleep (and uses the global timers, patched below).
      sleep: (ms: number) => new Promise<void>((res) => clock.setTimeout(res, ms)),
    });
    c.on("rollback", (op: { id: string }) => rollbacks.push(op.id));
    c.on("error", () => {});
    return c;
  };
  let c = make();
  let started = false;
  const socket = () => ScriptedSocket.made.at(-1);

  const check = (where: string) => {
    if (server.held.length + delayed > 1) violations.push(`${where}: ${server.held.length + delayed} requests in flight at once (${server.held.map((h) => `${h.method} ${h.url.pathname}`).join(", ")})`);
    // A confirmed operation is never undone by a page read before it: the visible flag is the
    // latest (not rolled back) operation's, and a confirmed delete stays gone.
    const visible = new Map((c.snapshot.items as Array<{ itemKey: string; read: boolean; seen: boolean }>).map((i) => [i.itemKey, i]));
    const pending = new Set((c.snapshot.pending as Array<{ id: string }>).map((p) => p.id));
    const latest = new Map<string, MadeOp>();
    for (const op of ops) if (!rollbacks.includes(op.id)) latest.set(op.kind === "delete" ? `${op.itemKey}|delete` : `${op.itemKey}|${op.flag}`, op);
    for (const [k, i] of visible) {
      for (const flag of ["read", "seen"] as const) {
        const op = latest.get(`${k}|${flag}`);
        if (op && i[flag] !== op.value) violations.push(`${where}: ${k}.${flag} shows ${i[flag]}, the latest operation ${op.name} set ${op.value}`);
      }
      const del = latest.get(`${k}|delete`);
      if (del && !pending.has(del.id) && !server.items.has(k)) violations.push(`${where}: ${k} shown again after its delete ${del.name} was confirmed`);
    }
  };

  const newOp = () => {
    const keys = ["a", "b", "c", "d", "e", ...Array.from({ length: created }, (_, i) => `x${i}`)];
    const itemKey = pick(keys);
    const kind = r() < 0.25 ? "delete" : "mark";
    const flag = pick(["read", "seen"] as const);
    const value = r() < 0.7;
    const p: Promise<any> = kind === "delete" ? c.remove(itemKey) : c.mark(itemKey, flag, value);
    const q = c.snapshot.pending.at(-1) as { id: string; idempotencyKey: string };
    const op: MadeOp = { name: `op${ops.length + 1}`, id: q.id, key: q.idempotencyKey, kind, itemKey, index: ops.length, ...(kind === "mark" ? { flag, value } : {}) };
    ops.push(op);
    byId.set(op.id, op);
    p.then((res) => results.set(op.id, res?.outcome ?? "applied"), () => results.set(op.id, "threw"));
    return `${op.name} ${kind} ${itemKey}${kind === "mark" ? ` ${flag}=${value}` : ""}`;
  };

  const answer = (how: "ok" | "dropped" | "failed" | "unavailable", late: boolean) => {
    const h = pick(server.held);
    const later = late ? (f: () => void) => { delayed++; clock.setTimeout(() => { delayed--; f(); }, Math.floor(r() * 1500)); } : undefined;
    server.settle(h, how, later);
    return `${how}${late ? " late" : ""} ${h.method} ${h.url.pathname}`;
  };

  const restart = async () => {
    const stopping = c.stop();
    let done = false;
    stopping.then(() => { done = true; }, () => { done = true; });
    for (let i = 0; i < 200 && !done; i++) {
      await settle();
      // The app is killed: what is in flight may or may not have been applied.
      for (const h of [...server.held]) server.settle(h, r() < 0.5 ? "dropped" : "failed");
      if (!done && !(await clock.runNext())) await settle();
    }
    c = make();
    void c.start().catch(() => {});
    started = true;
  };

  const realSetTimeout = globalThis.setTimeout;
  const realClearTimeout = globalThis.clearTimeout;
  globalThis.setTimeout = ((f: () => void, ms: number) => clock.setTimeout(f, ms)) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((h: unknown) => clock.clearTimeout(h)) as unknown as typeof clearTimeout;
  try {
    for (let step = 0; step < STEPS; step++) {
      const x = r();
      let what: string;
      if (!started && (x < 0.3 || step > 3)) { started = true; void c.start().catch(() => {}); what = "start"; }
      else if (x < 0.28 && server.held.length > 0) {
        const y = r();
        what = answer(y < 0.6 ? "ok" : y < 0.75 ? "dropped" : y < 0.9 ? "failed" : "unavailable", r() < 0.2);
      } else if (x < 0.42) what = newOp();
      else if (x < 0.48) { c.resume(); what = "resume"; }
      else if (x < 0.52) { (c.online ?? c.resume).call(c); what = "online"; }
      else if (x < 0.56) { void c.flush().catch?.(() => {}); what = "flush"; }
      else if (x < 0.60) { c.pull().catch(() => {}); what = "pull"; }
      else if (x < 0.65) {
        const s = socket();
        if (s?.readyState === 0) { if (r() < 0.8) { s.open(); what = "socket open"; } else { s.refuse(); what = "socket refused"; } }
        else if (s?.readyState === 1) { const code = r() < 0.3 ? 4001 : 1006; s.closeWith(code); what = `socket close ${code}`; }
        else what = "no socket";
      } else if (x < 0.72) {
        const s = socket();
        if (s?.readyState === 1 && server.badges.length > 0) { s.message(server.badges.shift()); what = "badge"; }
        else what = "no badge";
      } else if (x < 0.78) {
        if (r() < 0.6) { server.create(`x${created++}`); what = `other device creates x${created - 1}`; }
        else { const k = pick([...server.items.keys()]); if (k) server.deleteByOther(k); what = `other device deletes ${k}`; }
      } else if (x < 0.92) { const ms = Math.floor(r() * 6000); await clock.advance(ms); what = `time +${ms}`; }
      else if (x < 0.95 && started) { await restart(); what = "restart"; }
      else { await clock.runNext(); what = "next timer"; }
      await settle();
      trace.push(what);
      check(`seed ${seed} step ${step} (${what})`);
    }

    // Quiesce: a perfect network until nothing is queued, then one more pull.
    if (!started) { void c.start().catch(() => {}); started = true; }
    let idle = 0;
    for (let i = 0; i < 400 && idle < 3; i++) {
      await settle();
      const s = socket();
      if (server.held.length > 0) { server.settle(server.held[0], "ok"); idle = 0; }
      else if (delayed > 0) { await clock.runNext(); idle = 0; }
      else if (s?.readyState === 1 && server.badges.length > 0) { s.message(server.badges.shift()); idle = 0; }
      else if (c.snapshot.pending.length > 0) { void c.flush().catch?.(() => {}); await clock.advance(1000); idle = 0; }
      else idle++;
      check(`seed ${seed} quiesce`);
    }
    let pulled = false;
    c.pull().then(() => { pulled = true; }, () => { pulled = true; });
    for (let i = 0; i < 200 && !pulled; i++) {
      await settle();
      if (server.held.length > 0) server.settle(server.held[0], "ok");
      else if (delayed > 0 || !pulled) await clock.runNext();
    }
    await settle();
    check(`seed ${seed} end`);

    // After the run: every operation reached the server once, in order; rollbacks only for refusals.
    if (c.snapshot.pending.length > 0) violations.push(`seed ${seed}: ${c.snapshot.pending.length} operations still queued after quiescing`);
    let lastOrder = -1;
    for (const op of ops) {
      const rec = server.records.get(op.key);
      const rolled = rollbacks.filter((id) => id === op.id).length;
      if (rolled > 1) violations.push(`seed ${seed}: ${op.name} rolled back ${rolled} times`);
      if (!rec) { violations.push(`seed ${seed}: ${op.name} never reached the server`); continue; }
      if (rec.executions !== 1) violations.push(`seed ${seed}: ${op.name} applied ${rec.executions} times`);
      if (rec.order < lastOrder) violations.push(`seed ${seed}: ${op.name} applied out of creation order`);
      lastOrder = Math.max(lastOrder, rec.order);
      if (rec.applied && rolled > 0) violations.push(`seed ${seed}: spurious rollback of ${op.name} (${op.kind} ${op.itemKey}), which the server applied (${rec.status})`);
      if (!rec.applied && rolled === 0) violations.push(`seed ${seed}: ${op.name} refused by the server (${rec.status}) but not rolled back`);
      const res = results.get(op.id);
      if (res === "rejected" && rec.applied) violations.push(`seed ${seed}: ${op.name} resolved rejected but was applied`);
    }
    // The store equals the server.
    const want = [...server.items.values()].sort((a, b) => b.revision - a.revision).map((i) => `${i.itemKey}:${+i.read}${+i.seen}`);
    const got = (c.snapshot.items as Array<{ itemKey: string; read: boolean; seen: boolean }>).map((i) => `${i.itemKey}:${+i.read}${+i.seen}`);
    if (JSON.stringify(got) !== JSON.stringify(want)) violations.push(`seed ${seed}: store ${got.join(" ")} ≠ server ${want.join(" ")}`);
    if (JSON.stringify(c.snapshot.counts) !== JSON.stringify(server.counts())) violations.push(`seed ${seed}: counts ${JSON.stringify(c.snapshot.counts)} ≠ server ${JSON.stringify(server.counts())}`);
    await c.stop().catch(() => {});
  } finally {
    globalThis.setTimeout = realSetTimeout;
    globalThis.clearTimeout = realClearTimeout;
  }
  if (violations.length > 0 && process.env.HARNESS_TRACE) console.log(`seed ${seed}: ${trace.join(" · ")}`);
  return violations;
}

const KINDS: Array<[RegExp, string]> = [
  [/requests in flight/, "more than one request in flight"],
  [/out of creation order/, "applied out of order"],
  [/spurious rollback/, "spurious rollback"],
  [/rolled back \d+ times/, "rolled back twice"],
  [/never reached the server/, "operation lost"],
  [/applied \d+ times/, "applied twice"],
  [/not rolled back/, "refusal not rolled back"],
  [/the latest operation/, "a confirmed or queued operation not shown"],
  [/shown again after its delete/, "deleted item shown again"],
  [/still queued/, "operations left queued"],
  [/: store /, "store ≠ server"],
  [/: counts /, "counts ≠ server"],
];
const kindOf = (v: string): string => KINDS.find(([re]) => re.test(v))?.[1] ?? v;

test(`${SEEDS} seeded interleavings (seeds ${FIRST}..${FIRST + SEEDS - 1}): every operation applied once, in order, no spurious rollback, store = server`, async () => {
  const failed = new Map<number, string[]>();
  for (let seed = FIRST; seed < FIRST + SEEDS; seed++) {
    const v = await runSeed(seed);
    if (v.length > 0) failed.set(seed, v);
  }
  const kinds = new Map<string, number>();
  for (const v of failed.values()) for (const k of new Set(v.map(kindOf))) kinds.set(k, (kinds.get(k) ?? 0) + 1);
  assert.equal(failed.size, 0, `${failed.size} of ${SEEDS} seeds violated an invariant: ${[...failed.keys()].join(", ")}\n` +
    `seeds per invariant: ${[...kinds].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join("; ")}\nfirst: ${[...failed.values()].slice(0, 3).map((v) => v[0]).join("\n")}`);
});
