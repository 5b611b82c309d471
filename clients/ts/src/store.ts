// The inbox store: one per user, keyed by `itemKey`, newest first, with counts and the
// change-feed position. Pure (no I/O, no clock): the client feeds it server answers and its own
// optimistic operations. The rules are clients/conformance/README.md, which every SDK of this
// project passes (clients/ts/test/conformance.test.ts runs each vector file).
import { decodePosition, isOlder, newerPosition } from "./position.ts";
import type { BadgeMessage, ChangesBody, Counts, Notification, PageBody } from "./types.ts";

/** A flag a user can set on one item. */
export type Flag = "read" | "seen" | "archived";
/** A bulk action over the inbox (or one category). */
export type BulkAction = "read" | "seen" | "archiveRead" | "delete";

/** An optimistic operation, as queued and persisted (the conformance vectors' shape). */
export type Operation =
  | { id: string; kind: "mark"; itemKey: string; flag: Flag; value: boolean; idempotencyKey: string }
  | { id: string; kind: "bulk"; action: BulkAction; category?: string; idempotencyKey: string }
  | { id: string; kind: "delete"; itemKey: string; idempotencyKey: string };

/** What `Persistence` keeps: language-neutral (README "Persistence"). */
export interface PersistedState {
  version: 1;
  items: Notification[];
  counts: Counts;
  countsSync: string | null;
  sync: string | null;
  nextCursor: string | null;
  pending: Operation[];
}

/** What the app renders: immutable; a new object after every change. */
export interface InboxSnapshot {
  /** The inbox, newest first (pending operations applied). */
  readonly items: readonly Notification[];
  readonly counts: Readonly<Counts>;
  /** The change-feed position the items are current to. */
  readonly sync: string | null;
  /** Cursor of the next older page, `null` at the end (or before the first load). */
  readonly nextCursor: string | null;
  /** Optimistic operations not yet confirmed (queued offline ones included). */
  readonly pending: readonly Operation[];
}

interface Pending {
  op: Operation;
  /** The counts generation when the operation was made. */
  generation: number;
}

/** Newest first: `revision` descending, ties by `notificationId` descending (the server's order). */
export function compareItems(a: Notification, b: Notification): number {
  if (a.revision !== b.revision) return b.revision - a.revision;
  return a.notificationId < b.notificationId ? 1 : a.notificationId > b.notificationId ? -1 : 0;
}

const contributes = (i: Notification | null | undefined, field: "read" | "seen"): number =>
  i && !i.archived && !i[field] ? 1 : 0;

/** The default view: the inbox. One function for every store, so V8's inlined call stays valid. */
const inInbox = (i: Notification): boolean => !i.archived;

const isTombstone = (e: unknown): e is { itemKey: string; deleted: true } =>
  (e as { deleted?: unknown }).deleted === true;

/** A view on items for applying an operation: a lookup and the current list. */
interface Items {
  get(key: string): Notification | null | undefined;
  all(): Iterable<Notification>;
}

/**
 * Applies `op` to `items`, returning the changed items (`null` = gone from this view) and the
 * counts after it (README "Counts of the visible state"). Counts follow the item's flags, not
 * whether this view shows it.
 */
function applyOperation(op: Operation, items: Items, counts: Counts, keep: (i: Notification) => boolean): { changed: Map<string, Notification | null>; counts: Counts } {
  const changed = new Map<string, Notification | null>();
  let { unread, unseen } = counts;
  const change = (before: Notification, after: Notification | null) => {
    changed.set(before.itemKey, after && keep(after) ? after : null);
    unread += contributes(after, "read") - contributes(before, "read");
    unseen += contributes(after, "seen") - contributes(before, "seen");
  };
  if (op.kind === "mark") {
    const cur = items.get(op.itemKey);
    if (cur && cur[op.flag] !== op.value) change(cur, { ...cur, [op.flag]: op.value });
  } else if (op.kind === "delete") {
    const cur = items.get(op.itemKey);
    if (cur) change(cur, null);
  } else {
    for (const cur of items.all()) {
      if (op.category !== undefined && cur.categoryType !== op.category) continue;
      if (op.action === "read" && !cur.read) change(cur, { ...cur, read: true });
      else if (op.action === "seen" && !cur.seen) change(cur, { ...cur, seen: true });
      else if (op.action === "archiveRead" && cur.read && !cur.archived) change(cur, { ...cur, archived: true });
      else if (op.action === "delete") change(cur, null);
    }
    if (op.category === undefined) {
      // The whole inbox, items the store has not loaded included.
      if (op.action === "read" || op.action === "delete") unread = 0;
      if (op.action === "seen" || op.action === "delete") unseen = 0;
    }
  }
  return { changed, counts: { unread: Math.max(0, unread), unseen: Math.max(0, unseen) } };
}

/** The first index of `list` (sorted by `compareItems`) whose item does not sort before `item`. */
function lowerBound(list: readonly Notification[], item: Notification): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareItems(list[mid], item) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class InboxStore {
  #base = new Map<string, Notification>();
  /** `#base`'s values in order; brought up to date lazily (see `#ordered`). */
  #order: Notification[] = [];
  /** Items (objects) in `#order` that were replaced or removed since it was brought up to date. */
  #leaving: Notification[] = [];
  /** Items (objects) upserted since then, not in `#order` yet. */
  #arriving = new Set<Notification>();
  #counts: Counts = { unread: 0, unseen: 0 };
  #generation = 0;
  #countsSync: string | null = null;
  #sync: string | null = null;
  #nextCursor: string | null = null;
  #pending: Pending[] = [];
  #snapshot: InboxSnapshot | null = null;
  #listeners = new Set<() => void>();
  readonly #keep: (i: Notification) => boolean;

  /**
   * `keep` chooses the items this store holds (default: the inbox, `!archived`; e.g. one
   * category, or the archive with `(i) => i.archived`). Items it rejects leave like tombstones.
   */
  constructor(state?: PersistedState | null, keep: (i: Notification) => boolean = inInbox) {
    this.#keep = keep;
    if (state) this.restore(state);
  }

  /** Calls `listener` after every change; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The current state (the same object until something changes: fit for `useSyncExternalStore`). */
  getSnapshot = (): InboxSnapshot => {
    if (!this.#snapshot) this.#snapshot = this.#visible();
    return this.#snapshot;
  };

  get sync(): string | null { return this.#sync; }
  get nextCursor(): string | null { return this.#nextCursor; }
  get countsSync(): string | null { return this.#countsSync; }
  /** Pending operations, oldest first. */
  get pending(): Operation[] { return this.#pending.map((p) => p.op); }

  // --- server answers ------------------------------------------------------------------------

  /** A list page: the first (`append` false: replaces the items) or a later one (`loadMore`). */
  applyPage(body: PageBody, append = false): void {
    if (!append) {
      this.#clear();
      this.#sync = body.sync;
      if (body.counts) this.#setCounts(body.counts, body.sync);
    }
    for (const item of body.items) this.#upsert(item);
    this.#nextCursor = body.nextCursor;
    this.#changed();
  }

  /**
   * A change-feed answer: upserts, tombstones, archived items leave, items beyond the loaded
   * window wait for their page; `sync` never goes back.
   */
  applyChanges(body: ChangesBody): void {
    // The loaded window ends at the list cursor: an item the store does not hold and that sorts
    // below it is skipped (it comes with a later page, in its place), so the list never jumps.
    const floor = decodePosition(this.#nextCursor);
    for (const e of body.items) {
      if (isTombstone(e)) this.#remove(e.itemKey);
      else if (floor && !this.#base.has(e.itemKey) && (e.revision < floor.ms || (e.revision === floor.ms && e.notificationId < floor.id))) continue;
      else this.#upsert(e);
    }
    this.#sync = newerPosition(this.#sync, body.sync);
    this.#changed();
  }

  /** A WebSocket message; returns false when it is not applied (not a badge, or stale). */
  applyBadge(message: unknown): boolean {
    const m = message as Partial<BadgeMessage> | null;
    if (!m || m.type !== "badge" || typeof m.unread !== "number" || typeof m.unseen !== "number") return false;
    const sync = typeof m.sync === "string" ? m.sync : null;
    if (isOlder(sync, newerPosition(this.#sync, this.#countsSync))) return false;
    this.#setCounts({ unread: m.unread, unseen: m.unseen }, sync);
    this.#changed();
    return true;
  }

  /** The unread-count answer (no position: it replaces the counts). */
  applyCounts(body: Counts): void {
    this.#setCounts(body, this.#countsSync);
    this.#changed();
  }

  // --- optimistic operations -----------------------------------------------------------------

  /** Shows `op` at once; it stays on top of every server answer until confirmed or failed. */
  addPending(op: Operation): void {
    this.#pending.push({ op, generation: this.#generation });
    this.#changed();
  }

  /** The server applied `id`: it enters the base (and the counts, unless newer ones came since). */
  confirm(id: string): void {
    const i = this.#pending.findIndex((p) => p.op.id === id);
    if (i < 0) return;
    const [p] = this.#pending.splice(i, 1);
    const base = this.#base;
    const r = applyOperation(p.op, { get: (k) => base.get(k), all: () => base.values() }, this.#counts, this.#keep);
    for (const [k, v] of r.changed) {
      if (v) this.#upsert(v); else this.#remove(k);
    }
    if (p.generation === this.#generation) this.#counts = r.counts;
    this.#changed();
  }

  /** `id` failed for good: it is dropped, which is an exact rollback. */
  fail(id: string): void {
    const i = this.#pending.findIndex((p) => p.op.id === id);
    if (i < 0) return;
    this.#pending.splice(i, 1);
    this.#changed();
  }

  // --- persistence ---------------------------------------------------------------------------

  /** The state to persist (base items, not the optimistic view). */
  persist(): PersistedState {
    return {
      version: 1,
      items: this.#ordered().slice(),
      counts: { ...this.#counts },
      countsSync: this.#countsSync,
      sync: this.#sync,
      nextCursor: this.#nextCursor,
      pending: this.pending,
    };
  }

  /** Replaces everything with a persisted state (a cold start). */
  restore(state: PersistedState): void {
    if (state.version !== 1) throw new TypeError(`unknown persisted inbox version ${String(state.version)}`);
    this.#clear();
    for (const item of state.items) this.#upsert(item);
    this.#counts = { ...state.counts };
    this.#generation = 0;
    this.#countsSync = state.countsSync;
    this.#sync = state.sync;
    this.#nextCursor = state.nextCursor;
    this.#pending = state.pending.map((op) => ({ op, generation: 0 }));
    this.#changed();
  }

  // --- internals -----------------------------------------------------------------------------

  #setCounts(c: Counts, sync: string | null): void {
    this.#counts = { unread: c.unread, unseen: c.unseen };
    this.#countsSync = sync;
    this.#generation++;
  }

  #upsert(item: Notification): void {
    // Only this store's view is kept (the inbox by default): another item leaves like a tombstone.
    if (!this.#keep(item)) this.#remove(item.itemKey);
    else {
      this.#leave(this.#base.get(item.itemKey));
      this.#base.set(item.itemKey, item);
      this.#arriving.add(item);
    }
  }

  #remove(key: string): void {
    this.#leave(this.#base.get(key));
    this.#base.delete(key);
  }

  /** `old` leaves the ordered list: it is either still arriving (never placed) or in `#order`. */
  #leave(old: Notification | undefined): void {
    if (old && !this.#arriving.delete(old)) this.#leaving.push(old);
  }

  #clear(): void {
    this.#base.clear();
    this.#order = [];
    this.#leaving = [];
    this.#arriving.clear();
  }

  /**
   * The base items in order, brought up to date in O(n + k log n) for k changed items, with no
   * per-item hashing: each leaving item is found by binary search (the order is total: revision,
   * then the unique notificationId), the arriving ones are sorted and merged in one copying pass.
   * A new array each time, so a snapshot's list never changes under the app.
   */
  #ordered(): Notification[] {
    const arriving = this.#arriving;
    const leaving = this.#leaving;
    if (arriving.size === 0 && leaving.length === 0) return this.#order;
    this.#arriving = new Set();
    this.#leaving = [];
    const order = this.#order;
    if ((arriving.size + leaving.length) * 4 > this.#base.size) return this.#sortAll();
    const skip: number[] = [];
    for (const old of leaving) {
      const at = lowerBound(order, old);
      if (order[at] !== old) {
        // Not where its order puts it (cannot happen unless an item was changed in place): sort.
        return this.#sortAll();
      }
      skip.push(at);
    }
    skip.sort((a, b) => a - b);
    const added = [...arriving].sort(compareItems);
    // Where each arriving item goes in the old list (binary search): the copy below compares nothing.
    const at = added.map((i) => lowerBound(order, i));
    // Sized once: growing by push would allocate about three times the final array.
    const merged: Notification[] = new Array(order.length - skip.length + added.length);
    let n = 0;
    let j = 0;
    let s = 0;
    for (let x = 0; x < order.length; x++) {
      while (j < added.length && at[j] === x) merged[n++] = added[j++];
      if (s < skip.length && skip[s] === x) s++;
      else merged[n++] = order[x];
    }
    while (j < added.length) merged[n++] = added[j++];
    this.#order = merged;
    return merged;
  }

  /**
   * All base items sorted afresh, into an array made like the merge's (`new Array(n)`): every
   * `#order` then has the same V8 elements kind, so the code that reads it is not deoptimised
   * when the first page's sorted list is followed by merged ones (measured: ~1 ms a page for
   * the next dozen pages while it is compiled again).
   */
  #sortAll(): Notification[] {
    const all: Notification[] = new Array(this.#base.size);
    let n = 0;
    for (const item of this.#base.values()) all[n++] = item;
    this.#order = all.sort(compareItems);
    return this.#order;
  }

  #changed(): void {
    this.#snapshot = null;
    for (const l of [...this.#listeners]) l();
  }

  #visible(): InboxSnapshot {
    const order = this.#ordered();
    let counts: Counts = { ...this.#counts };
    let items: readonly Notification[] = order;
    if (this.#pending.length > 0) {
      const over = new Map<string, Notification | null>();
      const view: Items = {
        get: (k) => (over.has(k) ? over.get(k) : this.#base.get(k)),
        *all() {
          for (const i of order) {
            const v = over.has(i.itemKey) ? over.get(i.itemKey) : i;
            if (v) yield v;
          }
        },
      };
      for (const p of this.#pending) {
        const r = applyOperation(p.op, view, counts, this.#keep);
        for (const [k, v] of r.changed) over.set(k, v);
        counts = r.counts;
      }
      items = over.size === 0 ? order : [...view.all()];
    }
    return {
      // Frozen, but never `#order` itself: V8 reads a frozen array's elements several times
      // slower, and the next change copies `#order` (a copy costs less than that).
      items: Object.freeze(items === order ? order.slice() : items) as readonly Notification[],
      counts: Object.freeze(counts),
      sync: this.#sync,
      nextCursor: this.#nextCursor,
      pending: Object.freeze(this.pending),
    };
  }
}
