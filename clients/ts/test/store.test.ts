// Store properties beyond the vectors: the incremental ordering equals a full sort after any
// sequence of change pages, and the snapshot is a stable object between changes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { InboxStore, compareItems } from "../src/store.ts";

/** Deterministic PRNG (mulberry32), so a failure replays. */
function rng(seed: number) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const item = (i: number, revision: number, over: Record<string, unknown> = {}) => ({
  notificationId: `n${(i * 7919) % 10007}`, itemKey: `k${i}`, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision, originsCount: 1, origins: [],
  read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: null, ...over,
});

test("after any sequence of change pages the order is the server's (revision, notificationId) descending, each key once", () => {
  const r = rng(42);
  const s = new InboxStore();
  s.applyPage({ items: Array.from({ length: 500 }, (_, i) => item(i, Math.floor(r() * 300))), nextCursor: null, sync: "WzEsIiJd" });
  const truth = new Map(s.getSnapshot().items.map((i) => [i.itemKey, i]));
  let next = 500;
  for (let p = 0; p < 200; p++) {
    const entries = [];
    const n = 1 + Math.floor(r() * 20);
    for (let j = 0; j < n; j++) {
      const roll = r();
      // Revisions collide on purpose (ties are broken by notificationId).
      if (roll < 0.5) entries.push(item(Math.floor(r() * next), Math.floor(r() * 400)));
      else if (roll < 0.7) entries.push(item(next++, Math.floor(r() * 400)));
      else if (roll < 0.9) entries.push({ itemKey: `k${Math.floor(r() * next)}`, deleted: true as const });
      else entries.push(item(Math.floor(r() * next), 5, { archived: true }));
    }
    s.applyChanges({ items: entries as never, sync: "WzIsIiJd", hasMore: false });
    for (const e of entries) {
      if ("deleted" in e || e.archived) truth.delete(e.itemKey); else truth.set(e.itemKey, e as never);
    }
    if (p % 7 === 0 || p === 199) {
      const want = [...truth.values()].sort(compareItems).map((i) => i.itemKey);
      assert.deepEqual(s.getSnapshot().items.map((i) => i.itemKey), want, `after page ${p}`);
    }
  }
});

test("the snapshot is the same object until something changes; listeners hear every change", () => {
  const s = new InboxStore();
  let heard = 0;
  const off = s.subscribe(() => heard++);
  s.applyPage({ items: [item(1, 10)], nextCursor: null, counts: { unread: 1, unseen: 1 }, sync: "WzEsIiJd" });
  const a = s.getSnapshot();
  assert.equal(s.getSnapshot(), a);
  assert.ok(Object.isFrozen(a.items));
  s.applyBadge({ type: "badge", unread: 2, unseen: 2, sync: "WzEsIiJd" });
  assert.notEqual(s.getSnapshot(), a);
  assert.equal(heard, 2);
  off();
  s.applyCounts({ unread: 0, unseen: 0 });
  assert.equal(heard, 2, "unsubscribed");
});
