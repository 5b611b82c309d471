// The inbox half of the console: sign in with a user token, list newest first, badges, marks,
// category tabs, infinite scroll with the API's cursor, and a live unread badge.
//
// Live: `GET /v1/notifications/changes?since=REV` is polled while the page is visible (the API
// has no push stream yet), and right after anything this page itself changed. Changed items
// move to the top (the list's order is revision, newest first); a tombstone
// `{itemKey, deleted: true}` removes its item. Counts come from the list answer's `counts` when
// the API sends them, else from `GET /v1/notifications/unread-count`.

import { call, say } from "./api.js";

const $ = (id) => document.getElementById(id);
const PAGE = 20;
const POLL_MS = 3000;
/** The API's default categories (NotifyConfig); "archived" is the archive, not a category. */
export const CATEGORIES = ["home", "social", "creator", "system"];
const TABS = [["all", "All"], ...CATEGORIES.map((c) => [c, c[0].toUpperCase() + c.slice(1)]), ["archived", "Archived"]];

const state = {
  token: null, tab: "all", items: [], nextCursor: null, loading: false, rev: 0,
  unread: null, unseen: null, hasCounts: false, timer: null, generation: 0,
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
    await api("/v1/notifications/unread-count");
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
  schedule();
  return true;
}

function signOut() {
  sessionStorage.removeItem("token");
  Object.assign(state, { token: null, items: [], nextCursor: null, rev: 0, unread: null, unseen: null });
  state.generation++;
  clearTimeout(state.timer);
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
    for (const it of page.items) state.rev = Math.max(state.rev, it.revision);
    render();
    await updateCounts(page);
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

/** Counts from a list answer's `counts` when the API sends them, else the unread-count route. */
async function updateCounts(page) {
  if (page) state.hasCounts = Boolean(page.counts);
  let counts = page?.counts;
  if (!counts) {
    counts = state.hasCounts
      ? (await api("/v1/notifications?limit=1")).counts
      : await api("/v1/notifications/unread-count");
  }
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

/** One round of live sync: changed items since the last revision, then the counts. */
export async function sync() {
  if (!state.token) return;
  const gen = state.generation;
  try {
    let changed = false;
    for (;;) {
      const c = await api(`/v1/notifications/changes?since=${state.rev}&limit=100`);
      if (gen !== state.generation) return;
      for (const it of c.items) {
        changed = true;
        state.items = state.items.filter((x) => x.itemKey !== it.itemKey);
        if (!it.deleted && matchesTab(it)) state.items.push(it);
        if (typeof it.revision === "number") state.rev = Math.max(state.rev, it.revision);
      }
      state.rev = Math.max(state.rev, c.revision ?? 0);
      if (c.items.length < 100) break;
    }
    if (changed) {
      state.items.sort((a, b) => b.revision - a.revision);
      render();
    }
    await updateCounts();
  } catch (e) {
    say($("inbox-status"), `Live update failed: ${e.message}`, true);
  }
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(async () => {
    if (document.visibilityState === "visible") await sync();
    if (state.token) schedule();
  }, POLL_MS);
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
    await updateCounts();
  } catch (e) {
    say($("inbox-status"), e.message, true);
  }
}

async function markAll(flag) {
  try {
    await api("/v1/notifications/mark", { method: "POST", body: { all: true, flag, value: true } });
    for (const it of state.items) it[flag] = true;
    render();
    await updateCounts();
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
