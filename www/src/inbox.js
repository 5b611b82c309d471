// The inbox half of the console, on the TypeScript SDK (clients/ts): sign in with a user token;
// the SDK's InboxClient keeps the list (newest first, each item once), the counts and the live
// badge (WebSocket with the one cached token, full-jitter reconnect, a pull on reconnect and when
// the page becomes visible, polling while the stream is down); marks, archive, delete and
// "all read/seen" show at once, are sent once and in order, and roll back if the worker refuses
// them (the result says applied, queued or rejected). Each tab is one
// client with its own view (the inbox, one category, or the archive).

import { InboxClient } from "../../clients/ts/src/index.ts";
import { IndexedDbPersistence } from "../../clients/ts/src/indexeddb.ts";
import { call, say } from "./api.js";

const $ = (id) => document.getElementById(id);
const PAGE = 20;
const POLL_MS = 3000;
/** The API's default categories (NotifyConfig); "archived" is the archive, not a category. */
export const CATEGORIES = ["home", "social", "creator", "system"];
const TABS = [["all", "All"], ...CATEGORIES.map((c) => [c, c[0].toUpperCase() + c.slice(1)]), ["archived", "Archived"]];

const state = { token: null, tab: "all", client: null, offs: [], loading: false, switching: false };
/** Each view's inbox is kept in IndexedDB: a reload shows it at once and pulls only what changed. */
const DB = "edge-geo-notify-console";
let persistence = new IndexedDbPersistence(DB);

function subOf(token) {
  try {
    const p = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof p.sub === "string" ? p.sub : null;
  } catch { return null; }
}

/** Sign in (also from a token kept for this tab's session). */
async function signIn(token) {
  say($("signin-status"), "Signing in…");
  try {
    await call("/v1/notifications?limit=1&counts=false", { token });
  } catch (e) {
    say($("signin-status"), `Sign-in failed: ${e.message}`, true);
    return false;
  }
  state.token = token;
  sessionStorage.setItem("token", token);
  const sub = subOf(token);
  say($("signin-status"), `Signed in${sub ? ` as ${sub}` : ""}.`);
  $("sim-owner").value ||= sub ?? "";
  $("inbox").hidden = false;
  $("signout-btn").hidden = false;
  await open();
  return true;
}

/** The clients being closed, one after the other (see `close`). */
let closing = Promise.resolve();

/**
 * Stops the current client; resolves once its last state is saved. It first sends what that
 * client has queued: each view keeps its own queue, so an action taken just before a tab switch
 * (or a sign-out) would otherwise wait, unsent, until that tab is opened again, and the new tab
 * would read the server without it. Offline, the flush ends on the error and the queue stays
 * persisted.
 */
function close() {
  const c = state.client;
  const offs = state.offs;
  state.client = null;
  state.offs = [];
  // Chained: after quick switches (All → Archived → Home) every tab opened later waits for
  // every earlier client's flush, not only the last one's.
  if (c) {
    closing = closing.then(async () => {
      try { await c.flush(); } catch { /* offline: the queue stays persisted */ }
      try { await c.stop(); } finally { for (const off of offs) off(); }
    }).catch(() => {});
  }
  return closing;
}

async function signOut() {
  sessionStorage.removeItem("token");
  const stopped = close();
  state.token = null;
  $("inbox").hidden = true;
  $("signout-btn").hidden = true;
  $("items").replaceChildren();
  showCounts(null);
  say($("signin-status"), "Signed out.");
  await stopped;
  // Nothing of this user stays in the browser.
  await persistence.close();
  indexedDB.deleteDatabase(DB);
  persistence = new IndexedDbPersistence(DB);
}

/** Bumped by every open: a tab chosen while the previous one was closing wins. */
let opening = 0;

/** A client for the current tab, started (its first page loaded, its stream connecting). */
async function open() {
  const gen = ++opening;
  state.switching = true;
  const closed = close();
  render();
  await closed;
  if (gen !== opening) return;
  state.switching = false;
  if (!state.token) return render();
  const view = state.tab === "archived" ? { archived: true } : state.tab === "all" ? undefined : { category: state.tab };
  const token = state.token;
  const c = new InboxClient({ baseUrl: location.origin, getToken: () => token, view, pageSize: PAGE, pollMs: POLL_MS, persistence });
  state.client = c;
  state.offs = [
    c.store.subscribe(() => { if (state.client === c) { render(); showCounts(c.snapshot.counts); } }),
    c.on("status", (s) => { $("inbox").dataset.live = s === "live" ? "stream" : "poll"; }),
    c.on("error", (e, where) => say($("inbox-status"), `${where}: ${e.message}`, true)),
    c.on("rollback", (op, e) => say($("inbox-status"), `Not saved (${op.kind}): ${e.message}`, true)),
  ];
  try {
    await c.start();
  } catch (e) {
    if (state.client === c) say($("inbox-status"), e.message, true);
  }
}

/** Loads the first page again. */
export async function reload() {
  await state.client?.load().catch((e) => say($("inbox-status"), e.message, true));
}

/** One round of sync: every change since the store's position. */
export async function sync() {
  await state.client?.pull().catch((e) => say($("inbox-status"), `Live update failed: ${e.message}`, true));
}

async function loadMore() {
  const c = state.client;
  if (!c || state.loading || !c.snapshot.nextCursor) return;
  state.loading = true;
  say($("inbox-status"), "Loading more…");
  try {
    await c.loadMore();
    say($("inbox-status"), "");
  } catch (e) {
    say($("inbox-status"), e.message, true);
  } finally {
    state.loading = false;
  }
}

/** Badge counts (the SDK's: server counts with pending marks applied). */
function showCounts(counts) {
  const badge = $("badge");
  const n = counts?.unread ?? null;
  badge.hidden = !n;
  badge.textContent = n ? String(n) : "";
  badge.setAttribute("aria-label", n ? `${n} unread` : "");
  document.title = `${n ? `(${n}) ` : ""}edge-geo-notify console`;
  const parts = [];
  if (n !== null) parts.push(`${n} unread`);
  if (counts) parts.push(`${counts.unseen} unseen`);
  $("counts-line").textContent = parts.join(" · ");
  $("counts-line").dataset.unread = n ?? "";
}

function render() {
  const ul = $("items");
  // Keep keyboard focus on the same control of the same item across re-renders.
  const f = document.activeElement?.closest?.("[data-key]") ? [document.activeElement.closest("[data-key]").dataset.key, document.activeElement.dataset.act] : null;
  const snap = state.client?.snapshot;
  const items = snap?.items ?? [];
  ul.replaceChildren(...items.map(itemNode));
  if (f) ul.querySelector(`[data-key="${CSS.escape(f[0])}"] [data-act="${f[1]}"]`)?.focus();
  $("more").hidden = !snap?.nextCursor;
  if (!items.length) {
    const li = document.createElement("li");
    li.className = state.switching ? "loading" : "empty";
    li.textContent = state.switching ? "Loading…" : state.tab === "archived" ? "Nothing archived." : "No notifications.";
    ul.append(li);
  }
}

function itemNode(it) {
  const li = document.createElement("li");
  li.className = `item${it.read ? "" : " unread"}${it.seen ? "" : " unseen"}`;
  li.dataset.key = it.itemKey;
  const head = document.createElement("div");
  const p = document.createElement("p");
  p.className = "text";
  p.textContent = it.summary ?? "(no text)";
  head.append(p);
  const tag = (cls, text) => { const s = document.createElement("span"); s.className = `tag ${cls}`; s.textContent = text; return s; };
  if (!it.read) head.append(tag("unread", "Unread"));
  if (!it.seen) head.append(tag("unseen", "New"));
  const meta = document.createElement("div");
  meta.className = "meta";
  const when = new Date(it.createdTimeMsec);
  meta.textContent = `${it.categoryType} · ${it.itemKey} · ${it.originsCount} sender${it.originsCount === 1 ? "" : "s"} · ${when.toLocaleString()}`;
  const acts = document.createElement("div");
  acts.className = "actions";
  const btn = (act, label) => {
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.act = act;
    b.textContent = label;
    b.setAttribute("aria-label", `${label}: ${it.summary ?? it.itemKey}`);
    acts.append(b);
  };
  btn(it.read ? "unread" : "read", it.read ? "Mark unread" : "Mark read");
  btn(it.archived ? "unarchive" : "archive", it.archived ? "Unarchive" : "Archive");
  btn("delete", "Delete");
  li.append(head, meta, acts);
  return li;
}

/** A user action: shown at once by the SDK, rolled back (and reported) if refused. */
function act(key, action) {
  const c = state.client;
  if (!c) return;
  const done = action === "delete"
    ? c.remove(key)
    : c.mark(key, ...{ read: ["read", true], unread: ["read", false], archive: ["archived", true], unarchive: ["archived", false] }[action]);
  void done.then((r) => { if (r.outcome === "queued") say($("inbox-status"), "Offline: saved, will be sent when back online."); });
}

/** "Mark all read" / "mark all seen": one bulk call. */
function markAll(flag) {
  void state.client?.bulk(flag).then((r) => { if (r.outcome === "queued") say($("inbox-status"), "Offline: will be sent when back online."); });
}

function initTabs() {
  const list = $("tabs");
  for (const [id, label] of TABS) {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "tab");
    b.setAttribute("aria-controls", "panel");
    b.id = `tab-${id}`;
    b.dataset.tab = id;
    b.textContent = label;
    list.append(b);
  }
  const select = (id, focus) => {
    state.tab = id;
    for (const b of list.children) {
      const on = b.dataset.tab === id;
      b.setAttribute("aria-selected", String(on));
      b.tabIndex = on ? 0 : -1;
      if (on && focus) b.focus();
    }
    $("panel").setAttribute("aria-labelledby", `tab-${id}`);
    if (state.token) open(); else render();
  };
  list.addEventListener("click", (ev) => { const t = ev.target.closest("[role=tab]"); if (t) select(t.dataset.tab); });
  list.addEventListener("keydown", (ev) => {
    const ids = TABS.map((t) => t[0]);
    const i = ids.indexOf(state.tab);
    const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: ids.length - 1 }[ev.key];
    if (next === undefined) return;
    ev.preventDefault();
    select(ids[(next + ids.length) % ids.length], true);
  });
  select("all");
}

export function initInbox() {
  initTabs();
  $("signin").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    if (t) signIn(t);
  });
  $("signout-btn").addEventListener("click", signOut);
  $("items").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-act]");
    if (b) act(b.closest("[data-key]").dataset.key, b.dataset.act);
  });
  $("mark-all-read").addEventListener("click", () => markAll("read"));
  $("mark-all-seen").addEventListener("click", () => markAll("seen"));
  $("more").addEventListener("click", loadMore);
  new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) loadMore(); }).observe($("sentinel"));
  const kept = sessionStorage.getItem("token");
  if (kept) { $("token").value = kept; signIn(kept); }
}
