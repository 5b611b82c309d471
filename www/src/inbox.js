// The inbox half of the console: sign in with a user token, list newest first, badges, marks,
// category tabs, infinite scroll with the API's cursor, and a live unread badge.
//
// Live: the badge comes from the WebSocket `GET /v1/notifications/stream` (token in the
// subprotocol list, as browsers must); each push also pulls `changes` since the list's `sync`
// position. If the stream is refused (no hub configured) or drops, the page polls `changes`
// every few seconds while visible and reconnects with exponential backoff and full jitter
// (1 s → 30 s), as the API documents. Changed items move to the top (the list's order is
// revision, newest first); a tombstone `{itemKey, deleted: true}` removes its item. Counts come
// with every list page.

import { call, say } from "./api.js";

const $ = (id) => document.getElementById(id);
const PAGE = 20;
const POLL_MS = 3000;
/** The API's default categories (NotifyConfig); "archived" is the archive, not a category. */
export const CATEGORIES = ["home", "social", "creator", "system"];
const TABS = [["all", "All"], ...CATEGORIES.map((c) => [c, c[0].toUpperCase() + c.slice(1)]), ["archived", "Archived"]];

const state = {
  token: null, tab: "all", items: [], nextCursor: null, loading: false, sync: null,
  unread: null, unseen: null, timer: null, generation: 0, ws: null, live: false, attempt: 0,
};

const api = (path, opts = {}) => call(path, { ...opts, token: state.token });

function subOf(token) {
  try {
    const p = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof p.sub === "string" ? p.sub : null;
  } catch { return null; }
}

/** Sign in (also from a token kept for this tab's session). */
async function signIn(token) {
  state.token = token;
  say($("signin-status"), "Signing in…");
  try {
    await api("/v1/notifications?limit=1&counts=false");
  } catch (e) {
    state.token = null;
    say($("signin-status"), `Sign-in failed: ${e.message}`, true);
    return false;
  }
  sessionStorage.setItem("token", token);
  const sub = subOf(token);
  say($("signin-status"), `Signed in${sub ? ` as ${sub}` : ""}.`);
  $("sim-owner").value ||= sub ?? "";
  $("inbox").hidden = false;
  $("signout-btn").hidden = false;
  await reload();
  connect();
  schedule();
  return true;
}

function signOut() {
  sessionStorage.removeItem("token");
  Object.assign(state, { token: null, items: [], nextCursor: null, sync: null, unread: null, unseen: null });
  state.generation++;
  clearTimeout(state.timer);
  state.ws?.close(1000, "signed out");
  state.ws = null;
  $("inbox").hidden = true;
  $("signout-btn").hidden = true;
  $("items").replaceChildren();
  showCounts();
  say($("signin-status"), "Signed out.");
}

function listPath(cursor, limit = PAGE) {
  const q = new URLSearchParams({ limit: String(limit) });
  if (cursor) q.set("cursor", cursor);
  if (state.tab === "archived") q.set("archived", "true");
  else if (state.tab !== "all") q.set("category", state.tab);
  return `/v1/notifications?${q}`;
}

const matchesTab = (it) =>
  state.tab === "archived" ? it.archived : !it.archived && (state.tab === "all" || it.categoryType === state.tab);

/** Loads the first page again, as many items as are shown (so a refresh keeps the scroll). */
export async function reload() {
  const gen = ++state.generation;
  state.loading = true;
  try {
    const limit = Math.min(100, Math.max(PAGE, state.items.length));
    const page = await api(listPath(null, limit));
    if (gen !== state.generation) return;
    state.items = page.items;
    state.nextCursor = page.nextCursor;
    state.sync = page.sync;
    render();
    setCounts(page.counts);
  } catch (e) {
    say($("inbox-status"), e.message, true);
  } finally {
    if (gen === state.generation) state.loading = false;
  }
}

async function loadMore() {
  if (state.loading || !state.nextCursor) return;
  const gen = state.generation;
  state.loading = true;
  say($("inbox-status"), "Loading more…");
  try {
    const page = await api(listPath(state.nextCursor));
    if (gen !== state.generation) return;
    const have = new Set(state.items.map((i) => i.itemKey));
    state.items.push(...page.items.filter((i) => !have.has(i.itemKey)));
    state.nextCursor = page.nextCursor;
    render();
    say($("inbox-status"), "");
  } catch (e) {
    say($("inbox-status"), e.message, true);
  } finally {
    if (gen === state.generation) state.loading = false;
  }
}

/** Badge counts from a list page or a stream push. */
function setCounts(counts) {
  if (!counts) return;
  state.unread = counts.unread ?? null;
  state.unseen = counts.unseen ?? null;
  showCounts();
}

function showCounts() {
  const badge = $("badge");
  const n = state.unread;
  badge.hidden = !n;
  badge.textContent = n ? String(n) : "";
  badge.setAttribute("aria-label", n ? `${n} unread` : "");
  document.title = `${n ? `(${n}) ` : ""}edge-geo-notify console`;
  const parts = [];
  if (n !== null) parts.push(`${n} unread`);
  if (state.unseen !== null) parts.push(`${state.unseen} unseen`);
  $("counts-line").textContent = parts.join(" · ");
  $("counts-line").dataset.unread = n ?? "";
}

/** One round of live sync: every change since the last position, then the counts. */
export async function sync() {
  if (!state.token || state.sync === null) return;
  const gen = state.generation;
  try {
    let changed = false;
    for (;;) {
      const c = await api(`/v1/notifications/changes?limit=100&since=${encodeURIComponent(state.sync)}`);
      if (gen !== state.generation) return;
      // Only what falls inside the loaded window: an older item beyond it comes with the next
      // page (the feed may repeat recent entries, so membership is decided here, not by it).
      const floor = state.nextCursor ? Math.min(...state.items.map((x) => x.revision)) : -Infinity;
      for (const it of c.items) {
        const had = state.items.some((x) => x.itemKey === it.itemKey);
        state.items = state.items.filter((x) => x.itemKey !== it.itemKey);
        if (!it.deleted && matchesTab(it) && (had || it.revision >= floor)) state.items.push(it);
        changed ||= had || (!it.deleted && it.revision >= floor);
      }
      state.sync = c.sync;
      if (!c.hasMore) break;
    }
    if (changed) {
      state.items.sort((a, b) => b.revision - a.revision);
      render();
    }
    if (!state.live) setCounts((await api("/v1/notifications?limit=1")).counts);
  } catch (e) {
    say($("inbox-status"), `Live update failed: ${e.message}`, true);
  }
}

/** Polls while the stream is not connected (and the page is visible). */
function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(async () => {
    if (!state.live && document.visibilityState === "visible") await sync();
    if (state.token) schedule();
  }, POLL_MS);
}

/** The live badge stream; on a push, take its counts and pull the changed items. */
function connect() {
  if (!state.token || state.ws) return;
  const url = `${location.origin.replace(/^http/, "ws")}/v1/notifications/stream`;
  const ws = new WebSocket(url, ["inbox.v1", `auth.${state.token}`]);
  const gen = state.generation;
  state.ws = ws;
  ws.addEventListener("open", () => { state.live = true; state.attempt = 0; $("inbox").dataset.live = "stream"; });
  ws.addEventListener("message", (e) => {
    const m = JSON.parse(e.data);
    if (m.type !== "badge") return;
    setCounts(m);
    sync();
  });
  ws.addEventListener("close", () => {
    state.live = false;
    state.ws = null;
    $("inbox").dataset.live = "poll";
    if (!state.token || gen !== state.generation) return;
    // Full jitter: random(0, min(max, base · 2^attempt)); polling covers the gap.
    const delay = Math.random() * Math.min(30_000, 1000 * 2 ** state.attempt++);
    setTimeout(connect, delay);
  });
}

function render() {
  const ul = $("items");
  // Keep keyboard focus on the same control of the same item across re-renders.
  const f = document.activeElement?.closest?.("[data-key]") ? [document.activeElement.closest("[data-key]").dataset.key, document.activeElement.dataset.act] : null;
  ul.replaceChildren(...state.items.map(itemNode));
  if (f) ul.querySelector(`[data-key="${CSS.escape(f[0])}"] [data-act="${f[1]}"]`)?.focus();
  $("more").hidden = !state.nextCursor;
  if (!state.items.length) {
    const li = document.createElement("li");
    li.className = "empty";
    li.textContent = state.tab === "archived" ? "Nothing archived." : "No notifications.";
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

async function act(key, action) {
  const it = state.items.find((x) => x.itemKey === key);
  if (!it) return;
  try {
    if (action === "delete") {
      await api(`/v1/notifications/items/${encodeURIComponent(key)}`, { method: "DELETE" });
      state.items = state.items.filter((x) => x !== it);
    } else {
      const [flag, value] = { read: ["read", true], unread: ["read", false], archive: ["archived", true], unarchive: ["archived", false] }[action];
      await api("/v1/notifications/mark", { method: "POST", body: { itemKey: key, flag, value } });
      it[flag] = value;
      if (!matchesTab(it)) state.items = state.items.filter((x) => x !== it);
    }
    render();
    await sync();
  } catch (e) {
    say($("inbox-status"), e.message, true);
  }
}

/** "Mark all read" / "mark all seen": one bulk call. */
async function markAll(flag) {
  try {
    await api("/v1/notifications/bulk", { method: "POST", body: { action: flag } });
    for (const it of state.items) it[flag] = true;
    render();
    await sync();
  } catch (e) {
    say($("inbox-status"), e.message, true);
  }
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
    state.items = [];
    state.nextCursor = null;
    if (state.token) reload();
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
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") sync(); });
  const kept = sessionStorage.getItem("token");
  if (kept) { $("token").value = kept; signIn(kept); }
}
