// The lane (clients/conformance/README.md "The lane"): the one worker that sends every request
// reading or changing the store. At most one request in flight; triggers set flags and join the
// running lane. Queued operations go first, strictly in creation order, one at a time; then the
// page loads and pulls. A pull never overlaps an operation's request, so a feed page read before
// an operation was confirmed can never be applied after it.
import { InboxError } from "./http.ts";
import type { Http } from "./http.ts";
import type { InboxStore, Operation } from "./store.ts";
import type { ChangesBody, Counts, PageBody } from "./types.ts";

/** Time and timers; the default is the system's, tests pass a fake one. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/**
 * What mark/bulk/remove resolve to (never a rejection for these): `applied` (the server
 * confirmed it), `queued` (kept, shown and sent later; `error` is what stopped it, e.g.
 * `network`), `rejected` (refused and rolled back; `error` is the server's answer).
 */
export type WriteResult =
  | { outcome: "applied" }
  | { outcome: "queued"; error: InboxError }
  | { outcome: "rejected"; error: InboxError };

interface Waiter<T> {
  resolve: (v: T) => void;
  reject: (e: InboxError) => void;
}

export interface LaneOptions {
  store: InboxStore;
  clock: Clock;
  paths: { list: () => string; counts: string };
  onRollback: (op: Operation, e: InboxError) => void;
  /** The lane stopped on this error (not called for `stop()`). */
  onStop: (e: InboxError) => void;
}

const asError = (e: unknown): InboxError => (e instanceof InboxError ? e : new InboxError(0, "network", String((e as Error)?.message ?? e), null, null, { cause: e }));

export class Lane {
  http!: Http;
  running = false;
  /** A pull is wanted (a trigger asked for one). */
  pullWanted = false;
  /** The next pull loads the first page instead of reading the feed. */
  reloadWanted = false;
  lastError: InboxError | null = null;
  readonly #o: LaneOptions;
  #run: Promise<InboxError | null> | null = null;
  #results = new Map<string, (r: WriteResult) => void>();
  #pullWaiters: Array<Waiter<number>> = [];
  #tasks: Array<{ query: string } & Waiter<boolean>> = [];
  #resumeTimer: unknown = null;
  #sleeps = new Set<(e: InboxError) => void>();

  constructor(o: LaneOptions) {
    this.#o = o;
  }

  /**
   * Asks for work: starts the lane, or joins the one running. Resolves when that run ends: to
   * `null`, or to the error that stopped it.
   */
  kick(): Promise<InboxError | null> {
    if (!this.running) return Promise.resolve(null);
    if (this.#resumeTimer !== null) {
      this.#o.clock.clearTimeout(this.#resumeTimer);
      this.#resumeTimer = null;
    }
    this.#run ??= this.#loop();
    return this.#run;
  }

  /** Queues `op` (shown at once) and resolves to its result. */
  enqueue(op: Operation): Promise<WriteResult> {
    this.#o.store.addPending(op);
    return new Promise((resolve) => {
      if (!this.running) return resolve({ outcome: "queued", error: new InboxError(0, "stopped", "the client is not started") });
      this.#results.set(op.id, resolve);
      void this.kick();
    });
  }

  /** The next pull (or first-page load when `reload`): resolves to the entries it applied. */
  pull(reload: boolean): Promise<number> {
    if (!this.running) return Promise.reject(new InboxError(0, "stopped", "the client is not started"));
    return new Promise((resolve, reject) => {
      this.#pullWaiters.push({ resolve, reject });
      this.pullWanted = true;
      if (reload) this.reloadWanted = true;
      void this.kick();
    });
  }

  /** The next older page, after the queued operations. */
  loadMore(query: string): Promise<boolean> {
    if (this.#o.store.nextCursor === null) return Promise.resolve(false);
    if (!this.running) return Promise.reject(new InboxError(0, "stopped", "the client is not started"));
    return new Promise((resolve, reject) => {
      this.#tasks.push({ query, resolve, reject });
      void this.kick();
    });
  }

  /** A wait of the lane (retry backoff): on the clock, cut short by `stop()`. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const cancel = (e: InboxError) => {
        this.#o.clock.clearTimeout(handle);
        reject(e);
      };
      const handle = this.#o.clock.setTimeout(() => {
        this.#sleeps.delete(cancel);
        resolve();
      }, ms);
      this.#sleeps.add(cancel);
    });
  }

  /** Stops: waits cut short, the running request finishes, unsettled operations resolve `queued`. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.#resumeTimer !== null) this.#o.clock.clearTimeout(this.#resumeTimer);
    this.#resumeTimer = null;
    const stopped = new InboxError(0, "stopped", "the client was stopped");
    for (const cancel of [...this.#sleeps]) cancel(stopped);
    this.#sleeps.clear();
    await this.#run;
    this.#settleWaiters(stopped);
  }

  async #loop(): Promise<InboxError | null> {
    // Not before `kick` has stored this run: an empty run must not end before it begins.
    await null;
    const store = this.#o.store;
    try {
      for (;;) {
        if (!this.running) break;
        const op = store.pending[0];
        if (op) {
          await this.#send(op);
          continue;
        }
        const task = this.#tasks.shift();
        if (task) {
          try {
            task.resolve(await this.#loadMore(task.query));
          } catch (e) {
            task.reject(asError(e));
            throw e;
          }
          continue;
        }
        if (this.pullWanted || this.reloadWanted) {
          await this.#pull();
          continue;
        }
        break;
      }
      this.#run = null;
      return null;
    } catch (e) {
      this.#run = null;
      const err = asError(e);
      if (!this.running) return err;
      this.lastError = err;
      this.#settleWaiters(err);
      // A Retry-After longer than we may wait: resume by ourselves once it has passed.
      if (err.retryAfterMs !== null && err.retryAfterMs > this.http.retry.maxWaitMs) {
        this.#resumeTimer = this.#o.clock.setTimeout(() => {
          this.#resumeTimer = null;
          void this.kick();
        }, err.retryAfterMs);
      }
      this.#o.onStop(err);
      return err;
    }
  }

  /** The lane stopped: queued operations resolve `queued`, pulls and page loads reject. */
  #settleWaiters(err: InboxError): void {
    for (const [id, resolve] of this.#results) resolve({ outcome: "queued", error: err });
    this.#results.clear();
    for (const w of this.#pullWaiters.splice(0)) w.reject(err);
    for (const t of this.#tasks.splice(0)) t.reject(err);
  }

  /** Every lane request: an answer (even a refusal) clears `lastError`. */
  async #request<T>(method: string, path: string, o: { body?: unknown; idempotencyKey?: string } = {}): Promise<T> {
    try {
      const r = await this.http.request<T>(method, path, o);
      this.lastError = null;
      return r;
    } catch (e) {
      const err = asError(e);
      if (!err.retryable && err.status !== 401 && err.status !== 0) this.lastError = null;
      throw err;
    }
  }

  /** One operation, by the answer classes of README "Operations". */
  async #send(op: Operation): Promise<void> {
    const store = this.#o.store;
    try {
      if (op.kind === "mark") {
        await this.#request("POST", "/v1/notifications/mark", { body: { itemKey: op.itemKey, flag: op.flag, value: op.value }, idempotencyKey: op.idempotencyKey });
      } else if (op.kind === "bulk") {
        const body = op.category === undefined ? { action: op.action } : { action: op.action, category: op.category };
        await this.#request("POST", "/v1/notifications/bulk", { body, idempotencyKey: op.idempotencyKey });
      } else {
        await this.#request("DELETE", `/v1/notifications/items/${encodeURIComponent(op.itemKey)}`, { idempotencyKey: op.idempotencyKey });
      }
    } catch (e) {
      const err = asError(e);
      // Transient, auth (a 401 after the refresh) or stopped: the operation stays queued.
      if (err.retryable || err.status === 401 || err.status === 0) throw err;
      if (op.kind === "delete" && err.status === 404 && err.code === "item_not_found") {
        // Gone already: the intent holds. Confirm, then pull what removed it.
        store.confirm(op.id);
        this.#result(op.id, { outcome: "applied" });
      } else {
        store.fail(op.id);
        this.#result(op.id, { outcome: "rejected", error: err });
        this.#o.onRollback(op, err);
      }
      this.pullWanted = true;
      return;
    }
    store.confirm(op.id);
    this.#result(op.id, { outcome: "applied" });
  }

  #result(id: string, r: WriteResult): void {
    const resolve = this.#results.get(id);
    this.#results.delete(id);
    resolve?.(r);
  }

  /** The feed until `hasMore` is false, then the counts when entries came; or the first page. */
  async #pull(): Promise<void> {
    const store = this.#o.store;
    const waiters = this.#pullWaiters.splice(0);
    const reload = this.reloadWanted || store.sync === null;
    this.pullWanted = false;
    this.reloadWanted = false;
    let entries = 0;
    try {
      if (reload) entries = await this.#load();
      else {
        for (;;) {
          let body: ChangesBody;
          try {
            body = await this.#request<ChangesBody>("GET", `/v1/notifications/changes?since=${encodeURIComponent(store.sync ?? "")}`);
          } catch (e) {
            // A position the server no longer reads (e.g. persisted by an older version): start over.
            if (e instanceof InboxError && e.code === "invalid_cursor") {
              entries += await this.#load();
              break;
            }
            throw e;
          }
          store.applyChanges(body);
          entries += body.items.length;
          if (!body.hasMore) {
            // The feed carries no counts: read them, so they equal the server's after any change.
            if (entries > 0) store.applyCounts(await this.#request<Counts>("GET", this.#o.paths.counts));
            break;
          }
        }
      }
    } catch (e) {
      // Still wanted: the next trigger pulls again.
      this.pullWanted = true;
      if (reload) this.reloadWanted = true;
      for (const w of waiters) w.reject(asError(e));
      throw e;
    }
    for (const w of waiters) w.resolve(entries);
  }

  async #load(): Promise<number> {
    const page = await this.#request<PageBody>("GET", `/v1/notifications?${this.#o.paths.list()}`);
    this.#o.store.applyPage(page);
    return page.items.length;
  }

  async #loadMore(query: string): Promise<boolean> {
    const cursor = this.#o.store.nextCursor;
    if (cursor === null) return false;
    const page = await this.#request<PageBody>("GET", `/v1/notifications?${query}&counts=false&cursor=${encodeURIComponent(cursor)}`);
    this.#o.store.applyPage(page, true);
    return page.nextCursor !== null;
  }
}
