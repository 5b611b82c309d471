// Runs the client against every transport vector (clients/conformance/README.md "Transport
// vectors"): a fake clock, a scripted fetch and WebSocket, and the steps' expectations.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { InboxClient } from "../src/client.ts";
import type { WriteResult } from "../src/client.ts";
import { MemoryPersistence } from "../src/persistence.ts";
import type { PersistedState } from "../src/store.ts";
import { FakeClock, ScriptedSocket, settle } from "./support/fake.ts";

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../conformance");
const files = readdirSync(path.join(DIR, "transport")).filter((f) => f.endsWith(".json")).sort();
const T0 = 1_796_083_200_000;

test("the committed transport vectors are make-transport-vectors.mjs's output", () => {
  execFileSync(process.execPath, [path.join(DIR, "make-transport-vectors.mjs"), "--check"], { stdio: "pipe" });
});

test("there are transport vectors", () => assert.ok(files.length >= 20, `${files.length} vector files`));

type Json = any;
interface Req { method: string; url: string; headers: Record<string, string>; body: string | undefined; t: number; answered: boolean; matched: boolean; respond: (r: Response) => void; fail: (e: Error) => void }

const DEFAULTS = { live: false, pollMs: 3_600_000, attempts: 3, baseMs: 250, maxMs: 8000, maxWaitMs: 60_000, pageSize: 20, user: "u1" };

/** Runs one vector; throws (an assertion) at the first difference. Exported for reuse. */
export async function runVector(v: Json): Promise<void> {
  const o = { ...DEFAULTS, ...v.options };
  const clock = new FakeClock(T0);
  const requests: Req[] = [];
  const tokenCalls: boolean[] = [];
  const tokens: string[] = v.tokens ?? ["t1"];
  const tokenErrors: Array<[number, number]> = v.tokenErrors ?? [];
  let tokenIndex = 0;
  const results: Record<string, Json> = {};
  const rollbacks: string[] = [];
  const names = new Map<string, string>(); // op id → name
  const vars = new Map<string, string>();
  let violation: string | null = null;

  const fetch = ((input: string | URL | Request, init?: RequestInit) => new Promise<Response>((respond, fail) => {
    const open = requests.filter((r) => !r.answered);
    if (open.length > 0) violation ??= `a second request (${init?.method ?? "GET"} ${String(input)}) while ${open[0].method} ${open[0].url} is unanswered`;
    requests.push({ method: init?.method ?? "GET", url: String(input), headers: { ...(init?.headers as Record<string, string>) }, body: init?.body as string | undefined, t: clock.t, answered: false, matched: false, respond, fail });
  })) as typeof globalThis.fetch;

  const getToken = ({ refresh }: { refresh: boolean }) => {
    tokenCalls.push(refresh);
    if (tokenErrors.some(([from, to]) => clock.t >= from && clock.t < to)) throw new Error("identity provider unavailable");
    return tokens[Math.min(tokenIndex++, tokens.length - 1)];
  };

  ScriptedSocket.made = [];
  ScriptedSocket.throws = v.webSocket === "throws";
  const madeAt = new Map<ScriptedSocket, number>();
  ScriptedSocket.onMade = (s) => madeAt.set(s, clock.t);
  let socketsTaken = 0;
  let socket: ScriptedSocket | null = null;

  const persistence = new MemoryPersistence();
  if (v.persisted) await persistence.save(o.user, v.persisted as PersistedState);
  for (const op of (v.persisted?.pending ?? []) as Array<{ id: string }>) names.set(op.id, op.id);

  const make = () => {
    const c = new InboxClient({
      baseUrl: "https://api.test", user: o.user, getToken, persistence, live: o.live, pollMs: o.pollMs, pageSize: o.pageSize,
      fetch, WebSocket: ScriptedSocket, retry: { attempts: o.attempts, baseMs: o.baseMs, maxMs: o.maxMs, maxWaitMs: o.maxWaitMs },
      random: () => 0.5, clock, watchVisibility: false,
    });
    c.on("rollback", (op) => rollbacks.push(names.get(op.id) ?? op.id));
    return c;
  };
  let client = make();

  const record = (name: string, p: Promise<WriteResult>) => {
    void p.then((r) => { results[name] = r.outcome === "applied" ? { outcome: "applied" } : { outcome: r.outcome, code: r.error.code }; });
  };
  const unmatched = () => requests.find((r) => !r.matched);
  const check = () => { if (violation) assert.fail(violation); };

  for (const [i, step] of (v.steps as Json[]).entries()) {
    const where = `step ${i} ${JSON.stringify(step).slice(0, 80)} at t=${clock.t}`;
    if ("call" in step) {
      const c = client;
      switch (step.call) {
        case "start": c.start().catch(() => {}); break;
        case "stop": c.stop().catch(() => {}); break;
        case "resume": c.resume(); break;
        case "online": c.online(); break;
        case "flush": void c.flush(); break;
        case "pull": c.pull().catch(() => {}); break;
        case "restart":
          await c.stop();
          client = make();
          client.start().catch(() => {});
          break;
        case "mark": case "bulk": case "remove": {
          const p = step.call === "mark" ? c.mark(step.itemKey, step.flag ?? "read", step.value ?? true)
            : step.call === "bulk" ? c.bulk(step.action, step.category) : c.remove(step.itemKey);
          names.set(c.snapshot.pending.at(-1)!.id, step.op);
          record(step.op, p);
          break;
        }
        default: assert.fail(`${where}: unknown call`);
      }
      await settle();
    } else if ("request" in step) {
      await settle();
      while (!unmatched()) {
        check();
        const n = clock.next();
        assert.ok(n !== null && n <= 86_400_000, `${where}: no request came (${n === null ? "nothing scheduled" : `next timer at ${n}`})`);
        await clock.runNext();
      }
      check();
      const r = unmatched()!;
      r.matched = true;
      const want = step.request;
      const got = new URL(r.url);
      assert.equal(r.method, want.method, `${where}: method`);
      const wantUrl = new URL(want.path, "https://api.test");
      assert.equal(decodeURIComponent(got.pathname), decodeURIComponent(wantUrl.pathname), `${where}: path`);
      const params = (u: URL) => [...u.searchParams.entries()].map(([k, x]) => `${k}=${x}`).sort();
      assert.deepEqual(params(got), params(wantUrl), `${where}: query`);
      for (const [h, value] of Object.entries((want.headers ?? {}) as Record<string, string | null>)) {
        const have = r.headers[h] ?? null;
        if (typeof value === "string" && value.startsWith("$")) {
          assert.ok(have !== null, `${where}: header ${h} present`);
          if (!vars.has(value)) {
            assert.ok(![...vars.values()].includes(have), `${where}: ${value} differs from the other variables`);
            vars.set(value, have);
          }
          assert.equal(have, vars.get(value), `${where}: header ${h} = ${value}`);
        } else assert.equal(have, value, `${where}: header ${h}`);
      }
      if ("body" in want) assert.deepEqual(JSON.parse(r.body ?? "null"), want.body, `${where}: body`);
      if ("at" in step) assert.equal(r.t, step.at, `${where}: sent at`);
      const a = step.answer;
      const deliver = () => {
        r.answered = true;
        if (a.networkError) r.fail(new TypeError("fetch failed"));
        else r.respond(new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status, headers: { "content-type": "application/json", ...a.headers } }));
      };
      if (a.delayMs) clock.setTimeout(deliver, a.delayMs);
      else deliver();
      await settle();
    } else if ("advance" in step) {
      await clock.advance(step.advance);
    } else if ("quiet" in step) {
      await settle();
      const before = [requests.length, ScriptedSocket.made.length];
      assert.ok(!unmatched(), `${where}: a request is waiting before the quiet time`);
      await clock.advance(step.quiet);
      assert.deepEqual([requests.length, ScriptedSocket.made.length], before, `${where}: requests or sockets during the quiet time: ${requests.slice(before[0]).map((r) => `${r.method} ${r.url} at ${r.t}`).join(", ")}`);
    } else if ("socket" in step) {
      await settle();
      if (step.socket === "connect") {
        while (ScriptedSocket.made.length <= socketsTaken) {
          const n = clock.next();
          assert.ok(n !== null && n <= 86_400_000, `${where}: no socket came`);
          await clock.runNext();
        }
        socket = ScriptedSocket.made[socketsTaken++];
        assert.equal(socket.url, "wss://api.test/v1/notifications/stream", `${where}: url`);
        assert.deepEqual(socket.protocols, ["inbox.v1", `auth.${step.token}`], `${where}: protocols`);
        if ("at" in step) assert.equal(madeAt.get(socket), step.at, `${where}: made at`);
      } else {
        assert.ok(socket, `${where}: no socket taken`);
        if (step.socket === "open") socket.open();
        else if (step.socket === "close") socket.closeWith(step.code);
        else if (step.socket === "refuse") socket.refuse();
        else if (step.socket === "message") socket.message(step.data);
        else assert.fail(`${where}: unknown socket action`);
      }
      await settle();
    } else if ("expect" in step) {
      await settle();
      const e = step.expect;
      const s = client.snapshot;
      if ("results" in e) assert.deepEqual(results, e.results, `${where}: results`);
      if ("rollbacks" in e) assert.deepEqual(rollbacks, e.rollbacks, `${where}: rollbacks`);
      if ("pending" in e) assert.equal(s.pending.length, e.pending, `${where}: pending`);
      if ("status" in e) assert.equal(client.status, e.status, `${where}: status`);
      if ("statusReason" in e) assert.equal(client.statusReason?.code ?? null, e.statusReason, `${where}: statusReason`);
      if ("lastError" in e) assert.equal(client.lastError?.code ?? null, e.lastError, `${where}: lastError`);
      if ("tokenCalls" in e) assert.deepEqual(tokenCalls, e.tokenCalls, `${where}: tokenCalls`);
      if ("counts" in e) assert.deepEqual({ ...s.counts }, e.counts, `${where}: counts`);
      if ("itemKeys" in e) assert.deepEqual(s.items.map((x) => x.itemKey), e.itemKeys, `${where}: itemKeys`);
      if ("items" in e) {
        for (const [key, fields] of Object.entries(e.items as Record<string, Record<string, unknown>>)) {
          const item = s.items.find((x) => x.itemKey === key) as Record<string, unknown> | undefined;
          assert.ok(item, `${where}: item ${key} visible`);
          for (const [f, want] of Object.entries(fields)) assert.deepEqual(item[f], want, `${where}: ${key}.${f}`);
        }
      }
    } else assert.fail(`${where}: unknown step`);
    check();
  }
  await settle();
  check();
  const left = unmatched();
  assert.ok(!left, `a request the vector does not expect: ${left?.method} ${left?.url} at ${left?.t}`);
  await client.stop().catch(() => {});
  ScriptedSocket.onMade = null;
}

for (const file of files) {
  const v = JSON.parse(readFileSync(path.join(DIR, "transport", file), "utf8"));
  test(`transport ${v.name}: ${v.description}`, () => runVector(v));
}
