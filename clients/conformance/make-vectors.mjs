// Writes clients/conformance/vectors/*.json: the store conformance vectors every client SDK runs
// (format: README.md). The steps and every `expect` below are written by hand from the rules in
// README.md; this script only builds the full server bodies (Notification objects, positions) so
// they look exactly like the worker's answers. Run: node clients/conformance/make-vectors.mjs
// (`--check` exits 1 when the committed files differ from this script's output).
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "vectors");
const OWNER = "u1";
const T0 = 1_796_083_200_000; // 2026-12-01T00:00:00Z, the clock of every vector

/** The worker's notificationId: base64url(sha256(owner \0 itemKey)[..12]) (crates/core/src/notify/rules.rs). */
const nid = (key) => createHash("sha256").update(OWNER).update(Buffer.from([0])).update(key).digest().subarray(0, 12).toString("base64url");
/** A change-feed position: base64url of `[ms, id]` (crates/core/src/notify/query.rs encode_cursor). */
const pos = (ms, id = "") => Buffer.from(JSON.stringify([ms, id])).toString("base64url");
/** A list cursor (same encoding, `[revision, notificationId]`). */
const cursor = (rev, key) => pos(rev, nid(key));
/** A revision written at `T0 + s` seconds (ms · 1024 + low bits, like the worker's). */
const rev = (s, low = 0) => (T0 + s * 1000) * 1024 + low;

const NAMES = ["Ana", "Ben", "Cy", "Dee", "Eli"];
/** A full Notification as GET /v1/notifications renders it (crates/core/src/notify/render.rs view()). */
function item(key, revision, over = {}) {
  const count = over.originsCount ?? 1;
  const created = Math.floor(revision / 1024);
  const origins = Array.from({ length: Math.min(count, 3) }, (_, i) => ({ senderId: `s-${key}-${i}`, name: NAMES[i % NAMES.length], createdTimeMsec: created - i }));
  const actor = count === 1 ? origins[0].name : count === 2 ? `${origins[0].name} and ${origins[1].name}` : `${origins[0].name} and ${count - 1} others`;
  return {
    notificationId: nid(key), itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like",
    templateType: "default", createdTimeMsec: created, expireAtMsec: created + 30 * 86_400_000, revision,
    originsCount: count, origins, read: false, seen: false, archived: false, landing: null,
    messageArguments: {}, summary: `${actor} liked your post`, ...over,
  };
}
const tomb = (key) => ({ itemKey: key, deleted: true });
const page = (items, { counts, sync = pos(T0), nextCursor = null } = {}) => ({ items, nextCursor, ...(counts ? { counts } : {}), sync });
const changes = (items, sync, hasMore = false) => ({ items, sync, hasMore });
const badge = (unread, unseen, sync) => ({ type: "badge", unread, unseen, sync, reconnect: { baseMs: 1000, maxMs: 30000, jitter: "full" } });
const c = (unread, unseen) => ({ unread, unseen });

const vectors = [];
const vector = (name, description, steps) => vectors.push({ name, description, steps });

// ---------------------------------------------------------------------------------------------
vector("load-orders-newest-first", "A first page sets items, counts, sync and cursor; order is revision descending with ties broken by notificationId descending, whatever order entries arrive in; a merge moves an item to the top.", [
  { op: "page", body: page([item("c", rev(30)), item("b", rev(20)), item("a", rev(10))], { counts: c(3, 3), sync: pos(T0 + 28_000), nextCursor: cursor(rev(10), "a") }),
    expect: { itemKeys: ["c", "b", "a"], counts: c(3, 3), sync: pos(T0 + 28_000), nextCursor: cursor(rev(10), "a"), pending: 0,
      items: { a: { revision: rev(10), read: false, summary: "Ana liked your post" } } } },
  // "a" is merged (a second sender): the feed brings it with a newer revision.
  { op: "changes", body: changes([item("a", rev(40), { originsCount: 2 })], pos(T0 + 38_000)),
    expect: { itemKeys: ["a", "c", "b"], sync: pos(T0 + 38_000), counts: c(3, 3), items: { a: { originsCount: 2, summary: "Ana and Ben liked your post" } } } },
  // Two new items with the same revision: ordered by notificationId, descending, not by arrival.
  { op: "changes", body: changes([item("t1", rev(50, 7)), item("t2", rev(50, 7))], pos(T0 + 48_000)),
    expect: { itemKeys: ["t1", "t2", "a", "c", "b"] } }, // nid(t1) "rB9D…" > nid(t2) "n6mb…"
  { op: "changes", body: changes([item("t2", rev(50, 7)), item("t1", rev(50, 7))], pos(T0 + 48_000)),
    expect: { itemKeys: ["t1", "t2", "a", "c", "b"], sync: pos(T0 + 48_000) } },
]);

vector("no-duplicates", "An itemKey is stored once whatever repeats it: a repeated entry in one feed answer, an item both in a page and in the feed, a loadMore page repeating a held item.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000), nextCursor: cursor(rev(10), "a") }),
    expect: { itemKeys: ["b", "a"] } },
  { op: "changes", body: changes([item("a", rev(10), { read: true }), item("a", rev(10), { read: true }), item("b", rev(20))], pos(T0 + 25_000)),
    expect: { itemKeys: ["b", "a"], items: { a: { read: true } }, counts: c(2, 2) } },
  // loadMore: the next page holds "z" (older) and repeats "a" (e.g. its revision went down after a
  // retraction); a present item is replaced, sync and counts stay.
  { op: "page", append: true, body: page([item("a", rev(10), { read: true, seen: true }), item("z", rev(5))], { counts: c(9, 9), sync: pos(T0 + 60_000) }),
    expect: { itemKeys: ["b", "a", "z"], items: { a: { seen: true } }, nextCursor: null, sync: pos(T0 + 25_000), counts: c(2, 2) } },
]);

const idemBody = changes([item("x", rev(30)), item("a", rev(10), { read: true }), tomb("b")], pos(T0 + 35_000));
vector("changes-idempotent", "Applying the same feed answer twice, or a later answer that repeats entries already applied (the settle window), leaves the same state.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000) }) },
  { op: "changes", body: idemBody, expect: { itemKeys: ["x", "a"], items: { a: { read: true } }, sync: pos(T0 + 35_000) } },
  { op: "changes", body: idemBody, expect: { itemKeys: ["x", "a"], items: { a: { read: true } }, sync: pos(T0 + 35_000) } },
  // Held back: the next answer starts before the last one's end and repeats "a" and the tombstone.
  { op: "changes", body: changes([item("a", rev(10), { read: true }), tomb("b"), item("y", rev(36))], pos(T0 + 37_000)),
    expect: { itemKeys: ["y", "x", "a"], sync: pos(T0 + 37_000) } },
  // An answer whose position is older than the store's (a slow earlier request) never moves sync back.
  { op: "changes", body: changes([item("y", rev(36))], pos(T0 + 36_000)),
    expect: { itemKeys: ["y", "x", "a"], sync: pos(T0 + 37_000) } },
]);

vector("tombstones-and-archive", "A tombstone removes its item (nothing when absent); an archived item leaves the inbox and comes back when unarchived; a deleted item re-created by a new event comes back at the top.", [
  { op: "page", body: page([item("c", rev(30)), item("b", rev(20)), item("a", rev(10))], { counts: c(3, 3), sync: pos(T0 + 28_000) }) },
  { op: "changes", body: changes([tomb("b"), tomb("never-seen")], pos(T0 + 40_000, nid("b"))),
    expect: { itemKeys: ["c", "a"], sync: pos(T0 + 40_000, nid("b")), counts: c(3, 3) } },
  { op: "changes", body: changes([item("c", rev(30), { archived: true, read: true })], pos(T0 + 41_000)),
    expect: { itemKeys: ["a"] } },
  { op: "changes", body: changes([item("c", rev(30), { archived: false, read: true })], pos(T0 + 42_000)),
    expect: { itemKeys: ["c", "a"], items: { c: { archived: false, read: true } } } },
  { op: "changes", body: changes([item("b", rev(50))], pos(T0 + 51_000)),
    expect: { itemKeys: ["b", "c", "a"], items: { b: { read: false, revision: rev(50) } } } },
  // Trimmed and expired items come as tombstones too.
  { op: "changes", body: changes([tomb("a"), tomb("c")], pos(T0 + 52_000)),
    expect: { itemKeys: ["b"], sync: pos(T0 + 52_000) } },
]);

vector("badge-ordering", "A badge older than the store's position (its feed sync or the last counts' position) is dropped; an equal or newer one replaces the counts and does not move sync.", [
  { op: "page", body: page([item("a", rev(10))], { counts: c(1, 1), sync: pos(T0 + 20_000) }),
    expect: { counts: c(1, 1), sync: pos(T0 + 20_000) } },
  { op: "badge", message: badge(7, 7, pos(T0 + 19_999)), expect: { dropped: true, counts: c(1, 1) } },
  { op: "badge", message: badge(2, 2, pos(T0 + 20_000)), expect: { dropped: false, counts: c(2, 2), sync: pos(T0 + 20_000) } },
  { op: "badge", message: badge(3, 1, pos(T0 + 25_000)), expect: { dropped: false, counts: c(3, 1), sync: pos(T0 + 20_000) } },
  // Older than the last badge (but newer than sync): dropped.
  { op: "badge", message: badge(9, 9, pos(T0 + 24_000)), expect: { dropped: true, counts: c(3, 1) } },
  // The feed moves past the badges: a badge read before that is dropped…
  { op: "changes", body: changes([item("b", rev(29))], pos(T0 + 30_000, nid("b"))), expect: { sync: pos(T0 + 30_000, nid("b")), counts: c(3, 1) } },
  { op: "badge", message: badge(1, 1, pos(T0 + 30_000)), expect: { dropped: true, counts: c(3, 1) } },
  // …a later one is applied.
  { op: "badge", message: badge(4, 2, pos(T0 + 31_000)), expect: { dropped: false, counts: c(4, 2) } },
  // Not a badge: ignored.
  { op: "badge", message: { type: "hello", unread: 0, unseen: 0, sync: pos(T0 + 99_000) }, expect: { dropped: true, counts: c(4, 2) } },
  // The unread-count answer carries no position: it replaces the counts.
  { op: "counts", body: c(5, 0), expect: { counts: c(5, 0) } },
]);

vector("mark-rollback-is-exact", "An optimistic mark shows at once and rolls back exactly on failure, to the server's latest state (a merge pulled meanwhile stays), not to a snapshot.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000) }) },
  { op: "markOptimistic", id: "m1", itemKey: "a", flag: "read", value: true,
    expect: { items: { a: { read: true } }, counts: c(1, 2), pending: 1 } },
  { op: "markFailed", id: "m1", expect: { items: { a: { read: false } }, counts: c(2, 2), pending: 0 } },
  { op: "markOptimistic", id: "m2", itemKey: "a", flag: "read", value: true, expect: { counts: c(1, 2) } },
  // While the mark is in flight, the feed brings a merge of "a" (still unread on the server).
  { op: "changes", body: changes([item("a", rev(30), { originsCount: 2 })], pos(T0 + 31_000)),
    expect: { itemKeys: ["a", "b"], items: { a: { read: true, originsCount: 2 } }, counts: c(1, 2) } },
  { op: "markFailed", id: "m2", expect: { itemKeys: ["a", "b"], items: { a: { read: false, originsCount: 2 } }, counts: c(2, 2), pending: 0 } },
  // Archiving hides the item; a failure brings it back in its place.
  { op: "markOptimistic", id: "m3", itemKey: "b", flag: "archived", value: true, expect: { itemKeys: ["a"], counts: c(1, 1) } },
  { op: "markFailed", id: "m3", expect: { itemKeys: ["a", "b"], counts: c(2, 2) } },
  // A mark on an item the store does not hold changes nothing visible.
  { op: "markOptimistic", id: "m4", itemKey: "zz", flag: "read", value: true, expect: { itemKeys: ["a", "b"], counts: c(2, 2), pending: 1 } },
  { op: "markFailed", id: "m4", expect: { pending: 0 } },
]);

vector("mark-confirm-counts", "A confirmed mark enters the base; its count change is kept only if no newer counts arrived while it was in flight (those may already include it).", [
  { op: "page", body: page([item("c", rev(30)), item("b", rev(20)), item("a", rev(10))], { counts: c(3, 3), sync: pos(T0 + 28_000) }) },
  { op: "markOptimistic", id: "m1", itemKey: "a", flag: "seen", value: true, expect: { counts: c(3, 2), items: { a: { seen: true } } } },
  { op: "markConfirmed", id: "m1", expect: { counts: c(3, 2), items: { a: { seen: true } }, pending: 0 } },
  // The server's push after that mark, then a second mark whose badge overtakes its answer.
  { op: "badge", message: badge(3, 2, pos(T0 + 29_000)), expect: { counts: c(3, 2) } },
  { op: "markOptimistic", id: "m2", itemKey: "b", flag: "read", value: true, expect: { counts: c(2, 2) } },
  // The badge already counts m2: for a moment both show (documented, README "Counts").
  { op: "badge", message: badge(2, 2, pos(T0 + 30_000)), expect: { counts: c(1, 2) } },
  // On confirmation, the delta is not added again: counts are the badge's.
  { op: "markConfirmed", id: "m2", expect: { counts: c(2, 2), items: { b: { read: true } }, pending: 0 } },
  // Unread again (value false) counts back up.
  { op: "markOptimistic", id: "m3", itemKey: "b", flag: "read", value: false, expect: { counts: c(3, 2), items: { b: { read: false } } } },
  { op: "markConfirmed", id: "m3", expect: { counts: c(3, 2) } },
  // Two pending marks on the same item: the second is a no-op for counts.
  { op: "markOptimistic", id: "m4", itemKey: "c", flag: "read", value: true, expect: { counts: c(2, 2) } },
  { op: "markOptimistic", id: "m5", itemKey: "c", flag: "read", value: true, expect: { counts: c(2, 2), pending: 2 } },
  { op: "markFailed", id: "m4", expect: { counts: c(2, 2), items: { c: { read: true } }, pending: 1 } },
  { op: "markFailed", id: "m5", expect: { counts: c(3, 2), items: { c: { read: false } }, pending: 0 } },
]);

vector("bulk-actions", "Bulk read/seen/archiveRead/delete apply at once to the visible items (one category or all) and roll back exactly.", [
  { op: "page", body: page([
    item("d", rev(40), { categoryType: "system" }), item("c", rev(30), { read: true }), item("b", rev(20), { categoryType: "system", seen: true }), item("a", rev(10)),
  ], { counts: c(6, 5), sync: pos(T0 + 38_000) }), expect: { itemKeys: ["d", "c", "b", "a"], counts: c(6, 5) } },
  // Without a category the whole inbox is read: unread 0 (also items the store has not loaded).
  { op: "bulkOptimistic", id: "b1", action: "read", expect: { counts: c(0, 5), items: { a: { read: true }, d: { read: true } } } },
  { op: "bulkFailed", id: "b1", expect: { counts: c(6, 5), items: { a: { read: false }, c: { read: true }, d: { read: false } } } },
  // One category: only its loaded items, counted one by one.
  { op: "bulkOptimistic", id: "b2", action: "seen", category: "system", expect: { counts: c(6, 4), items: { d: { seen: true }, b: { seen: true }, a: { seen: false } } } },
  { op: "bulkOptimistic", id: "b3", action: "archiveRead", expect: { itemKeys: ["d", "b", "a"], counts: c(6, 3), pending: 2 } },
  { op: "bulkFailed", id: "b2", expect: { itemKeys: ["d", "b", "a"], counts: c(6, 4), items: { d: { seen: false } } } },
  { op: "bulkConfirmed", id: "b3", expect: { itemKeys: ["d", "b", "a"], counts: c(6, 4), pending: 0 } },
  { op: "bulkOptimistic", id: "b4", action: "delete", category: "system", expect: { itemKeys: ["a"], counts: c(4, 3) } },
  { op: "bulkOptimistic", id: "b5", action: "delete", expect: { itemKeys: [], counts: c(0, 0) } },
  { op: "bulkFailed", id: "b5", expect: { itemKeys: ["a"], counts: c(4, 3) } },
  { op: "bulkFailed", id: "b4", expect: { itemKeys: ["d", "b", "a"], counts: c(6, 4), pending: 0 } },
]);

vector("delete-optimistic", "Deleting an item hides it at once; a failure restores it, a confirmation removes it from the base (and the tombstone that follows is a no-op).", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10), { read: true })], { counts: c(1, 2), sync: pos(T0 + 18_000) }) },
  { op: "deleteOptimistic", id: "d1", itemKey: "b", expect: { itemKeys: ["a"], counts: c(0, 1) } },
  { op: "deleteFailed", id: "d1", expect: { itemKeys: ["b", "a"], counts: c(1, 2) } },
  { op: "deleteOptimistic", id: "d2", itemKey: "a", expect: { itemKeys: ["b"], counts: c(1, 1) } },
  { op: "deleteConfirmed", id: "d2", expect: { itemKeys: ["b"], counts: c(1, 1), pending: 0 } },
  { op: "changes", body: changes([tomb("a")], pos(T0 + 30_000)), expect: { itemKeys: ["b"], counts: c(1, 1) } },
]);

const persisted = {
  version: 1,
  items: [item("c", rev(30)), item("b", rev(20), { read: true }), item("a", rev(10))],
  counts: c(2, 3),
  countsSync: pos(T0 + 28_000),
  sync: pos(T0 + 28_000),
  nextCursor: cursor(rev(10), "a"),
  pending: [{ id: "q1", kind: "mark", itemKey: "c", flag: "read", value: true, idempotencyKey: "k-q1" }],
};
vector("cold-start-restore", "A persisted store shows at once (with its queued offline mark on top); the changes since its sync are applied; the queued mark is confirmed later; a round trip through the SDK's own persistence keeps everything.", [
  { op: "restore", state: persisted,
    expect: { itemKeys: ["c", "b", "a"], items: { c: { read: true } }, counts: c(1, 3), sync: pos(T0 + 28_000), nextCursor: cursor(rev(10), "a"), pending: 1 } },
  { op: "roundTrip", expect: { itemKeys: ["c", "b", "a"], items: { c: { read: true } }, counts: c(1, 3), sync: pos(T0 + 28_000), pending: 1 } },
  { op: "changes", body: changes([item("d", rev(40)), tomb("b")], pos(T0 + 45_000)),
    expect: { itemKeys: ["d", "c", "a"], sync: pos(T0 + 45_000), counts: c(1, 3) } },
  { op: "badge", message: badge(3, 3, pos(T0 + 46_000)), expect: { counts: c(2, 3) } },
  { op: "markConfirmed", id: "q1", expect: { items: { c: { read: true } }, counts: c(3, 3), pending: 0 } },
  { op: "roundTrip", expect: { itemKeys: ["d", "c", "a"], items: { c: { read: true } }, counts: c(3, 3), sync: pos(T0 + 45_000), pending: 0 } },
]);

vector("load-replaces-keeps-pending", "A new first page replaces the base (items not on it are gone) and keeps pending operations on top.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000), nextCursor: cursor(rev(10), "a") }) },
  { op: "markOptimistic", id: "m1", itemKey: "b", flag: "read", value: true, expect: { counts: c(1, 2) } },
  { op: "page", body: page([item("c", rev(30)), item("b", rev(20))], { counts: c(2, 2), sync: pos(T0 + 31_000) }),
    expect: { itemKeys: ["c", "b"], items: { b: { read: true } }, counts: c(1, 2), sync: pos(T0 + 31_000), nextCursor: null, pending: 1 } },
  // A page without counts (counts=false) keeps the counts. "b" is no longer held, so the pending
  // mark on it changes no count (README "Counts of the visible state").
  { op: "page", body: page([item("c", rev(30))], { sync: pos(T0 + 32_000) }), expect: { itemKeys: ["c"], counts: c(2, 2), pending: 1 } },
  { op: "markConfirmed", id: "m1", expect: { itemKeys: ["c"], counts: c(2, 2), pending: 0 } },
]);

vector("changes-pages", "A pull of several pages (hasMore) applies each page in order; an item changed twice across pages ends in its last state; a tombstone followed by a re-create (a new event after a delete) ends with the item.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000) }) },
  { op: "changes", body: changes([item("a", rev(10), { seen: true }), tomb("b")], pos(T0 + 21_000, nid("b")), true),
    expect: { itemKeys: ["a"], sync: pos(T0 + 21_000, nid("b")) } },
  { op: "changes", body: changes([item("a", rev(10), { seen: true, read: true }), item("b", rev(25))], pos(T0 + 26_000)),
    expect: { itemKeys: ["b", "a"], items: { a: { seen: true, read: true }, b: { revision: rev(25) } }, sync: pos(T0 + 26_000), counts: c(2, 2) } },
]);

vector("positions", "Positions compare by [ms, id]: the same ms with a larger id is newer; an undecodable position is never older (the badge is applied; the feed's answer is taken).", [
  { op: "page", body: page([item("a", rev(10))], { counts: c(1, 1), sync: pos(T0 + 20_000, "m") }) },
  { op: "badge", message: badge(5, 5, pos(T0 + 20_000, "a")), expect: { dropped: true, counts: c(1, 1) } },
  { op: "badge", message: badge(6, 6, pos(T0 + 20_000, "z")), expect: { dropped: false, counts: c(6, 6) } },
  { op: "badge", message: badge(7, 7, "%%%not-a-position"), expect: { dropped: false, counts: c(7, 7) } },
  { op: "changes", body: changes([], "%%%not-a-position"), expect: { sync: "%%%not-a-position" } },
  { op: "changes", body: changes([], pos(T0 + 30_000)), expect: { sync: pos(T0 + 30_000) } },
]);

vector("pending-across-counts", "Counts replaced while an operation is pending (a badge, or the unread-count answer) keep the operation's effect on top until it is confirmed, then the server's counts stand; a failed operation leaves the new counts as they are.", [
  { op: "page", body: page([item("b", rev(20)), item("a", rev(10))], { counts: c(2, 2), sync: pos(T0 + 18_000) }) },
  { op: "bulkOptimistic", id: "b1", action: "seen", expect: { counts: c(2, 0), items: { a: { seen: true }, b: { seen: true } } } },
  { op: "counts", body: c(5, 5), expect: { counts: c(5, 0) } },
  { op: "bulkConfirmed", id: "b1", expect: { counts: c(5, 5), items: { a: { seen: true }, b: { seen: true } }, pending: 0 } },
  { op: "markOptimistic", id: "m1", itemKey: "a", flag: "read", value: true, expect: { counts: c(4, 5) } },
  { op: "badge", message: badge(3, 1, pos(T0 + 19_000)), expect: { counts: c(2, 1) } },
  { op: "markFailed", id: "m1", expect: { counts: c(3, 1), items: { a: { read: false } }, pending: 0 } },
]);

vector("loaded-window", "While more pages remain, a feed entry for an item the store does not hold and that sorts below the last loaded item is skipped (it comes with its page); held items are always updated; once every page is loaded nothing is skipped.", [
  { op: "page", body: page([item("c", rev(30)), item("b", rev(20))], { counts: c(4, 4), sync: pos(T0 + 28_000), nextCursor: cursor(rev(20), "b") }),
    expect: { itemKeys: ["c", "b"], nextCursor: cursor(rev(20), "b") } },
  // x is older than b (skipped), y newer (shown), b is held (updated), a tombstone of an unheld item is a no-op.
  { op: "changes", body: changes([item("x", rev(5), { read: true }), item("y", rev(25)), item("b", rev(20), { read: true }), tomb("a")], pos(T0 + 31_000)),
    expect: { itemKeys: ["c", "y", "b"], items: { b: { read: true } }, sync: pos(T0 + 31_000) } },
  // Same revision as the cursor: below it only with a smaller notificationId.
  // nid(t1) "rB9D…" > nid(b) "c0tz…" (kept, above b); nid(t4) "ZUhr…" < "c0tz…" (skipped).
  { op: "changes", body: changes([item("t1", rev(20)), item("t4", rev(20))], pos(T0 + 32_000)),
    expect: { itemKeys: ["c", "y", "t1", "b"] } },
  { op: "page", append: true, body: page([item("x", rev(5), { read: true })], { sync: pos(T0 + 33_000) }),
    expect: { itemKeys: ["c", "y", "t1", "b", "x"], nextCursor: null } },
  { op: "changes", body: changes([item("z", rev(1))], pos(T0 + 34_000)),
    expect: { itemKeys: ["c", "y", "t1", "b", "x", "z"] } },
]);

// ---------------------------------------------------------------------------------------------
const files = Object.fromEntries(vectors.map((v) => [`${v.name}.json`, `${JSON.stringify(v, null, 2)}\n`]));
if (process.argv.includes("--check")) {
  const have = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();
  const want = Object.keys(files).sort();
  const stale = want.filter((f) => !have.includes(f) || readFileSync(path.join(DIR, f), "utf8") !== files[f]);
  const extra = have.filter((f) => !want.includes(f));
  if (stale.length || extra.length) {
    console.error(`vectors differ from make-vectors.mjs: ${[...stale, ...extra].join(", ")}`);
    process.exit(1);
  }
} else {
  mkdirSync(DIR, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(DIR, f), text);
  console.log(`wrote ${Object.keys(files).length} vectors to ${DIR}`);
}
