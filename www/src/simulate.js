// "Simulate events": with a service key, send creates, bursts and retractions for the
// signed-in user, so merging, retraction and the live badge can be watched.

import { call, say } from "./api.js";
import { CATEGORIES, reload, sync } from "./inbox.js";

const $ = (id) => document.getElementById(id);
const NAMES = ["Ana", "Ben", "Chloé", "Dmitri", "Eun-ji", "Farid", "Gita", "Hugo", "Ines", "Jun"];
/** Senders this page has sent per item, newest last (what "retract" removes). */
const senders = new Map();
let seq = 0;

const key = () => $("service-key").value.trim();
const rid = () => `${Date.now().toString(36)}-${(seq++).toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

function event(name) {
  const itemKey = $("sim-item").value.trim();
  const id = `sim-${rid()}`;
  return {
    owner: $("sim-owner").value.trim(),
    itemKey,
    serviceType: "console",
    categoryType: $("sim-category").value,
    notificationType: $("sim-type").value,
    templateType: "default",
    eventId: `ev-${rid()}`,
    sender: { id, name },
    createdTimeMsec: Date.now(),
  };
}

async function send(events) {
  const st = $("sim-status");
  say(st, `Sending ${events.length}…`);
  const out = await Promise.allSettled(events.map((ev) =>
    call("/v1/notifications/events", { method: "POST", body: ev, token: key() }).then((r) => {
      const list = senders.get(ev.itemKey) ?? [];
      list.push(ev.sender.id);
      senders.set(ev.itemKey, list);
      return r;
    })));
  const failed = out.filter((o) => o.status === "rejected");
  const results = out.filter((o) => o.status === "fulfilled").map((o) => o.value.status ?? "ok");
  say(st, failed.length ? `${failed.length} failed: ${failed[0].reason.message}` : `Sent: ${summarise(results)}.`, failed.length > 0);
  await sync();
}

const summarise = (rs) => Object.entries(rs.reduce((m, r) => ({ ...m, [r]: (m[r] ?? 0) + 1 }), {}))
  .map(([r, n]) => `${n} ${r}`).join(", ");

async function retract() {
  const st = $("sim-status");
  const itemKey = $("sim-item").value.trim();
  const list = senders.get(itemKey) ?? [];
  const senderId = list.pop();
  if (!senderId) { say(st, `No sender sent from this page to ${itemKey} yet.`, true); return; }
  try {
    const r = await call("/v1/notifications/retractions", {
      method: "POST", token: key(), body: { owner: $("sim-owner").value.trim(), itemKey, senderId },
    });
    say(st, `Retracted: ${r.status ?? "ok"}.`);
  } catch (e) {
    list.push(senderId);
    say(st, e.message, true);
  }
  // A retraction may not move the item's revision, so the shown pages are read again.
  await reload();
}

export function initSimulate() {
  const sel = $("sim-category");
  for (const c of CATEGORIES) sel.append(new Option(c, c, c === "social", c === "social"));
  const toggle = () => { $("simulate").hidden = !key(); };
  $("service-key").addEventListener("input", toggle);
  toggle();
  $("simulate").addEventListener("submit", (ev) => {
    ev.preventDefault();
    send([event($("sim-sender").value.trim() || NAMES[0])]);
  });
  $("sim-burst-btn").addEventListener("click", () => {
    const n = Math.min(50, Math.max(2, Number($("sim-burst").value) || 5));
    send(Array.from({ length: n }, (_, i) => event(NAMES[(i + 1) % NAMES.length])));
  });
  $("sim-retract").addEventListener("click", retract);
}
