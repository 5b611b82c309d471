// The inbox client: one user's store kept in sync with the worker. Every request that reads or
// changes the store goes through one lane (lane.ts: queued operations first, in order, each
// with its persisted Idempotency-Key, then pulls); every trigger (start, resume, online, socket
// open, a newer badge, a poll tick, a new operation, flush, pull) only asks the lane for work.
// The live badge comes over a WebSocket with the shared cached token; while it is down the
// client polls. The model is clients/conformance/README.md's, shared with the Kotlin SDK and
// checked by the transport vectors.
import { GeoClient } from "./geo.ts";
import { Http, InboxError, newKey } from "./http.ts";
import type { RetryPolicy } from "./http.ts";
import { Lane, systemClock } from "./lane.ts";
import type { Clock, WriteResult } from "./lane.ts";
import { MemoryPersistence } from "./persistence.ts";
import type { Persistence } from "./persistence.ts";
import { decodePosition, isOlder } from "./position.ts";
import { InboxStore } from "./store.ts";
import type { BulkAction, Flag, InboxSnapshot, Operation } from "./store.ts";
import type { BadgeMessage } from "./types.ts";

export type { Clock, WriteResult } from "./lane.ts";

/** Where the live badge stands (README "Status"). */
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
  /**
   * Returns the user's JWT. Called once and cached for HTTP and the stream alike (again with
   * `refresh: false` 30 s before the JWT's `exp`); `refresh: true` only after a 401 answer or a
   * 4001 close of the stream — map it to a forced refresh at your identity provider.
   */
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
  /** How often to pull while the stream is down (default 30 s; doubled after each failed poll, up to 5 min). */
  pollMs?: number;
  fetch?: typeof fetch;
  WebSocket?: WebSocketFactory;
  retry?: Partial<RetryPolicy>;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
  /** Time and timers (default: Date.now and setTimeout); tests pass a fake clock. */
  clock?: Clock;
  /** Listen to `document` visibility and `online` events (default: when they exist). */
  watchVisibility?: boolean;
}

/** Events besides the store's own `subscribe`. */
export interface InboxEvents {
  /** A background failure: the lane stopped (`lastError`) or the stream is down (`statusReason`). */
  error: (e: InboxError, context: string) => void;
  /** The live badge's status changed. */
  status: (s: LiveStatus) => void;
  /** A badge was applied (after the store's stale check). */
  badge: (m: BadgeMessage) => void;
  /** An optimistic operation was refused by the server and rolled back. */
  rollback: (op: Operation, e: InboxError) => void;
}

const PROTOCOL = "inbox.v1";
const OPEN = 1;
const CONNECTING = 0;
/** The stream's close code for an expired or revoked token: refresh and reconnect at once. */
const CLOSE_TOKEN = 4001;
const MAX_POLL_MS = 300_000;

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
  /** Where is this point (country, time zone) over this client's `http`; see `GeoClient`. */
  readonly geo: GeoClient;
  readonly #o: InboxClientOptions;
  readonly #persistence: Persistence;
  readonly #clock: Clock;
  readonly #lane: Lane;
  #user: string | null;
  #status: LiveStatus = "stopped";
  #statusReason: InboxError | null = null;
  #running = false;
  #ws: WebSocketLike | null = null;
  /** Bumped by every connect and by stop: a late getToken answer of an older connect is dropped. */
  #connectGen = 0;
  #attempt = 0;
  #reconnect = { baseMs: 1_000, maxMs: 30_000 };
  #reconnectTimer: unknown = null;
  #refreshOnConnect = false;
  #pollTimer: unknown = null;
  /** Bumped when the poll timer is cleared: a poll run that ends after that schedules nothing. */
  #pollGen = 0;
  #pollFailures = 0;
  #saving: Promise<void> = Promise.resolve();
  #saveQueued = false;
  #listeners: { [K in keyof InboxEvents]: Set<InboxEvents[K]> } = { error: new Set(), status: new Set(), badge: new Set(), rollback: new Set() };
  #unwatch: (() => void) | null = null;

  constructor(o: InboxClientOptions) {
    this.#o = o;
    const { category, archived = false } = o.view ?? {};
    this.store = new InboxStore(null, (i) => i.archived === archived && (category === undefined || i.categoryType === category));
    this.#clock = o.clock ?? systemClock;
    this.#lane = new Lane({
      store: this.store,
      clock: this.#clock,
      paths: { list: () => this.#listQuery(), counts: category === undefined ? "/v1/notifications/unread-count" : `/v1/notifications/unread-count?category=${encodeURIComponent(category)}` },
      onRollback: (op, e) => this.#emit("rollback", op, e),
      onStop: (e) => this.#emit("error", e, "sync"),
    });
    this.http = new Http({ baseUrl: o.baseUrl, getToken: o.getToken, fetch: o.fetch, retry: o.retry, random: o.random, now: () => this.#clock.now(), sleep: (ms) => this.#lane.sleep(ms) });
    this.#lane.http = this.http;
    this.geo = new GeoClient(this.http);
    this.#persistence = o.persistence ?? new MemoryPersistence();
    this.#user = o.user ?? null;
    this.store.subscribe(() => this.#saveSoon());
  }

  /** The store's current state (see `InboxStore.getSnapshot`). */
  get snapshot(): InboxSnapshot { return this.store.getSnapshot(); }
  get status(): LiveStatus { return this.#status; }
  /** Why the status is `polling` (the stream's last error); `null` when live or with `live: false`. */
  get statusReason(): InboxError | null { return this.#statusReason; }
  /** The error that last stopped the lane; cleared by the next request that gets an answer. */
  get lastError(): InboxError | null { return this.#lane.lastError; }

  on<K extends keyof InboxEvents>(event: K, fn: InboxEvents[K]): () => void {
    this.#listeners[event].add(fn);
    return () => this.#listeners[event].delete(fn);
  }

  /**
   * Shows the persisted inbox at once (if any), then brings it up to date through the lane:
   * queued operations first, then only the changes since its `sync` when one was persisted, else
   * the first page. Opens the live badge (or starts polling) at the same time. Resolves after
   * that first lane run; without a persisted inbox a failed first load is thrown, with one it is
   * only reported (`lastError`, an `error` event): the persisted inbox stays on screen. Either
   * way the client stays started and catches up by itself (call `stop()` to end it).
   */
  async start(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    this.#lane.running = true;
    this.#setStatus(this.#o.live === false ? "polling" : "connecting", null);
    let hasInbox = false;
    try {
      const saved = await this.#persistence.load(await this.#userKey());
      // Restored even without a position (never loaded): its queued operations must survive.
      if (saved) this.store.restore(saved);
      if (saved && saved.sync !== null) {
        hasInbox = true;
        const at = decodePosition(saved.sync);
        if (at && this.#clock.now() - at.ms > (this.#o.maxPersistedAgeMs ?? 6 * 86_400_000)) this.#lane.reloadWanted = true;
      }
    } catch (e) {
      await this.stop();
      throw e;
    }
    if (!this.#running) return;
    this.#lane.pullWanted = true;
    const first = this.#lane.kick();
    this.#watch();
    if (this.#o.live === false) this.#schedulePoll();
    else void this.#connect();
    const err = await first;
    // Nothing to show: the app must know. The client keeps running (polling or reconnecting,
    // its queue kept), so the inbox arrives by itself when the network does.
    if (err && !hasInbox && this.store.sync === null) throw err;
  }

  /** Closes the stream and stops polling; queued operations stay persisted (results: `queued`, code `stopped`). */
  async stop(): Promise<void> {
    this.#running = false;
    this.#connectGen++;
    this.#unwatch?.();
    this.#unwatch = null;
    this.#clearReconnect();
    this.#clearPoll();
    const ws = this.#ws;
    this.#ws = null;
    ws?.close(1000, "stopped");
    this.#setStatus("stopped", null);
    await this.#lane.stop();
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

  // --- the lane's work ---------------------------------------------------------------------------

  /** Reloads the first page with counts (pending operations stay on top). Rejects if it fails. */
  load(): Promise<void> {
    return this.#lane.pull(true).then(() => undefined);
  }

  /** The next older page (in the lane); false at the end. */
  loadMore(): Promise<boolean> {
    return this.#lane.loadMore(this.#listQuery());
  }

  /**
   * Pulls the change feed from the store's `sync` until `hasMore` is false (then the counts, when
   * entries came); resolves to the number of entries. Calls made while one runs share the next
   * pull. Rejects when it fails (the lane stops; the next trigger tries again).
   */
  pull(): Promise<number> {
    return this.#lane.pull(false);
  }

  /** Sends every queued operation, oldest first; resolves when the lane is idle or stopped. */
  async flush(): Promise<void> {
    await this.#lane.kick();
  }

  /** Sets `flag` on one item: shown at once; the result says applied, queued or rejected. */
  mark(itemKey: string, flag: Flag, value = true): Promise<WriteResult> {
    return this.#lane.enqueue({ id: newKey(), kind: "mark", itemKey, flag, value, idempotencyKey: newKey() });
  }

  /** A bulk action over the inbox (or one category): shown at once. */
  bulk(action: BulkAction, category?: string): Promise<WriteResult> {
    const op: Operation = { id: newKey(), kind: "bulk", action, idempotencyKey: newKey() };
    if (category !== undefined) op.category = category;
    return this.#lane.enqueue(op);
  }

  /** Deletes one item: hidden at once. */
  remove(itemKey: string): Promise<WriteResult> {
    return this.#lane.enqueue({ id: newKey(), kind: "delete", itemKey, idempotencyKey: newKey() });
  }

  // --- triggers ----------------------------------------------------------------------------------

  /** The page became visible again (browsers: automatic; React Native: call from AppState). */
  resume(): void {
    if (!this.#running) return;
    this.#lane.pullWanted = true;
    void this.#lane.kick();
    if (this.#o.live === false) return;
    if (this.#ws?.readyState === OPEN) this.#ws.send("refresh");
    else if (this.#ws?.readyState !== CONNECTING || this.#ws === null) {
      // A socket dead after sleep: reconnect now rather than after the backoff.
      this.#attempt = 0;
      void this.#connect();
    }
  }

  /** The network is back (browsers: the `online` event, automatic; React Native: NetInfo). */
  online(): void {
    this.resume();
  }

  // --- live badge --------------------------------------------------------------------------------

  async #connect(): Promise<void> {
    if (!this.#running || this.#o.live === false) return;
    this.#clearReconnect();
    const gen = ++this.#connectGen;
    const old = this.#ws;
    this.#ws = null;
    old?.close(1000, "reconnecting");
    let token: string | null;
    try {
      const refresh = this.#refreshOnConnect;
      this.#refreshOnConnect = false;
      token = await this.http.token(refresh);
    } catch (e) {
      if (gen === this.#connectGen) this.#down(e instanceof InboxError ? e : new InboxError(0, "token", String(e)));
      return;
    }
    if (!this.#running || gen !== this.#connectGen) return;
    const WS = this.#o.WebSocket ?? (globalThis as unknown as { WebSocket?: WebSocketFactory }).WebSocket;
    const url = `${this.http.baseUrl.replace(/^http/, "ws")}/v1/notifications/stream`;
    let ws: WebSocketLike;
    try {
      if (!WS) throw new Error("no WebSocket in this runtime");
      ws = new WS(url, [PROTOCOL, `auth.${token ?? ""}`]);
    } catch (e) {
      this.#down(new InboxError(0, "websocket_unavailable", String((e as Error)?.message ?? e), null, null, { cause: e }));
      return;
    }
    this.#ws = ws;
    let opened = false;
    ws.addEventListener("open", () => {
      if (this.#ws !== ws) return;
      opened = true;
      this.#attempt = 0;
      this.#clearPoll();
      this.#pollFailures = 0;
      this.#setStatus("live", null);
      // Catch up on whatever happened while the stream was down (and send what is queued).
      this.#lane.pullWanted = true;
      void this.#lane.kick();
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
        if (behind) {
          this.#lane.pullWanted = true;
          void this.#lane.kick();
        }
      }
    });
    const lost = (code: number) => {
      if (this.#ws !== ws) return;
      this.#ws = null;
      if (!this.#running) return;
      if (code === CLOSE_TOKEN) {
        // The token expired or was revoked: one refresh and a reconnect at once (API docs).
        this.#enterPolling(new InboxError(0, "stream_closed", `the stream closed (${code})`));
        this.#refreshOnConnect = true;
        void this.#connect();
        return;
      }
      this.#down(opened
        ? new InboxError(0, "stream_closed", `the stream closed (${code})`)
        : new InboxError(0, "stream_refused", `the stream was refused (${code})`));
    };
    ws.addEventListener("close", (ev: { code?: number }) => lost(ev?.code ?? 1006));
    // A refused handshake (e.g. an expired token) may fire only `error` (Node's WebSocket does).
    ws.addEventListener("error", () => {
      if (this.#ws !== ws) return;
      lost(1006);
      try {
        ws.close();
      } catch {
        // already closed
      }
    });
  }

  /** The stream is down: poll, report why, and reconnect after the backoff. */
  #down(reason: InboxError): void {
    if (!this.#running) return;
    this.#enterPolling(reason);
    this.#emit("error", reason, "stream");
    this.#clearReconnect();
    const { baseMs, maxMs } = this.#reconnect;
    const delay = this.http.backoff(this.#attempt++, baseMs, maxMs);
    this.#reconnectTimer = this.#clock.setTimeout(() => {
      this.#reconnectTimer = null;
      void this.#connect();
    }, delay);
  }

  #enterPolling(reason: InboxError | null): void {
    this.#setStatus("polling", reason);
    this.#schedulePoll();
  }

  /** The next poll tick, unless one is pending or running: pollMs, doubled per failed poll (≤ 5 min). */
  #schedulePoll(): void {
    if (!this.#running || this.#pollTimer !== null || this.#status !== "polling") return;
    const gen = this.#pollGen;
    const delay = Math.min(MAX_POLL_MS, (this.#o.pollMs ?? 30_000) * 2 ** this.#pollFailures);
    this.#pollTimer = this.#clock.setTimeout(async () => {
      this.#pollTimer = "running";
      this.#lane.pullWanted = true;
      const err = await this.#lane.kick();
      if (gen !== this.#pollGen) return;
      this.#pollTimer = null;
      this.#pollFailures = err ? this.#pollFailures + 1 : 0;
      this.#schedulePoll();
    }, delay);
  }

  #watch(): void {
    const g = globalThis as unknown as { document?: EventTarget & { visibilityState?: string }; addEventListener?: EventTarget["addEventListener"]; removeEventListener?: EventTarget["removeEventListener"] };
    if (this.#o.watchVisibility === false || !g.document?.addEventListener) return;
    const onVisible = () => { if (g.document?.visibilityState === "visible") this.resume(); };
    const onOnline = () => this.online();
    g.document.addEventListener("visibilitychange", onVisible);
    g.addEventListener?.("online", onOnline);
    this.#unwatch = () => {
      g.document?.removeEventListener("visibilitychange", onVisible);
      g.removeEventListener?.("online", onOnline);
    };
  }

  // --- internals ---------------------------------------------------------------------------------

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

  #setStatus(s: LiveStatus, reason: InboxError | null): void {
    this.#statusReason = reason;
    if (s === this.#status) return;
    this.#status = s;
    this.#emit("status", s);
  }

  #emit<K extends keyof InboxEvents>(event: K, ...args: Parameters<InboxEvents[K]>): void {
    for (const fn of [...this.#listeners[event]]) (fn as (...a: unknown[]) => void)(...args);
  }

  #clearReconnect(): void {
    if (this.#reconnectTimer !== null) this.#clock.clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
  }

  #clearPoll(): void {
    if (this.#pollTimer !== null && this.#pollTimer !== "running") this.#clock.clearTimeout(this.#pollTimer);
    this.#pollTimer = null;
    this.#pollGen++;
  }
}
