// The persistence adapters keep a store across a restart: memory, a key-value store shaped like
// React Native's AsyncStorage, and IndexedDB (fake-indexeddb: the IndexedDB API in Node).
import { test } from "node:test";
import assert from "node:assert/strict";
import { IDBFactory } from "fake-indexeddb";
import { InboxStore } from "../src/store.ts";
import type { PersistedState } from "../src/store.ts";
import { MemoryPersistence } from "../src/persistence.ts";
import type { Persistence } from "../src/persistence.ts";
import { asyncStoragePersistence } from "../src/async-storage.ts";
import { IndexedDbPersistence } from "../src/indexeddb.ts";

const item = (key: string, revision: number) => ({
  notificationId: `id-${key}`, itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like",
  templateType: "default", createdTimeMsec: 1, expireAtMsec: 2, revision, originsCount: 1,
  origins: [{ senderId: "s", name: "Ana", createdTimeMsec: 1 }], read: false, seen: false, archived: false,
  landing: null, messageArguments: {}, summary: "Ana liked your post",
});

function filled(): InboxStore {
  const s = new InboxStore();
  s.applyPage({ items: [item("b", 20), item("a", 10)], nextCursor: "cur", counts: { unread: 2, unseen: 2 }, sync: "WzEwLCIiXQ" });
  s.addPending({ id: "m1", kind: "mark", itemKey: "a", flag: "read", value: true, idempotencyKey: "k1" });
  return s;
}

/** An AsyncStorage look-alike over a Map (strings only, like the real one). */
function asyncStorage() {
  const m = new Map<string, string>();
  return {
    m,
    getItem: async (k: string) => m.get(k) ?? null,
    setItem: async (k: string, v: string) => { assert.equal(typeof v, "string"); m.set(k, v); },
    removeItem: async (k: string) => { m.delete(k); },
  };
}

const adapters: Array<[string, () => Persistence]> = [
  ["memory", () => new MemoryPersistence()],
  ["AsyncStorage-shaped", () => asyncStoragePersistence(asyncStorage())],
  ["IndexedDB", () => new IndexedDbPersistence("test-db", new IDBFactory())],
];

for (const [name, make] of adapters) {
  test(`${name}: a saved store comes back with its items, counts, positions and queued operations; clear forgets it`, async () => {
    const p = make();
    assert.equal(await p.load("u1"), null, "nothing before the first save");
    const s = filled();
    await p.save("u1", s.persist());
    const back = new InboxStore(await p.load("u1"));
    assert.deepEqual(back.getSnapshot(), s.getSnapshot());
    assert.deepEqual(back.persist(), s.persist());
    assert.equal(await p.load("u2"), null, "per user");
    // A later save replaces the earlier one; the saved copy is not the live object.
    const state = s.persist();
    await p.save("u1", state);
    state.items.length = 0;
    assert.equal((await p.load("u1"))!.items.length, 2);
    await p.clear("u1");
    assert.equal(await p.load("u1"), null);
  });
}

test("a damaged or foreign entry reads as a cold start, not a crash", async () => {
  const kv = asyncStorage();
  const p = asyncStoragePersistence(kv);
  kv.m.set("inbox.v1:u1", "{not json");
  assert.equal(await p.load("u1"), null);
  kv.m.set("inbox.v1:u1", JSON.stringify({ version: 2 }));
  assert.equal(await p.load("u1"), null);
  assert.throws(() => new InboxStore({ version: 2 } as unknown as PersistedState), /version/);
});
