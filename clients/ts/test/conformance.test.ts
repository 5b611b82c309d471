// Runs the store against every conformance vector (clients/conformance/README.md).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { InboxStore } from "../src/store.ts";
import type { Operation, PersistedState } from "../src/store.ts";
import { MemoryPersistence } from "../src/persistence.ts";

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../conformance");
const files = readdirSync(path.join(DIR, "vectors")).filter((f) => f.endsWith(".json")).sort();

test("the committed vectors are make-vectors.mjs's output", () => {
  execFileSync(process.execPath, [path.join(DIR, "make-vectors.mjs"), "--check"], { stdio: "pipe" });
});

test("there are vectors", () => assert.ok(files.length >= 10, `${files.length} vector files`));

type Step = Record<string, any> & { op: string; expect?: Record<string, any> };

const KIND: Record<string, Operation["kind"]> = { mark: "mark", bulk: "bulk", delete: "delete" };

for (const file of files) {
  const v = JSON.parse(readFileSync(path.join(DIR, "vectors", file), "utf8"));
  test(`vector ${v.name}: ${v.description}`, async () => {
    let store = new InboxStore();
    for (const [i, step] of (v.steps as Step[]).entries()) {
      const where = `${file} step ${i} (${step.op})`;
      let dropped: boolean | undefined;
      const m = /^(mark|bulk|delete)(Optimistic|Confirmed|Failed)$/.exec(step.op);
      if (step.op === "page") store.applyPage(step.body, step.append === true);
      else if (step.op === "changes") store.applyChanges(step.body);
      else if (step.op === "badge") dropped = !store.applyBadge(step.message);
      else if (step.op === "counts") store.applyCounts(step.body);
      else if (step.op === "restore") store.restore(step.state as PersistedState);
      else if (step.op === "roundTrip") {
        const p = new MemoryPersistence();
        await p.save("u", store.persist());
        store = new InboxStore((await p.load("u"))!);
      } else if (m && m[2] === "Optimistic") {
        const { op: _op, expect: _e, ...inputs } = step;
        store.addPending({ ...inputs, kind: KIND[m[1]], idempotencyKey: `k-${step.id}` } as Operation);
      } else if (m && m[2] === "Confirmed") store.confirm(step.id);
      else if (m && m[2] === "Failed") store.fail(step.id);
      else assert.fail(`${where}: unknown op`);

      const e = step.expect;
      if (!e) continue;
      const s = store.getSnapshot();
      if ("itemKeys" in e) assert.deepEqual(s.items.map((x) => x.itemKey), e.itemKeys, `${where}: itemKeys`);
      if ("items" in e) {
        for (const [key, fields] of Object.entries(e.items as Record<string, Record<string, unknown>>)) {
          const item = s.items.find((x) => x.itemKey === key) as Record<string, unknown> | undefined;
          assert.ok(item, `${where}: item ${key} visible`);
          for (const [f, want] of Object.entries(fields)) assert.deepEqual(item[f], want, `${where}: ${key}.${f}`);
        }
      }
      if ("counts" in e) assert.deepEqual({ ...s.counts }, e.counts, `${where}: counts`);
      if ("sync" in e) assert.equal(s.sync, e.sync, `${where}: sync`);
      if ("nextCursor" in e) assert.equal(s.nextCursor, e.nextCursor, `${where}: nextCursor`);
      if ("pending" in e) assert.equal(s.pending.length, e.pending, `${where}: pending`);
      if ("dropped" in e) assert.equal(dropped, e.dropped, `${where}: dropped`);
    }
  });
}
