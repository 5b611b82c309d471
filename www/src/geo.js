// The geo half of the console: the map, one point, many points, and the "you" panel.

import { call, say, fillList, countryLabel } from "./api.js";
import { decodeOutline } from "./outline.js";
import { WorldMap } from "./map.js";
import { parsePoints, colourOf } from "./points.js";

const $ = (id) => document.getElementById(id);
const BATCH = 10_000; // the batch endpoint's limit per request

export async function initGeo() {
  const canvas = $("map");
  const status = $("map-status");
  let map = null;
  try {
    const r = await fetch("/www/outline.bin");
    if (!r.ok) throw new Error(`outline answered ${r.status}`);
    map = new WorldMap(canvas, decodeOutline(await r.arrayBuffer()));
    map.draw();
    say(status, "Click anywhere on the map.");
    canvas.dataset.ready = "true";
    // What bench/probes/console.mjs reads as "interactive": outline drawn, clicks handled.
    performance.mark("console-map-ready");
  } catch (e) {
    say(status, `Map unavailable: ${e.message}`, true);
  }

  const resolve = async (lat, lon) => {
    const out = $("point-out");
    say(out, "Resolving…");
    try {
      const a = await call(`/v1/geo/country?lat=${encodeURIComponent(lat)}&lon=${encodeURIComponent(lon)}`);
      // The zone under the country: the same request answers both.
      say(out, `${a.lat.toFixed(4)}, ${a.lon.toFixed(4)} → ${countryLabel(a.country)}\n${a.timeZone ?? ""}`);
      out.dataset.country = a.country?.alpha2 ?? "";
      out.dataset.timeZone = a.timeZone ?? "";
      if (map) {
        map.marker = [a.lat, a.lon];
        map.highlight = a.country?.alpha2 ?? null;
        canvas.dataset.highlight = map.highlight ?? "";
        map.draw();
      }
      say(status, `${a.lat.toFixed(4)}, ${a.lon.toFixed(4)}: ${countryLabel(a.country)}`);
    } catch (e) {
      say(out, e.message, true);
    }
  };

  canvas.addEventListener("click", (ev) => {
    if (!map) return;
    const box = canvas.getBoundingClientRect();
    const [lat, lon] = map.toLatLon(ev.clientX - box.left, ev.clientY - box.top);
    $("lat").value = lat.toFixed(4);
    $("lon").value = lon.toFixed(4);
    resolve(lat.toFixed(4), lon.toFixed(4));
  });
  $("point-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    resolve($("lat").value.trim(), $("lon").value.trim());
  });

  const runPoints = async (text) => {
    const st = $("points-status");
    let pts;
    try { pts = parsePoints(text); } catch (e) { say(st, e.message, true); return; }
    say(st, `Resolving ${pts.length} points…`);
    try {
      const results = [];
      for (let i = 0; i < pts.length; i += BATCH) {
        // Countries only: the counts table has no use for zones, so it does not pay for them.
        const a = await call("/v1/geo/country?fields=country", { method: "POST", body: { points: pts.slice(i, i + BATCH) } });
        results.push(...a.results);
      }
      // Answers are the points' countries (or null at sea), in request order.
      const counts = new Map();
      for (const c of results) {
        const k = c?.alpha2 ?? "";
        counts.set(k, (counts.get(k) ?? 0) + 1);
      }
      showCounts(counts);
      if (map) {
        map.points = results.map((c, i) => ({ lat: pts[i][0], lon: pts[i][1], alpha2: c?.alpha2 ?? null }));
        map.draw();
      }
      say(st, `${results.length} points in ${[...counts.keys()].filter(Boolean).length} countries.`);
    } catch (e) {
      say(st, e.message, true);
    }
  };
  $("points-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const f = $("points-file").files[0];
    runPoints(f ? await f.text() : $("points-text").value);
  });
  $("points-file").addEventListener("change", async () => {
    const f = $("points-file").files[0];
    if (f) runPoints(await f.text());
  });
  const zone = $("drop-zone");
  zone.addEventListener("dragover", (ev) => { ev.preventDefault(); zone.classList.add("dragging"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("dragging"));
  zone.addEventListener("drop", async (ev) => {
    ev.preventDefault();
    zone.classList.remove("dragging");
    const f = ev.dataTransfer.files[0];
    runPoints(f ? await f.text() : ev.dataTransfer.getData("text/plain"));
  });

  initYou();
}

function showCounts(counts) {
  const table = $("counts");
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const [k, n] of [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) {
    const tr = body.insertRow();
    tr.dataset.country = k;
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colourOf(k || null);
    const name = tr.insertCell();
    name.append(sw, k || "open sea");
    tr.insertCell().textContent = String(n);
  }
  table.hidden = false;
}

/** Every field of an `ipdb` object, so whatever the worker carries (version, source, licence,
 *  attribution) is shown; URLs become links. */
function ipdbRows(ipdb) {
  return Object.entries(ipdb ?? {}).filter(([, v]) => v !== null && typeof v !== "object").map(([k, v]) => {
    const s = String(v);
    if (/^https?:\/\//.test(s)) {
      const a = document.createElement("a");
      a.href = s; a.textContent = s; a.rel = "noopener";
      return [k, a];
    }
    return [k, s];
  });
}

let ipdbKnown = {};

/** Merges what an answer says about the IPDB into what is shown (a later answer wins). */
function showIpdb(fields) {
  if (!fields) return;
  const ipdb = (ipdbKnown = { ...ipdbKnown, ...fields });
  fillList($("ipdb"), ipdbRows(ipdb));
  // DB-IP's licence asks for a linked credit: `attribution` is `{text, url, license}`.
  const credit = typeof ipdb.attribution === "object" ? ipdb.attribution : null;
  const attr = credit?.text ?? ipdb.attribution ?? ipdb.license ?? ipdb.licence;
  const el = $("ipdb-attribution");
  el.replaceChildren();
  if (attr) {
    const url = credit?.url ?? ipdb.attribution_url ?? ipdb.url;
    if (url && /^https?:\/\//.test(url)) {
      const a = document.createElement("a");
      a.href = url; a.textContent = attr; a.rel = "noopener";
      el.append("IP data: ", a, ".");
    } else {
      el.append(`IP data: ${attr}.`);
    }
  }
}

async function initYou() {
  const [me, health] = await Promise.allSettled([
    call("/v1/geo/me"),
    fetch("/healthz").then((r) => r.json()),
  ]);
  if (me.status === "fulfilled") {
    const m = me.value;
    fillList($("me"), [
      ["Edge country", m.cf_country ?? "unknown"],
      ["Your IP", m.ip?.ip ?? "not given"],
      ["IPDB answer", m.ip ? m.ip.country ?? `none (${m.ip.reason ?? "not found"})` : "—"],
      ["Time zone", m.time_zone ? `${m.time_zone.name} (${m.time_zone.source === "edge" ? "edge" : "coordinates"})` : "unknown"],
      ["Agree", typeof m.agree === "boolean" ? (m.agree ? "yes" : "no") : `not comparable (${m.sources} source${m.sources === 1 ? "" : "s"})`],
    ]);
  } else {
    fillList($("me"), [["Error", me.reason.message]]);
  }
  // The health fragment says how the IPDB is kept; the answers' own `ipdb` says which one
  // answered (it wins where both have a field).
  showIpdb({
    ...(health.status === "fulfilled" ? health.value?.ipdb : {}),
    ...(me.status === "fulfilled" ? me.value.ipdb : {}),
  });
  $("ip-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("ip-out");
    try {
      const a = await call(`/v1/geo/ip?ip=${encodeURIComponent($("ip").value.trim())}`);
      say(out, `${a.ip} → ${a.country ?? `no country (${a.reason ?? "not found"})`}`);
      showIpdb(a.ipdb);
    } catch (e) {
      say(out, e.message, true);
    }
  });
}
