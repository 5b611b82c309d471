// An in-process model of the worker for the interleaving harness: items, a change feed, counts,
// badges, and user writes applied exactly once per Idempotency-Key (the first answer replayed,
// 409 idempotency_in_flight while the first request with a key is still unanswered). Requests
// are held until the scheduler answers them (at once, later, dropped after applying, failed
// before applying, or 503).
import type { Notification } from "../../src/types.ts";

export const T0 = 1_796_083_200_000;
const pos = (seq: number) => Buffer.from(JSON.stringify([T0 + seq, ""])).toString("base64url");
const seqOf = (p: string | null): number => {
  if (!p) return 0;
  try {
    return (JSON.parse(Buffer.from(p, "base64url").toString()) as [number, string])[0] - T0;
  } catch {
    return 0;
  }
};

export interface Held {
  id: number;
  method: string;
  url: URL;
  headers: Record<string, string>;
  body: unknown;
  key: string | null;
  respond: (r: Response) => void;
  fail: (e: Error) => void;
}

/** What happened to one Idempotency-Key on the server. */
export interface KeyRecord {
  status: number;
  body: unknown;
  /** Order of execution among all keys (first execution only; replays don't count). */
  order: number;
  /** The write changed state or found its item gone (a delete: the intent holds). */
  applied: boolean;
  /** How many times the write logic ran for this key (must be 1). */
  executions: number;
}

function item(key: string, revision: number): Notification {
  return {
    notificationId: `n-${key}`, itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like",
    templateType: "default", createdTimeMsec: T0, expireAtMsec: T0 + 86_400_000, revision, originsCount: 1, origins: [],
    read: false, seen: false, archived: false, landing: null, messageArguments: {}, summary: "x",
  } as Notification;
}

export class ServerModel {
  items = new Map<string, Notification>();
  /** itemKey → seq of its latest change. */
  changedAt = new Map<string, number>();
  seq = 0;
  held: Held[] = [];
  records = new Map<string, KeyRecord>();
  #executions = 0;
  #nextId = 0;
  #nextRev = 1000;
  /** Badges to push to an open socket (the scheduler delivers them). */
  badges: unknown[] = [];

  constructor(keys: string[]) {
    for (const k of keys) this.create(k);
  }

  create(key: string): void {
    this.items.set(key, item(key, this.#nextRev++));
    this.#touch(key);
  }

  deleteByOther(key: string): void {
    if (this.items.delete(key)) this.#touch(key);
  }

  #touch(key: string): void {
    this.changedAt.set(key, ++this.seq);
    this.badges.push({ type: "badge", ...this.counts(), sync: pos(this.seq) });
  }

  counts(): { unread: number; unseen: number } {
    let unread = 0, unseen = 0;
    for (const i of this.items.values()) {
      if (!i.read) unread++;
      if (!i.seen) unseen++;
    }
    return { unread, unseen };
  }

  fetch = ((input: string | URL | Request, init?: RequestInit) => new Promise<Response>((respond, fail) => {
    const headers = { ...(init?.headers as Record<string, string>) };
    this.held.push({
      id: this.#nextId++, method: init?.method ?? "GET", url: new URL(String(input)), headers,
      body: init?.body ? JSON.parse(init.body as string) : undefined, key: headers["idempotency-key"] ?? null, respond, fail,
    });
  })) as typeof globalThis.fetch;

  /** Computes (and for writes applies) the answer of `h` now. */
  answer(h: Held): { status: number; body: unknown } {
    const p = h.url.pathname;
    if (h.method === "GET" && p === "/v1/notifications") {
      const items = [...this.items.values()].sort((a, b) => b.revision - a.revision);
      return { status: 200, body: { items, nextCursor: null, counts: this.counts(), sync: pos(this.seq) } };
    }
    if (h.method === "GET" && p === "/v1/notifications/changes") {
      const since = seqOf(h.url.searchParams.get("since"));
      const changed = [...this.changedAt].filter(([, s]) => s > since).sort((a, b) => a[1] - b[1]);
      const page = changed.slice(0, 3);
      const entries = page.map(([k]) => this.items.get(k) ?? { itemKey: k, deleted: true });
      const sync = page.length === 0 ? pos(this.seq) : pos(page[page.length - 1][1]);
      return { status: 200, body: { items: entries, sync, hasMore: changed.length > page.length } };
    }
    if (h.method === "GET" && p === "/v1/notifications/unread-count") return { status: 200, body: this.counts() };
    // A user write: once per key.
    const key = h.key ?? `none-${h.id}`;
    const rec = this.records.get(key);
    if (rec) return { status: rec.status, body: rec.body };
    if (this.held.some((o) => o !== h && o.key === key && o.id < h.id)) {
      return { status: 409, body: { error: { code: "idempotency_in_flight", message: "in flight" } } };
    }
    const r = this.#write(h);
    this.records.set(key, { ...r, order: this.#executions++, executions: 1 });
    return { status: r.status, body: r.body };
  }

  #write(h: Held): { status: number; body: unknown; applied: boolean } {
    const gone = { status: 404, body: { error: { code: "item_not_found", message: "gone" } } };
    if (h.method === "DELETE") {
      const k = decodeURIComponent(h.url.pathname.split("/").pop()!);
      if (!this.items.has(k)) return { ...gone, applied: true };
      this.items.delete(k);
      this.#touch(k);
      return { status: 200, body: { deleted: true }, applied: true };
    }
    const b = h.body as { itemKey: string; flag: "read" | "seen"; value: boolean };
    const cur = this.items.get(b.itemKey);
    if (!cur) return { ...gone, applied: false };
    if (cur[b.flag] !== b.value) {
      this.items.set(b.itemKey, { ...cur, [b.flag]: b.value });
      this.#touch(b.itemKey);
    }
    return { status: 200, body: { updated: 1 }, applied: true };
  }

  /** Answers `h`: `ok` now; `dropped` applied but the answer is lost; `failed` never arrives; `unavailable` 503. */
  settle(h: Held, how: "ok" | "dropped" | "failed" | "unavailable", later?: (f: () => void) => void): void {
    this.held = this.held.filter((x) => x !== h);
    if (how === "failed") return h.fail(new TypeError("fetch failed"));
    if (how === "unavailable") {
      return h.respond(new Response(JSON.stringify({ error: { code: "backend_unavailable", message: "x" } }), { status: 503, headers: { "content-type": "application/json" } }));
    }
    // Computed now (a page read now), delivered now or later.
    const held = this.held;
    this.held = [...held, h]; // still "in flight" for the 409 check while computing
    const a = this.answer(h);
    this.held = held;
    const deliver = () => {
      if (how === "dropped") h.fail(new TypeError("connection reset"));
      else h.respond(new Response(JSON.stringify(a.body), { status: a.status, headers: { "content-type": "application/json" } }));
    };
    if (later) later(deliver);
    else deliver();
  }
}
