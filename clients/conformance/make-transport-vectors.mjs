// Writes clients/conformance/transport/*.json: the transport conformance vectors every client SDK
// runs with a fake clock and a scripted transport (format and the client model: README.md,
// "Transport vectors"). Every step and expectation below is written by hand from README.md's
// rules; the script only builds the server bodies, positions, HTTP dates and JWTs.
// Run: node clients/conformance/make-transport-vectors.mjs (`--check` exits 1 when the committed
// files differ from this script's output).
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, readdirSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "transport");
const OWNER = "u1";
const T0 = 1_796_083_200_000; // 2026-12-01T00:00:00Z: the fake clock's reading at t = 0

const nid = (key) => createHash("sha256").update(OWNER).update(Buffer.from([0])).update(key).digest().subarray(0, 12).toString("base64url");
const pos = (ms, id = "") => Buffer.from(JSON.stringify([ms, id])).toString("base64url");
const rev = (s, low = 0) => (T0 + s * 1000) * 1024 + low;
/** An unsigned JWT (the SDK only reads `exp`; it never verifies). */
const jwt = (claims) => `${Buffer.from(JSON.stringify({ alg: "HS256", typ: "JWT" })).toString("base64url")}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;
/** An HTTP date `ms` after t = 0 (whole seconds, as the header carries). */
const httpDate = (ms) => new Date(T0 + ms).toUTCString();

function item(key, s, over = {}) {
  const revision = rev(s);
  const created = Math.floor(revision / 1024);
  return {
    notificationId: nid(key), itemKey: key, serviceType: "feed", categoryType: "social", notificationType: "like",
    templateType: "default", createdTimeMsec: created, expireAtMsec: created + 30 * 86_400_000, revision,
    originsCount: 1, origins: [{ senderId: `s-${key}`, name: "Ana", createdTimeMsec: created }], read: false, seen: false,
    archived: false, landing: null, messageArguments: {}, summary: "Ana liked your post", ...over,
  };
}
const tomb = (key) => ({ itemKey: key, deleted: true });
const c = (unread, unseen) => ({ unread, unseen });
const S1 = pos(T0 - 60_000); // the persisted store's position
const ITEMS = [item("a", -120), item("b", -180), item("c", -240)];
/** A persisted store of three unread items (a newest) with `pending` queued operations. */
const persisted = (pending = []) => ({ version: 1, items: ITEMS, counts: c(3, 3), countsSync: S1, sync: S1, nextCursor: null, pending });
const qMark = (id, itemKey, flag = "read", value = true) => ({ id, kind: "mark", itemKey, flag, value, idempotencyKey: `key-${id}` });
const qDelete = (id, itemKey) => ({ id, kind: "delete", itemKey, idempotencyKey: `key-${id}` });

// --- requests and answers ----------------------------------------------------------------------
const AUTH = (t = "t1") => ({ authorization: `Bearer ${t}` });
const ok = (body = {}) => ({ status: 200, body });
const err = (status, code, headers = {}) => ({ status, headers, body: { error: { code, message: code } } });
const NET = { networkError: true };
const markReq = (itemKey, key, { flag = "read", value = true, token = "t1" } = {}) =>
  ({ method: "POST", path: "/v1/notifications/mark", headers: { ...AUTH(token), "idempotency-key": key }, body: { itemKey, flag, value } });
const deleteReq = (itemKey, key, token = "t1") => ({ method: "DELETE", path: `/v1/notifications/items/${itemKey}`, headers: { ...AUTH(token), "idempotency-key": key } });
const changesReq = (since = S1, token = "t1") => ({ method: "GET", path: `/v1/notifications/changes?since=${since}`, headers: { ...AUTH(token), "idempotency-key": null } });
const loadReq = (token = "t1") => ({ method: "GET", path: "/v1/notifications?limit=20", headers: AUTH(token) });
const countsReq = (token = "t1") => ({ method: "GET", path: "/v1/notifications/unread-count", headers: AUTH(token) });
const changes = (items = [], sync = pos(T0), hasMore = false) => ok({ items, sync, hasMore });
const page = (items = ITEMS, counts = c(3, 3), sync = pos(T0)) => ok({ items, nextCursor: null, counts, sync });
const MARKED = ok({ updated: 1 });
const DELETED = ok({ deleted: true });

const vectors = [];
/** `options` override the defaults of README "Options". */
const vector = (name, description, v) => vectors.push({ name, description, ...v });

// --- answer classes -----------------------------------------------------------------------------
vector("write-applied", "A mark is shown at once, sent with its Idempotency-Key, confirmed by a 2xx: outcome applied.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a", flag: "read", value: true },
    { expect: { pending: 1, counts: c(2, 3) } },
    { request: markReq("a", "$m1"), at: 0, answer: MARKED },
    { expect: { results: { m1: { outcome: "applied" } }, pending: 0, counts: c(2, 3), rollbacks: [], lastError: null } },
  ],
});

vector("in-flight-409-retried", "409 idempotency_in_flight is transient: resent with the same key after the backoff (no Retry-After: full jitter, attempt 0 → 0.5 · 250 ms).", {
  persisted: persisted([qMark("m1", "a")]),
  steps: [
    { call: "start" },
    { request: markReq("a", "key-m1"), at: 0, answer: err(409, "idempotency_in_flight") },
    { request: markReq("a", "key-m1"), at: 125, answer: MARKED },
    { request: changesReq(), at: 125, answer: changes() },
    { expect: { pending: 0, rollbacks: [], counts: c(2, 3) } },
  ],
});

vector("bad-gateway-502-retry-after", "502 with Retry-After (seconds) is transient: the resend waits exactly that long, same key; applied.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "remove", op: "d1", itemKey: "b" },
    { request: deleteReq("b", "$d1"), at: 0, answer: err(502, "bad_gateway", { "retry-after": "2" }) },
    { expect: { pending: 1, itemKeys: ["a", "c"] } },
    { request: deleteReq("b", "$d1"), at: 2000, answer: DELETED },
    { expect: { results: { d1: { outcome: "applied" } }, pending: 0, itemKeys: ["a", "c"], counts: c(2, 2), rollbacks: [] } },
  ],
});

vector("unavailable-503-http-date", "503 with Retry-After as an HTTP-date: the resend waits until that date on the client's clock.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), at: 0, answer: err(503, "backend_unavailable", { "retry-after": httpDate(5000) }) },
    { quiet: 4999 },
    { request: markReq("a", "$m1"), at: 5000, answer: MARKED },
    { expect: { results: { m1: { outcome: "applied" } }, pending: 0 } },
  ],
});

vector("retry-after-seconds-then-backoff", "429 Retry-After: 3 waits 3 s; a following 500 without it waits the backoff of attempt 1 (0.5 · 500 ms); then applied.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "b", flag: "seen" },
    { request: markReq("b", "$m1", { flag: "seen" }), at: 0, answer: err(429, "rate_limited", { "retry-after": "3" }) },
    { request: markReq("b", "$m1", { flag: "seen" }), at: 3000, answer: err(500, "internal") },
    { request: markReq("b", "$m1", { flag: "seen" }), at: 3250, answer: MARKED },
    { expect: { results: { m1: { outcome: "applied" } }, pending: 0, counts: c(3, 2) } },
  ],
});

vector("retry-after-beyond-max-wait", "A Retry-After longer than maxWaitMs (60 s): the lane stops at once, the op stays queued (outcome queued), and the lane resumes by itself when that time has passed.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), at: 0, answer: err(503, "backend_unavailable", { "retry-after": "120" }) },
    { expect: { results: { m1: { outcome: "queued", code: "backend_unavailable" } }, pending: 1, counts: c(2, 3), lastError: "backend_unavailable", rollbacks: [] } },
    { quiet: 119_999 },
    { request: markReq("a", "$m1"), at: 120_000, answer: MARKED },
    { expect: { pending: 0, counts: c(2, 3), lastError: null } },
  ],
});

vector("transient-exhausted-stays-queued", "Network errors: 3 retries with full-jitter backoff (125, 250, 500 ms), then the lane stops with the op queued (outcome queued, code network); nothing runs until a trigger; `online` resumes from it with the same key, then pulls.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), at: 0, answer: NET },
    { request: markReq("a", "$m1"), at: 125, answer: NET },
    { request: markReq("a", "$m1"), at: 375, answer: NET },
    { request: markReq("a", "$m1"), at: 875, answer: NET },
    { expect: { results: { m1: { outcome: "queued", code: "network" } }, pending: 1, counts: c(2, 3), rollbacks: [], lastError: "network" } },
    { quiet: 60_000 },
    { call: "online" },
    { request: markReq("a", "$m1"), at: 60_875, answer: MARKED },
    { request: changesReq(pos(T0)), at: 60_875, answer: changes() },
    { expect: { pending: 0, counts: c(2, 3), rollbacks: [], lastError: null } },
  ],
});

vector("offline-mark-and-remove", "mark and remove while offline return outcome queued (code network), stay shown, and are sent in creation order with their keys once online.", {
  persisted: persisted(),
  options: { attempts: 0 },
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), answer: NET },
    { call: "remove", op: "d1", itemKey: "b" },
    { request: markReq("a", "$m1"), answer: NET },
    { expect: { results: { m1: { outcome: "queued", code: "network" }, d1: { outcome: "queued", code: "network" } }, pending: 2, itemKeys: ["a", "c"], counts: c(1, 2), rollbacks: [] } },
    { call: "online" },
    { request: markReq("a", "$m1"), answer: MARKED },
    { request: deleteReq("b", "$d1"), answer: DELETED },
    { request: changesReq(pos(T0)), answer: changes() },
    { expect: { pending: 0, itemKeys: ["a", "c"], counts: c(1, 2), rollbacks: [], lastError: null } },
  ],
});

vector("unauthorized-refresh-once", "A 401 gets one token refresh (getToken refresh: true) and an immediate resend with the new token and the same key; the new token is then used by every request.", {
  persisted: persisted(),
  tokens: ["t1", "t2"],
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), at: 0, answer: err(401, "token_expired") },
    { request: markReq("a", "$m1", { token: "t2" }), at: 0, answer: MARKED },
    { call: "pull" },
    { request: changesReq(pos(T0), "t2"), answer: changes() },
    { expect: { results: { m1: { outcome: "applied" } }, tokenCalls: [false, true], pending: 0 } },
  ],
});

vector("unauthorized-twice-keeps-queued", "401 again after the refresh: the op stays queued (outcome queued with the server's code), no rollback, the lane stops and the error is surfaced; the next trigger resends with the cached new token.", {
  persisted: persisted(),
  tokens: ["t1", "t2"],
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), at: 0, answer: err(401, "token_expired") },
    { request: markReq("a", "$m1", { token: "t2" }), at: 0, answer: err(401, "invalid_token") },
    { expect: { results: { m1: { outcome: "queued", code: "invalid_token" } }, pending: 1, counts: c(2, 3), rollbacks: [], lastError: "invalid_token", tokenCalls: [false, true] } },
    { quiet: 10_000 },
    { call: "flush" },
    { request: markReq("a", "$m1", { token: "t2" }), at: 10_000, answer: MARKED },
    { expect: { pending: 0, rollbacks: [], tokenCalls: [false, true], lastError: null } },
  ],
});

vector("rejected-rolls-back", "Another 4xx (422 idempotency_key_reused) is definitive: rolled back exactly (outcome rejected, a rollback event), then a pull reconciles.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), answer: err(422, "idempotency_key_reused") },
    { request: changesReq(pos(T0)), answer: changes() },
    { expect: { results: { m1: { outcome: "rejected", code: "idempotency_key_reused" } }, rollbacks: ["m1"], pending: 0, counts: c(3, 3), items: { a: { read: false } } } },
  ],
});

vector("delete-404-is-applied", "A delete answered 404 item_not_found is applied (the item is gone: the intent holds): confirmed, no rollback, then a pull; the pull applied an entry, so it ends with unread-count.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "remove", op: "d1", itemKey: "c" },
    { request: deleteReq("c", "$d1"), answer: err(404, "item_not_found") },
    { request: changesReq(pos(T0)), answer: changes([tomb("c")], pos(T0 + 1000)) },
    { request: countsReq(), answer: ok(c(2, 2)) },
    { expect: { results: { d1: { outcome: "applied" } }, rollbacks: [], pending: 0, itemKeys: ["a", "b"], counts: c(2, 2) } },
  ],
});

vector("mark-404-is-rejected", "A mark answered 404 item_not_found is rejected: rolled back, rollback event, then a pull that removes the item and reads the counts.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { call: "mark", op: "m1", itemKey: "b", flag: "archived" },
    { expect: { itemKeys: ["a", "c"] } },
    { request: markReq("b", "$m1", { flag: "archived" }), answer: err(404, "item_not_found") },
    { request: changesReq(pos(T0)), answer: changes([tomb("b")], pos(T0 + 1000)) },
    { request: countsReq(), answer: ok(c(2, 2)) },
    { expect: { results: { m1: { outcome: "rejected", code: "item_not_found" } }, rollbacks: ["m1"], pending: 0, itemKeys: ["a", "c"], counts: c(2, 2) } },
  ],
});

// --- the lane -----------------------------------------------------------------------------------
vector("slow-first-request-after-reconnect", "Restart online with two queued deletes; the first request takes 600 ms while every trigger fires (socket open, online, resume, flush, pull): the second delete is sent only after the first is answered, each exactly once, then one pull; no rollback.", {
  persisted: persisted([qDelete("q1", "a"), qDelete("q2", "b")]),
  options: { live: true },
  steps: [
    { call: "start" },
    { request: deleteReq("a", "key-q1"), at: 0, answer: { ...DELETED, delayMs: 600 } },
    { socket: "connect", token: "t1", at: 0 },
    { socket: "open" },
    { expect: { status: "live" } },
    { call: "online" },
    { call: "resume" },
    { call: "flush" },
    { call: "pull" },
    { request: deleteReq("b", "key-q2"), at: 600, answer: DELETED },
    { request: changesReq(), at: 600, answer: changes([tomb("a"), tomb("b")], pos(T0 + 1000)) },
    { request: countsReq(), at: 600, answer: ok(c(1, 1)) },
    { quiet: 5000 },
    { expect: { pending: 0, rollbacks: [], itemKeys: ["c"], counts: c(1, 1), status: "live" } },
  ],
});

vector("restart-with-queued-ops", "Ops queued in one run (offline) are persisted with their keys and sent, in order, with the same keys after a restart.", {
  persisted: persisted(),
  options: { attempts: 0 },
  steps: [
    { call: "start" },
    { request: changesReq(), answer: changes() },
    { call: "mark", op: "m1", itemKey: "a" },
    { request: markReq("a", "$m1"), answer: NET },
    { call: "remove", op: "d1", itemKey: "c" },
    { request: markReq("a", "$m1"), answer: NET },
    { expect: { pending: 2, results: { m1: { outcome: "queued", code: "network" }, d1: { outcome: "queued", code: "network" } } } },
    { call: "restart" },
    { expect: { pending: 2, itemKeys: ["a", "b"], counts: c(1, 2) } },
    { request: markReq("a", "$m1"), answer: MARKED },
    { request: deleteReq("c", "$d1"), answer: DELETED },
    { request: changesReq(pos(T0)), answer: changes() },
    { expect: { pending: 0, rollbacks: [], itemKeys: ["a", "b"], counts: c(1, 2) } },
  ],
});

vector("two-flush-triggers-at-once", "Two flushes and a pull called while the first op is in flight join the one lane: each op is sent once, in order, then one pull.", {
  persisted: persisted([qMark("q1", "a"), qMark("q2", "a", "read", false)]),
  steps: [
    { call: "start" },
    { call: "flush" },
    { call: "flush" },
    { request: markReq("a", "key-q1"), at: 0, answer: { ...MARKED, delayMs: 300 } },
    { call: "flush" },
    { call: "pull" },
    { request: markReq("a", "key-q2", { value: false }), at: 300, answer: MARKED },
    { request: changesReq(), at: 300, answer: changes() },
    { quiet: 5000 },
    { expect: { pending: 0, rollbacks: [], items: { a: { read: false } }, counts: c(3, 3) } },
  ],
});

vector("read-then-unread-in-order", "read then unread on one item, the first request slow: the second is sent only after the first is answered, so the user's last intent (unread) lands last.", {
  persisted: persisted(),
  steps: [
    { call: "start" },
    { request: changesReq(), answer: changes() },
    { call: "mark", op: "m1", itemKey: "a", flag: "read", value: true },
    { call: "mark", op: "m2", itemKey: "a", flag: "read", value: false },
    { request: markReq("a", "$m1"), at: 0, answer: { ...MARKED, delayMs: 600 } },
    { request: markReq("a", "$m2", { value: false }), at: 600, answer: MARKED },
    { expect: { results: { m1: { outcome: "applied" }, m2: { outcome: "applied" } }, items: { a: { read: false } }, counts: c(3, 3), pending: 0 } },
  ],
});

// --- tokens -------------------------------------------------------------------------------------
vector("token-shared-and-cached", "One cached token for HTTP and the socket: getToken is called once (refresh: false); a reconnect after a close reuses it.", {
  options: { live: true },
  steps: [
    { call: "start" },
    { request: loadReq(), at: 0, answer: page() },
    { socket: "connect", token: "t1", at: 0 },
    { socket: "open" },
    { request: changesReq(pos(T0)), at: 0, answer: changes() },
    { socket: "close", code: 1006 },
    { expect: { status: "polling", statusReason: "stream_closed" } },
    { socket: "connect", token: "t1", at: 500 },
    { socket: "open" },
    { request: changesReq(pos(T0)), at: 500, answer: changes() },
    { expect: { status: "live", statusReason: null, tokenCalls: [false] } },
  ],
});

vector("token-near-expiry", "A token is cached until 30 s before its exp; then getToken is called again with refresh: false.", {
  tokens: [jwt({ sub: OWNER, exp: (T0 + 100_000) / 1000 }), "t2"],
  steps: [
    { call: "start" },
    { request: loadReq(jwt({ sub: OWNER, exp: (T0 + 100_000) / 1000 })), at: 0, answer: page() },
    { advance: 69_000 },
    { call: "pull" },
    { request: changesReq(pos(T0), jwt({ sub: OWNER, exp: (T0 + 100_000) / 1000 })), at: 69_000, answer: changes() },
    { expect: { tokenCalls: [false] } },
    { advance: 2000 },
    { call: "pull" },
    { request: changesReq(pos(T0), "t2"), at: 71_000, answer: changes() },
    { expect: { tokenCalls: [false, false] } },
  ],
});

vector("close-4001-refresh-reconnect-at-once", "A 4001 close: one refresh, a reconnect at once (no backoff) with the fresh token, which HTTP then uses too.", {
  options: { live: true },
  tokens: ["t1", "t2"],
  steps: [
    { call: "start" },
    { request: loadReq(), at: 0, answer: page() },
    { socket: "connect", token: "t1", at: 0 },
    { socket: "open" },
    { request: changesReq(pos(T0)), at: 0, answer: changes() },
    { advance: 10_000 },
    { socket: "close", code: 4001 },
    { socket: "connect", token: "t2", at: 10_000 },
    { socket: "open" },
    { request: changesReq(pos(T0), "t2"), at: 10_000, answer: changes() },
    { expect: { status: "live", tokenCalls: [false, true] } },
  ],
});

// --- polling ------------------------------------------------------------------------------------
vector("socket-constructor-throws-polls", "The WebSocket constructor throws (CSP, no WebSocket): status polling with the reason; a pull every pollMs, doubling after each failed poll, back to pollMs after a success.", {
  persisted: persisted(),
  options: { live: true, pollMs: 1000, attempts: 0 },
  webSocket: "throws",
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { expect: { status: "polling", statusReason: "websocket_unavailable" } },
    { request: changesReq(pos(T0)), at: 1000, answer: changes([item("n", 1)], pos(T0 + 1000)) },
    { request: countsReq(), at: 1000, answer: ok(c(4, 4)) },
    { expect: { itemKeys: ["n", "a", "b", "c"], counts: c(4, 4) } },
    { request: changesReq(pos(T0 + 1000)), at: 2000, answer: NET },
    { expect: { status: "polling", lastError: "network" } },
    { request: changesReq(pos(T0 + 1000)), at: 4000, answer: NET },
    { request: changesReq(pos(T0 + 1000)), at: 8000, answer: changes() },
    { expect: { lastError: null, status: "polling", statusReason: "websocket_unavailable" } },
    { request: changesReq(pos(T0 + 1000)), at: 9000, answer: changes() },
  ],
});

vector("get-token-fails-polls", "getToken throws for 5 s: no request can be sent, status polling (reason token), the poll backs off; once a token comes, the poll pulls and the reconnect opens the socket: live, polling stops.", {
  persisted: persisted(),
  options: { live: true, pollMs: 1000, attempts: 0 },
  tokenErrors: [[0, 5000]],
  steps: [
    { call: "start" },
    { expect: { status: "polling", statusReason: "token", lastError: "token" } },
    { request: changesReq(), at: 7000, answer: changes() },
    { socket: "connect", token: "t1", at: 7500 },
    { socket: "open" },
    { request: changesReq(pos(T0)), at: 7500, answer: changes() },
    { quiet: 10_000 },
    { expect: { status: "live", statusReason: null, lastError: null } },
  ],
});

vector("upgrade-refused-polls-then-live", "The upgrade is refused: status polling (reason stream_refused), pulls every pollMs, reconnects with backoff (500, 1000 ms); the socket opens: live, a catch-up pull, no more polls.", {
  persisted: persisted(),
  options: { live: true, pollMs: 1000 },
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { socket: "connect", token: "t1", at: 0 },
    { socket: "refuse" },
    { expect: { status: "polling", statusReason: "stream_refused" } },
    { socket: "connect", token: "t1", at: 500 },
    { socket: "refuse" },
    { request: changesReq(pos(T0)), at: 1000, answer: changes() },
    { socket: "connect", token: "t1", at: 1500 },
    { socket: "open" },
    { request: changesReq(pos(T0)), at: 1500, answer: changes() },
    { quiet: 10_000 },
    { expect: { status: "live", statusReason: null, tokenCalls: [false] } },
  ],
});

vector("badge-pulls-then-counts", "Live: a badge newer than the store applies its counts and pulls; the pull applied an entry, so it ends with unread-count; an older badge is dropped without a pull.", {
  persisted: persisted(),
  options: { live: true },
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { socket: "connect", token: "t1" },
    { socket: "open" },
    { request: changesReq(pos(T0)), answer: changes() },
    { socket: "message", data: { type: "badge", unread: 4, unseen: 4, sync: pos(T0 + 2000) } },
    { request: changesReq(pos(T0)), answer: changes([item("n", 2)], pos(T0 + 2000)) },
    { request: countsReq(), answer: ok(c(4, 3)) },
    { expect: { itemKeys: ["n", "a", "b", "c"], counts: c(4, 3) } },
    { socket: "message", data: { type: "badge", unread: 9, unseen: 9, sync: pos(T0 + 1000) } },
    { quiet: 1000 },
    { expect: { counts: c(4, 3) } },
  ],
});

vector("live-false-polls", "live: false never opens a socket: status polling (no reason), a pull every pollMs.", {
  persisted: persisted(),
  options: { pollMs: 2000 },
  steps: [
    { call: "start" },
    { request: changesReq(), at: 0, answer: changes() },
    { expect: { status: "polling", statusReason: null } },
    { request: changesReq(pos(T0)), at: 2000, answer: changes() },
    { request: changesReq(pos(T0)), at: 4000, answer: changes() },
    { call: "stop" },
    { quiet: 10_000 },
    { expect: { status: "stopped" } },
  ],
});

// ---------------------------------------------------------------------------------------------
const files = Object.fromEntries(vectors.map((v) => [`${v.name}.json`, `${JSON.stringify(v, null, 2)}\n`]));
if (process.argv.includes("--check")) {
  const have = readdirSync(DIR).filter((f) => f.endsWith(".json")).sort();
  const want = Object.keys(files).sort();
  const stale = want.filter((f) => !have.includes(f) || readFileSync(path.join(DIR, f), "utf8") !== files[f]);
  const extra = have.filter((f) => !want.includes(f));
  if (stale.length || extra.length) {
    console.error(`transport vectors differ from make-transport-vectors.mjs: ${[...stale, ...extra].join(", ")}`);
    process.exit(1);
  }
} else {
  mkdirSync(DIR, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(DIR, f), text);
  console.log(`wrote ${Object.keys(files).length} transport vectors to ${DIR}`);
}
