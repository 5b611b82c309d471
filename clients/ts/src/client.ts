// The inbox client: one user's store kept in sync with the worker. Loads and pages the list,
// pulls the change feed, keeps a live badge over the WebSocket (fresh token on every connect,
// full-jitter reconnect with the server's hints, a pull on every reconnect and when the page
// becomes visible, polling while the stream is down), applies marks and bulk actions at once
// and rolls them back exactly on failure, queues them while offline, and persists the store.
import { Http, InboxError, newKey } from "./http.ts";
import type { HttpOptions, RetryPolicy } from "./http.ts";
import { MemoryPersistence } from "./persistence.ts";
import type { Persistence } from "./persistence.ts";
import { decodePosition, isOlder } from "./position.ts";
import { InboxStore } from "./store.ts";
import type { BulkAction, Flag, InboxSnapshot, Operation } from "./store.ts";
import type { BadgeMessage, ChangesBody, Counts, PageBody } from "./types.ts";

/** Where the live badge stands. */
export type LiveStatus = "stopped" | "connecting" | "live" | "polling";

/** The constructor of a WebSocket (browsers', React Native's and Node ≥ 22's global fits). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "open" | "close" | "error" | "message", listener: (ev: any) => void): void;
}
export type WebSocketFactory = new (url: string, protocols: string[]) => WebSocketLike;

export interface InboxClientOptions {
  /** The worker's origin, e.g. `https://api.example.com`. */
  baseUrl: string;
  /** Returns the user's JWT. Called on every stream connect, and again after a 401 (`refresh`). */
  getToken: (opts: { refresh: boolean }) => string | Promise<string>;
  /** The key the store is persisted under (default: the token's `sub`). */
  user?: string;
  /** Default: memory (nothing survives a restart). See `/indexeddb` and `/async-storage`. */
  persistence?: Persistence;
  /** Which items this client holds: the inbox (default), one category of it, or the archive. */
  view?: { category?: string; archived?: boolean };
  /** Items per list page (1–100, default 20). */
  pageSize?: number;
  /** Open the live badge stream (default true); without it the client polls. */
  live?: boolean;
  /**
   * A persisted inbox older than this is reloaded (first page) instead of pulled: the server
   * keeps tombstones 7 days, so an older position could miss deletions (default 6 days).
   */
  maxPersistedAgeMs?: number;
  /** How often to pull while the stream is down (default 30 s). */
  pollMs?: number;
  fetch?: typeof fetch;
  WebSocket?: WebSocketFactory;
  retry?: Partial<RetryPolicy>;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  sleep?: HttpOptions["sleep"];
  /** Listen to `document` visibility and `online` events (default: when they exist). */
  watchVisibility?: boolean;
}

/** Events besides the store's own `subscribe`. */
export interface InboxEvents {
  /** A background failure (poll, pull after a badge, reconnect, a rolled-back operation). */
  error: (e: InboxError, context: string) => void;
  /** The live badge's status changed. */
  status: (s: LiveStatus) => void;
  /** A badge was applied (after the store's stale check). */
  badge: (m: BadgeMessage) => void;
  /** An optimistic operation was rolled back. */
  rollback: (op: Operation, e: InboxError) => void;
}

const PROTOCOL = "inbox.v1";
const OPEN = 1;

function subOf(token: string): string | null {
  try {
    const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const p = JSON.parse(atob(part)) as { sub?: unknown };
    return typeof p.sub === "string" ? p.sub : null;
  } catch {
    return null;
  }
}

export class InboxClient {
  readonly store: InboxStore;
  readonly http: Http;
  readonly #o: InboxClientOptions;
  readonly #persistence: Persistence;
  #user: string | null;
  #status: LiveStatus = "stopped";
  #running = false;
  #ws: WebSocketLike | null = null;
  #attempt = 0;
  #reconnect = { baseMs: 1_000, maxMs: 30_000 };
  #reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  #pollTimer: ReturnType<typeof setTimeout> | null = null;
  #pulling: Promise<number> | null = null;
  #pullAgain = false;
  #sending = new Set<string>();
  #saving: Promise<void> = Promise.resolve();
  #saveQueued = false;
  #listeners: { [K in keyof InboxEvents]: Set<InboxEvents[K]> } = { error: new Set(), status: new Set(), badge: new Set(), rollback: new Set() };
  #unwatch: (() => void) | null = null;

  constructor(o: InboxClientOptions) {
    this.#o = o;
    const { category, archived = false } = o.view ?? {};
    this.store = new InboxStore(null, (i) => i.archived === archived && (category === undefined || i.categoryType === category));
    this.http = new Http({ baseUrl: o.baseUrl, getToken: o.getToken, fetch: o.fetch, retry: o.retry, sleep: o.sleep, random: o.random });
    this.#persistence = o.persistence ?? new MemoryPersistence();
    this.#user = o.user ?? null;
    this.store.subscribe(() => this.#saveSoon());
  }

  /** The store's current state (see `InboxStore.getSnapshot`). */
  get snapshot(): InboxSnapshot { return this.store.getSnapshot(); }
  get status(): LiveStatus { return this.#status; }

  on<K extends keyof InboxEvents>(event: K, fn: InboxEvents[K]): () => void {
    this.#listeners[event].add(fn);
    return () => this.#listeners[event].delete(fn);
  }

  /**
   * Shows the persisted inbox at once (if any), then brings it up to date: only the changes
   * since its `sync` when one was persisted, else the first page. Sends queued operations and
   * opens the live badge (or starts polling). With a persisted inbox, a failed pull (offline) is
   * reported as an `error` event, not thrown; without one, a failed first load is thrown.
   */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      const saved = await this.#persistence.load(await this.#userKey());
      if (saved && saved.sync !== null) {
        this.store.restore(saved);
        const at = decodePosition(saved.sync);
        const stale = at ? Date.now() - at.ms > (this.#o.maxPersistedAgeMs ?? 6 * 86_400_000) : false;
        // Offline is fine here: the persisted inbox is on screen; polling/reconnect catch up.
        await (stale ? this.load() : this.pull()).catch((e) => this.#emit("error", e as InboxError, "catch-up on start"));
      } else {
        await this.load();
      }
    } catch (e) {
      this.#running = false;
      throw e;
    }
    void this.flush();
    this.#watch();
    if (this.#o.live === false) this.#setStatus("polling"), this.#schedulePoll();
    else void this.#connect();
  }

  /** Closes the stream and stops polling (the store and its persisted copy stay). */
  async stop(): Promise<void> {
    this.#running = false;
    this.#unwatch?.();
    this.#unwatch = null;
    this.#clearTimers();
    const ws = this.#ws;
    this.#ws = null;
    ws?.close(1000, "stopped");
    this.#setStatus("stopped");
    await this.#pulling?.catch(() => 0);
    await this.saved();
  }

  /** Resolves once the latest change is persisted. */
  async saved(): Promise<void> {
    let last: Promise<void> | null = null;
    while (last !== this.#saving) {
      last = this.#saving;
      await last;
    }
  }

  /** Forgets the persisted inbox of this user (e.g. at sign-out). */
  async clearPersisted(): Promise<void> {
    await this.saved();
    await this.#persistence.clear(await this.#userKey());
  }

  // --- load and sync ---------------------------------------------------------------------------

  /** The first page with counts: replaces the store's items (pending operations stay on top). */
  async load(): Promise<void> {
    const page = await this.http.request<PageBody>("GET", `/v1/notifications?${this.#listQuery()}`);
    this.store.applyPage(page);
  }

  /** The next older page; false at the end. */
  async loadMore(): Promise<boolean> {
    const cursor = this.store.nextCursor;
    if (cursor === null) return false;
    const q = `${this.#listQuery()}&counts=false&cursor=${encodeURIComponent(cursor)}`;
    const page = await this.http.request<PageBody>("GET", `/v1/notifications?${q}`);
    this.store.applyPage(page, true);
    return page.nextCursor !== null;
  }

  /**
   * The change feed from the store's `sync` until `hasMore` is false; resolves to the number of
   * entries applied. Calls made while one runs share it (plus one more run after it).
   */
  pull(): Promise<number> {
    if (this.#pulling) {
      this.#pullAgain = true;
      return this.#pulling;
    }
    const run = async () => {
      let applied = 0;
      do {
        this.#pullAgain = false;
        applied += await this.#pullOnce();
      } while (this.#pullAgain);
      return applied;
    };
    this.#pulling = run().finally(() => { this.#pulling = null; });
    return this.#pulling;
  }

  async #pullOnce(): Promise<number> {
    if (this.store.sync === null) {
      await this.load();
      return this.store.getSnapshot().items.length;
    }
    let applied = 0;
    for (;;) {
      const since = encodeURIComponent(this.store.sync ?? "");
      let body: ChangesBody;
      try {
        body = await this.http.request<ChangesBody>("GET", `/v1/notifications/changes?since=${since}`);
      } catch (e) {
        // A position the server no longer reads (e.g. persisted by an older version): start over.
        if (e instanceof InboxError && e.code === "invalid_cursor") {
          await this.load();
          return applied + this.store.getSnapshot().items.length;
        }
        throw e;
      }
      this.store.applyChanges(body);
      applied += body.items.length;
      if (!body.hasMore) break;
    }
    // Without the stream no badge follows a change: read the counts (one call) when something changed.
    if (applied > 0 && this.#status !== "live") {
      this.store.applyCounts(await this.http.request<Counts>("GET", "/v1/notifications/unread-count"));
    }
    // Reaching the server means online: queued operations go now.
    if (this.store.pending.some((op) => !this.#sending.has(op.id))) void this.flush();
    return applied;
  }

  // --- optimistic operations -------------------------------------------------------------------

  /** Sets `flag` on one item: shown at once, rolled back if the server refuses it. */
  mark(itemKey: string, flag: Flag, value = true): Promise<void> {
    return this.#run({ id: newKey(), kind: "mark", itemKey, flag, value, idempotencyKey: newKey() });
  }

  /** A bulk action over the inbox (or one category): shown at once, rolled back on failure. */
  bulk(action: BulkAction, category?: string): Promise<void> {
    const op: Operation = { id: newKey(), kind: "bulk", action, idempotencyKey: newKey() };
    if (category !== undefined) op.category = category;
    return this.#run(op);
  }

  /** Deletes one item: hidden at once, back if the server refuses. */
  remove(itemKey: string): Promise<void> {
    return this.#run({ id: newKey(), kind: "delete", itemKey, idempotencyKey: newKey() });
  }

  /** Sends every queued operation (oldest first). */
  async flush(): Promise<void> {
    for (const op of this.store.pending) {
      if (!this.#sending.has(op.id)) await this.#send(op).catch(() => {});
    }
  }

  async #run(op: Operation): Promise<void> {
    this.store.addPending(op);
    await this.#send(op);
  }

  /**
   * Sends one operation. Success confirms it; a network failure (after retries) keeps it queued
   * (offline: sent again on reconnect, with the same Idempotency-Key); any other failure rolls
   * it back and pulls to reconcile. Rejects with the error in both failure cases.
   */
  async #send(op: Operation): Promise<void> {
    this.#sending.add(op.id);
    try {
      if (op.kind === "mark") {
        await this.http.request("POST", "/v1/notifications/mark", { body: { itemKey: op.itemKey, flag: op.flag, value: op.value }, idempotencyKey: op.idempotencyKey });
      } else if (op.kind === "bulk") {
        const body = op.category === undefined ? { action: op.action } : { action: op.action, category: op.category };
        await this.http.request("POST", "/v1/notifications/bulk", { body, idempotencyKey: op.idempotencyKey });
      } else {
        await this.http.request("DELETE", `/v1/notifications/items/${encodeURIComponent(op.itemKey)}`, { idempotencyKey: op.idempotencyKey });
      }
      this.store.confirm(op.id);
    } catch (e) {
      const err = e instanceof InboxError ? e : new InboxError(0, "network", String(e));
      if (err.code !== "network") {
        this.store.fail(op.id);
        this.#emit("rollback", op, err);
        void this.pull().catch((pe) => this.#emit("error", pe as InboxError, "pull after a rollback"));
      }
      throw err;
    } finally {
      this.#sending.delete(op.id);
    }
  }

  // --- live badge ------------------------------------------------------------------------------

  /** The page became visible again (browsers: automatic; React Native: call from AppState). */
  resume(): void {
    if (!this.#running) return;
    void this.pull().catch((e) => this.#emit("error", e as InboxError, "pull on resume"));
    if (this.#o.live === false) return;
    if (this.#ws?.readyState === OPEN) this.#ws.send("refresh");
    else {
      // A socket dead after sleep: reconnect now rather than after the backoff.
      this.#attempt = 0;
      void this.#connect();
    }
  }

  async #connect(): Promise<void> {
    if (!this.#running || this.#o.live === false) return;
    this.#clearReconnect();
    const old = this.#ws;
    this.#ws = null;
    old?.close(1000, "reconnecting");
    this.#setStatus(this.#status === "live" ? "polling" : this.#status === "stopped" ? "connecting" : this.#status);
    let token: string;
    try {
      // A fresh token on every connect: a token that expired while the socket was up never
      // makes the reconnect fail forever.
      token = await this.#o.getToken({ refresh: true });
    } catch (e) {
      this.#emit("error", new InboxError(0, "token", String(e)), "getToken");
      this.#scheduleReconnect();
      return;
    }
    if (!this.#running) return;
    const WS = this.#o.WebSocket ?? (globalThis as unknown as { WebSocket: WebSocketFactory }).WebSocket;
    const url = `${this.http.baseUrl.replace(/^http/, "ws")}/v1/notifications/stream`;
    let ws: WebSocketLike;
    try {
      ws = new WS(url, [PROTOCOL, `auth.${token}`]);
    } catch (e) {
      this.#emit("error", new InboxError(0, "network", String(e)), "stream");
      this.#scheduleReconnect();
      return;
    }
    this.#ws = ws;
    ws.addEventListener("open", () => {
      if (this.#ws !== ws) return;
      this.#attempt = 0;
      this.#clearPoll();
      this.#setStatus("live");
      // Catch up on whatever happened while the stream was down.
      void this.pull().catch((e) => this.#emit("error", e as InboxError, "pull on connect"));
    });
    ws.addEventListener("message", (ev: { data: unknown }) => {
      if (this.#ws !== ws || typeof ev.data !== "string") return;
      let m: BadgeMessage;
      try {
        m = JSON.parse(ev.data) as BadgeMessage;
      } catch {
        return;
      }
      if (m.reconnect && m.reconnect.baseMs > 0 && m.reconnect.maxMs >= m.reconnect.baseMs) {
        this.#reconnect = { baseMs: m.reconnect.baseMs, maxMs: m.reconnect.maxMs };
      }
      // Pull when the badge is newer than what the store holds (the badge says something changed).
      const behind = isOlder(this.store.sync, m.sync ?? null);
      if (this.store.applyBadge(m)) {
        this.#emit("badge", m);
        if (behind) void this.pull().catch((e) => this.#emit("error", e as InboxError, "pull after a badge"));
      }
    });
    const down = () => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      if (!this.#running) return;
      this.#setStatus("polling");
      this.#schedulePoll();
      this.#scheduleReconnect();
    };
    ws.addEventListener("close", down);
    // A refused handshake (e.g. an expired token) may fire only `error` (Node's WebSocket does).
    ws.addEventListener("error", () => {
      if (this.#ws !== ws) return;
      down();
      try {
        ws.close();
      } catch {
        // already closed
      }
    });
  }

  #scheduleReconnect(): void {
    if (!this.#running) return;
    this.#clearReconnect();
    const { baseMs, maxMs } = this.#reconnect;
    const delay = this.http.backoff(this.#attempt++, baseMs, maxMs);
    this.#reconnectTimer = setTimeout(() => void this.#connect(), delay);
  }

  #schedulePoll(): void {
    if (!this.#running || this.#pollTimer) return;
    this.#pollTimer = setTimeout(async () => {
      this.#pollTimer = null;
      if (!this.#running || this.#status === "live") return;
      try {
        await this.pull();
      } catch (e) {
        this.#emit("error", e as InboxError, "poll");
      }
      this.#schedulePoll();
    }, this.#o.pollMs ?? 30_000);
  }

  #watch(): void {
    const g = globalThis as unknown as { document?: EventTarget & { visibilityState?: string }; addEventListener?: EventTarget["addEventListener"]; removeEventListener?: EventTarget["removeEventListener"] };
    if (this.#o.watchVisibility === false || !g.document?.addEventListener) return;
    const onVisible = () => { if (g.document?.visibilityState === "visible") this.resume(); };
    const onOnline = () => this.resume();
    g.document.addEventListener("visibilitychange", onVisible);
    g.addEventListener?.("online", onOnline);
    this.#unwatch = () => {
      g.document?.removeEventListener("visibilitychange", onVisible);
      g.removeEventListener?.("online", onOnline);
    };
  }

  // --- internals -------------------------------------------------------------------------------

  #listQuery(): string {
    const size = Math.min(100, Math.max(1, this.#o.pageSize ?? 20));
    const { category, archived } = this.#o.view ?? {};
    return `limit=${size}${category === undefined ? "" : `&category=${encodeURIComponent(category)}`}${archived ? "&archived=true" : ""}`;
  }

  async #userKey(): Promise<string> {
    if (this.#user === null) {
      const token = await this.http.token(false);
      this.#user = (token && subOf(token)) ?? "default";
    }
    const { category, archived } = this.#o.view ?? {};
    return `${this.#user}${category === undefined ? "" : `|category=${category}`}${archived ? "|archived" : ""}`;
  }

  #saveSoon(): void {
    if (this.#saveQueued) return;
    this.#saveQueued = true;
    this.#saving = this.#saving.then(async () => {
      this.#saveQueued = false;
      try {
        await this.#persistence.save(await this.#userKey(), this.store.persist());
      } catch (e) {
        this.#emit("error", new InboxError(0, "persistence", String(e)), "save");
      }
    });
  }

  #setStatus(s: LiveStatus): void {
    if (s === this.#status) return;
    this.#status = s;
    this.#emit("status", s);
  }

  #emit<K extends keyof InboxEvents>(event: K, ...args: Parameters<InboxEvents[K]>): void {
    for (const fn of [...this.#listeners[event]]) (fn as (...a: unknown[]) => void)(...args);
  }

  #clearReconnect(): void {
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
  }

  #clearPoll(): void {
    if (this.#pollTimer) clearTimeout(this.#pollTimer);
    this.#pollTimer = null;
  }

  #clearTimers(): void {
    this.#clearReconnect();
    this.#clearPoll();
  }
}
