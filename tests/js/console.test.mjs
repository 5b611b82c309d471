// The web console end to end: Chromium (driven by playwright-core) against the real
// worker in workerd and the real local stack. Every test fails on a console error, an uncaught
// page error, a failed request or an HTTP error status seen by the page. Screenshots (desktop
// and phone width) go to target/console-e2e/ (git-ignored), as test artifacts.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync, existsSync } from "node:fs";
import path from "node:path";
import { chromium } from "playwright-core";
import { startWorker, AUTH, ROOT, userToken, asUser } from "./harness.mjs";
import { startStack } from "./stack.mjs";

// Debian's chromium (scripts/setup.sh installs it there); on macOS Homebrew's cask, if present.
const CANDIDATES = [process.env.CHROMIUM_BIN, "/usr/bin/chromium", "/Applications/Chromium.app/Contents/MacOS/Chromium"];
const CHROMIUM = CANDIDATES.find((p) => p && existsSync(p));
// Linux (and CI) must have it: setup installs it, so its absence is a failure. Elsewhere the
// browser tests are skipped with a message saying how to get them.
const SKIP = !CHROMIUM && process.platform !== "linux"
  ? "no Chromium found: brew install --cask chromium (or set CHROMIUM_BIN) to run the console's browser tests"
  : false;
const browserTest = (name, fn) => test(name, { skip: SKIP }, fn);
const ARTIFACTS = path.join(ROOT, "target/console-e2e");
const SERVICE_KEY = "console-e2e-service-key-0123456789";
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
const WAIT = { timeout: 15_000 };

let stack, w, browser;

before(async () => {
  if (SKIP) return console.log(`# console tests skipped: ${SKIP}`);
  if (!CHROMIUM) throw new Error(`chromium missing (looked for ${CANDIDATES.filter(Boolean).join(", ")}): run bash scripts/setup.sh`);
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack();
  w = await startWorker({
    bindings: { ...stack.bindings, ...AUTH, SERVICE_KEYS: "console:notify:write", SERVICE_KEY_CONSOLE: SERVICE_KEY },
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  await w?.stop();
  await stack?.stop();
});

/** A page that records every console error, page error, failed request and 4xx/5xx answer. */
async function open(viewport = DESKTOP) {
  const page = await browser.newPage({ viewport });
  const problems = [];
  page.on("console", (m) => { if (m.type() === "error") problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`); });
  await page.goto(`${w.base}/`);
  await page.waitForSelector("#map[data-ready=true]", WAIT);
  return { page, problems };
}

/** Clicks the map where (lat, lon) is drawn, from the canvas's own box. */
async function clickMap(page, lat, lon) {
  const box = await page.locator("#map").boundingBox();
  await page.mouse.click(box.x + ((lon + 180) / 360) * box.width, box.y + ((90 - lat) / 180) * box.height);
}

browserTest("the console page and its files carry the CSP; nothing else under /www is reachable", async () => {
  for (const p of ["/", "/www/app.js", "/www/console.css", "/www/outline.bin"]) {
    const r = await fetch(w.base + p);
    assert.equal(r.status, 200, p);
    const csp = r.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'(;|$)/, p);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, p);
    await r.arrayBuffer();
  }
  const html = await (await fetch(`${w.base}/`)).text();
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/i, "no inline script");
  assert.doesNotMatch(html, /\son[a-z]+=/i, "no inline handlers");
  for (const p of ["/www/index.bin", "/www/default.mmdb", "/www/..%2Fmanifest.json", "/www/nope.js"]) {
    const r = await fetch(w.base + p);
    assert.equal(r.status, 404, p);
    assert.equal((await r.json()).error.code, "not_found", p);
  }
});

browserTest("click a known point: coordinates, the worker's country and its highlighted outline", async () => {
  const { page, problems } = await open();
  // Interior points, far from any border at this map's scale (1 px ≈ 0.3°).
  for (const [lat, lon, want] of [[-10, -55, "BR"], [-25, 134, "AU"], [62, 95, "RU"]]) {
    await clickMap(page, lat, lon);
    await page.waitForFunction((c) => document.getElementById("point-out").dataset.country === c, want, WAIT);
    const shown = [Number(await page.inputValue("#lat")), Number(await page.inputValue("#lon"))];
    assert.ok(Math.abs(shown[0] - lat) < 0.5 && Math.abs(shown[1] - lon) < 0.5, `clicked ${lat},${lon}, shown ${shown}`);
    assert.match(await page.textContent("#point-out"), new RegExp(`→ ${want} \\(`));
    assert.equal(await page.getAttribute("#map", "data-highlight"), want);
    // The country's fill is the highlight colour a few pixels from the click (the marker is at it).
    const px = await page.evaluate(([la, lo]) => {
      const c = document.getElementById("map");
      const x = Math.round(((lo + 180) / 360) * c.width) + 14, y = Math.round(((90 - la) / 180) * c.height) + 14;
      return [...c.getContext("2d").getImageData(x, y, 1, 1).data];
    }, [lat, lon]);
    assert.deepEqual(px.slice(0, 3), [0xf4, 0xa2, 0x61], `highlight fill at ${want}`);
    // The page shows what the API answers for the coordinates it shows.
    const api = await w.get(`/v1/geo/country?lat=${shown[0]}&lon=${shown[1]}`);
    assert.equal(api.body.country?.alpha2, want);
    // The zone under the country, from the same answer.
    assert.equal(await page.getAttribute("#point-out", "data-time-zone"), api.body.timeZone);
    assert.ok((await page.textContent("#point-out")).endsWith(api.body.timeZone), "zone shown under the country");
  }
  // The keyboard path: the form resolves the Vatican (an enclave drawn over Italy).
  await page.fill("#lat", "41.9029");
  await page.fill("#lon", "12.4534");
  await page.press("#lon", "Enter");
  await page.waitForFunction(() => document.getElementById("point-out").dataset.country === "VA", null, WAIT);
  await page.screenshot({ path: path.join(ARTIFACTS, "map-desktop.png"), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

browserTest("you panel: edge country, IPDB answer and version; IP lookup", async () => {
  const { page, problems } = await open();
  await page.waitForFunction(() => !document.getElementById("me").textContent.includes("Loading"), null, WAIT);
  const rows = async (id) => Object.fromEntries(await page.$$eval(`#${id} dt`, (dts) => dts.map((d) => [d.textContent, d.nextElementSibling.textContent])));
  const me = (await w.get("/v1/geo/me")).body;
  const shown = await rows("me");
  assert.equal(shown["Edge country"], me.cf_country);
  assert.equal(me.cf_country, "GB", "the harness's request.cf");
  const ipdb = await rows("ipdb");
  assert.equal(ipdb.version, me.ipdb.version);
  assert.equal(ipdb.source, me.ipdb.source);
  // The bundled DB-IP Lite data asks for a linked credit (CC BY 4.0).
  const credit = me.ipdb.attribution;
  assert.ok(credit?.text && credit?.url, JSON.stringify(me.ipdb));
  assert.equal(await page.textContent("#ipdb-attribution a"), credit.text);
  assert.equal(await page.getAttribute("#ipdb-attribution a", "href"), credit.url);
  await page.fill("#ip", "8.8.8.8");
  await page.press("#ip", "Enter");
  await page.waitForFunction(() => document.getElementById("ip-out").textContent.startsWith("8.8.8.8 →"), null, WAIT);
  const api = (await w.get("/v1/geo/ip?ip=8.8.8.8")).body;
  assert.equal(await page.textContent("#ip-out"), `8.8.8.8 → ${api.country ?? `no country (${api.reason ?? "not found"})`}`);
  assert.deepEqual(problems, []);
  await page.close();
});

browserTest("load a point file and a pasted GeoJSON: resolved in a batch, counted per country", async () => {
  const { page, problems } = await open();
  const csv = path.join(ARTIFACTS, "points.csv");
  writeFileSync(csv, [
    "name,lat,lon", "Paris,48.8566,2.3522", "Lyon,45.764,4.8357", "Marseille,43.2965,5.3698",
    "São Paulo,-23.5505,-46.6333", "Brasília,-15.7939,-47.8828", "mid-Pacific,0,-140",
  ].join("\n"));
  await page.setInputFiles("#points-file", csv);
  await page.waitForSelector("#counts:not([hidden]) tbody tr", WAIT);
  const counts = () => page.$$eval("#counts tbody tr", (rows) => rows.map((r) => [r.dataset.country, Number(r.cells[1].textContent)]));
  assert.deepEqual(await counts(), [["FR", 3], ["BR", 2], ["", 1]]);
  await page.screenshot({ path: path.join(ARTIFACTS, "points-desktop.png") });
  assert.match(await page.textContent("#points-status"), /^6 points in 2 countries/);

  const geojson = {
    type: "FeatureCollection",
    features: [[139.69, 35.69], [135.5, 34.69], [-0.1276, 51.5072]].map((c) => ({ type: "Feature", properties: {}, geometry: { type: "Point", coordinates: c } })),
  };
  await page.setInputFiles("#points-file", []);
  await page.fill("#points-text", JSON.stringify(geojson));
  await page.click("#points-form button");
  await page.waitForFunction(() => document.querySelector("#counts tbody tr")?.dataset.country === "JP", null, WAIT);
  assert.deepEqual(await counts(), [["JP", 2], ["GB", 1]]);

  // Dropped on the map: a file, as a browser delivers it.
  const dt = await page.evaluateHandle(() => {
    const d = new DataTransfer();
    d.items.add(new File(["lat,lon\n-33.87,151.21\n-37.81,144.96\n"], "drop.csv", { type: "text/csv" }));
    return d;
  });
  await page.dispatchEvent("#drop-zone", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => document.querySelector("#counts tbody tr")?.dataset.country === "AU", null, WAIT);
  assert.deepEqual(await counts(), [["AU", 2]]);
  assert.deepEqual(problems, []);
  await page.close();
});

browserTest("inbox: sign in, simulate events, merged text, live badge, retract, mark read, all read, archive", async () => {
  const { page, problems } = await open();
  const owner = `console-${Date.now()}`;
  const badge = async () => ((await page.isVisible("#badge")) ? Number(await page.textContent("#badge")) : 0);
  const waitBadge = (n) => page.waitForFunction((n) => {
    const b = document.getElementById("badge");
    return (b.hidden ? 0 : Number(b.textContent)) === n;
  }, n, WAIT);
  const text = (key) => page.textContent(`#items [data-key="${key}"] .text`);
  const waitText = (key, re) => page.waitForFunction(([k, src]) => new RegExp(src).test(document.querySelector(`#items [data-key="${k}"] .text`)?.textContent ?? ""), [key, re.source], WAIT);

  await page.fill("#token", userToken(owner));
  await page.click("#signin-btn");
  await page.waitForSelector("#inbox:not([hidden])", WAIT);
  assert.match(await page.textContent("#signin-status"), new RegExp(`as ${owner}`));
  await page.waitForSelector("#items .empty", WAIT);
  assert.equal(await badge(), 0);

  assert.equal(await page.isVisible("#simulate"), false, "no simulate panel without a service key");
  await page.click("#simulate-box summary");
  await page.fill("#service-key", SERVICE_KEY);
  await page.waitForSelector("#simulate:not([hidden])", WAIT);
  assert.equal(await page.inputValue("#sim-owner"), owner);

  await page.fill("#sim-item", "post:1");
  await page.fill("#sim-sender", "Zoe");
  await page.click("#sim-create");
  await waitText("post:1", /^Zoe liked your post/);
  await waitBadge(1);

  await page.fill("#sim-burst", "3");
  await page.click("#sim-burst-btn");
  await waitText("post:1", /^\S+ and 3 others liked your post/);
  assert.equal(await page.locator("#items .item").count(), 1, "the burst merged into one item");
  assert.equal(await badge(), 1);

  await page.fill("#sim-item", "post:2");
  await page.selectOption("#sim-type", "comment");
  await page.click("#sim-create");
  await waitText("post:2", /^Zoe commented on your post/);
  await waitBadge(2);
  const keys = () => page.$$eval("#items .item", (li) => li.map((x) => x.dataset.key));
  assert.deepEqual(await keys(), ["post:2", "post:1"], "newest first");
  assert.ok(await page.isVisible('#items [data-key="post:2"] .tag.unread'));
  assert.ok(await page.isVisible('#items [data-key="post:2"] .tag.unseen'));

  await page.fill("#sim-item", "post:1");
  await page.click("#sim-retract");
  await waitText("post:1", /^\S+ and 2 others liked your post/);

  await page.click('#items [data-key="post:1"] [data-act="read"]');
  await waitBadge(1);
  // The badge and the list re-render separately: wait for the tag to go, do not sample it.
  await page.waitForSelector('#items [data-key="post:1"] .tag.unread', { state: "hidden" });
  await page.screenshot({ path: path.join(ARTIFACTS, "inbox-desktop.png"), fullPage: true });

  // "All read" is held on the wire while post:2 is archived and the tab switched twice: the
  // archive waits behind it in the All tab's queue, and each tab is its own client with its own
  // queue, so the switches must send it before the Archived tab reads the server. (On a loaded
  // CI machine the request was slow by itself, the archive stayed queued, and the tab was empty.)
  let release, arrived, sent;
  const held = new Promise((r) => { release = r; });
  const onWire = new Promise((r) => { arrived = r; });
  const passed = new Promise((r) => { sent = r; });
  await page.route("**/v1/notifications/bulk", async (route) => { arrived(); await held; await route.continue(); sent(); });
  await page.click("#mark-all-read");
  await waitBadge(0);
  assert.match(await page.textContent("#counts-line"), /^0 unread/);
  await onWire;

  await page.click('#items [data-key="post:2"] [data-act="archive"]');
  await page.waitForFunction(() => !document.querySelector('#items [data-key="post:2"]'), null, WAIT);
  assert.deepEqual(await keys(), ["post:1"]);
  // Through another tab on the way: the first switch must send the archive. (Had the Archived
  // tab read before it landed, the live badge would still bring the item; the console waits.)
  await page.click("#tab-home");
  await page.click("#tab-archived");
  release();
  await passed;
  await page.unroute("**/v1/notifications/bulk");
  await page.waitForSelector('#items [data-key="post:2"]', WAIT);
  assert.deepEqual(await keys(), ["post:2"]);

  // What the page shows is what the API holds.
  const r = await fetch(`${w.base}/v1/notifications?archived=true`, { headers: asUser(owner) });
  const archived = (await r.json()).items;
  assert.deepEqual(archived.map((i) => [i.itemKey, i.archived, i.read]), [["post:2", true, true]]);
  const inbox = (await (await fetch(`${w.base}/v1/notifications`, { headers: asUser(owner) })).json()).items;
  assert.deepEqual(inbox.map((i) => [i.itemKey, i.originsCount, i.read]), [["post:1", 3, true]]);
  assert.equal(await text("post:2"), archived[0].summary);

  await page.click('#items [data-key="post:2"] [data-act="delete"]');
  await page.waitForSelector("#items .empty", WAIT);

  // Live: an event sent by someone else shows up with the badge, with no action on the page.
  // The page polls only while its stream is down, so with the stream up this is the push path.
  await page.click("#tab-all");
  await page.waitForSelector('#items [data-key="post:1"]', WAIT);
  await page.waitForSelector('#inbox[data-live="stream"]', WAIT);
  const r3 = await w.post("/v1/notifications/events", {
    owner, itemKey: "post:3", serviceType: "e2e", categoryType: "system", notificationType: "mention",
    templateType: "default", eventId: `live-${owner}`, sender: { id: "outside", name: "Yara" }, createdTimeMsec: Date.now(),
  }, { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" });
  assert.equal(r3.status, 201);
  await waitText("post:3", /^Yara mentioned you/);
  await waitBadge(1);
  assert.deepEqual(await keys(), ["post:3", "post:1"]);
  assert.deepEqual(problems, []);

  // A reload signs in again from the tab's session: the SDK shows the inbox kept in IndexedDB
  // and pulls only the changes since its position (no list page is requested for it).
  const paths = [];
  page.on("request", (q) => { const u = new URL(q.url()); paths.push(u.pathname + u.search); });
  problems.length = 0;
  await page.reload();
  await page.waitForSelector('#inbox[data-live="stream"]', WAIT);
  await page.waitForFunction(() => [...document.querySelectorAll("#items .item")].map((x) => x.dataset.key).join() === "post:3,post:1", null, WAIT);
  await page.waitForFunction(() => document.getElementById("badge").textContent === "1", null, WAIT);
  assert.ok(paths.some((u) => u.startsWith("/v1/notifications/changes?since=")), `a change-feed pull: ${paths.join(" ")}`);
  assert.deepEqual(paths.filter((u) => u.startsWith("/v1/notifications?") && u !== "/v1/notifications?limit=1&counts=false"), [], "no list page");
  // The reload itself may abort a request still in flight; anything else is a problem.
  assert.deepEqual(problems.filter((p) => !p.includes("ERR_ABORTED")), []);
  await page.close();
});

browserTest("inbox: infinite scroll follows the API's cursor; category tabs filter", async () => {
  const owner = `scroll-${Date.now()}`;
  const service = { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" };
  const events = Array.from({ length: 45 }, (_, i) => ({
    owner, itemKey: `item:${i}`, serviceType: "e2e", categoryType: i % 3 === 0 ? "home" : "social",
    notificationType: "follow", templateType: "default", eventId: `scroll-${owner}-${i}`,
    sender: { id: `s${i}`, name: `Sender ${i}` }, createdTimeMsec: Date.now() - 45 + i,
  }));
  for (let i = 0; i < events.length; i += 9) {
    const rs = await Promise.all(events.slice(i, i + 9).map((ev) => w.post("/v1/notifications/events", ev, service)));
    for (const r of rs) assert.equal(r.status, 201, JSON.stringify(r.body));
  }
  const { page, problems } = await open();
  await page.fill("#token", userToken(owner));
  await page.click("#signin-btn");
  await page.waitForSelector("#items .item", WAIT);
  const count = () => page.locator("#items .item").count();
  assert.equal(await count(), 20, "one page of 20");
  // Scrolling the end of the list into view loads the next pages, until the cursor runs out.
  for (const want of [40, 45]) {
    await page.locator("#sentinel").scrollIntoViewIfNeeded();
    await page.waitForFunction((n) => document.querySelectorAll("#items .item").length === n, want, WAIT);
    await page.evaluate(() => window.scrollTo(0, 0));
  }
  assert.equal(await page.isVisible("#more"), false, "no cursor left");
  const shown = await page.$$eval("#items .item", (li) => li.map((x) => x.dataset.key));
  // The API's order (revision, newest first: the write order, which parallel sends interleave).
  const api = await (await fetch(`${w.base}/v1/notifications?limit=100`, { headers: asUser(owner) })).json();
  assert.deepEqual(shown, api.items.map((i) => i.itemKey), "the API's order, each once");
  assert.deepEqual([...shown].sort(), events.map((e) => e.itemKey).sort());
  await page.waitForFunction(() => document.getElementById("badge").textContent === "45", null, WAIT);

  await page.click("#tab-home");
  await page.waitForFunction(() => document.querySelectorAll("#items .item").length === 15, null, WAIT);
  assert.deepEqual(
    await page.$$eval("#items .item .meta", (m) => [...new Set(m.map((x) => x.textContent.split(" · ")[0]))]),
    ["home"],
  );
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.getAttribute("#tab-social", "aria-selected"), "true", "arrow keys move between tabs");
  await page.waitForFunction(() => document.querySelectorAll("#items .item").length === 20, null, WAIT);
  assert.deepEqual(problems, []);
  await page.close();
});

browserTest("phone width: no horizontal scrolling, map and inbox usable", async () => {
  const { page, problems } = await open(PHONE);
  // Keyboard: the first Tab lands on the skip link, with a visible focus ring.
  await page.keyboard.press("Tab");
  const ring = await page.evaluate(() => {
    const a = document.activeElement;
    return [a.textContent, getComputedStyle(a).outlineStyle, parseFloat(getComputedStyle(a).outlineWidth)];
  });
  assert.equal(ring[0], "Skip to content");
  assert.ok(ring[1] === "solid" && ring[2] >= 2, `focus ring ${ring}`);

  // Every form control has a label.
  assert.deepEqual(await page.$$eval("input, select, textarea", (els) => els.filter((e) => !e.labels?.length).map((e) => e.id)), []);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `page is ${overflow}px wider than the phone`);
  const box = await page.locator("#map").boundingBox();
  assert.ok(box.width >= PHONE.width - 40 && Math.abs(box.width / box.height - 2) < 0.02, `map box ${JSON.stringify(box)}`);
  await clickMap(page, -10, -55);
  await page.waitForFunction(() => document.getElementById("point-out").dataset.country === "BR", null, WAIT);
  await page.screenshot({ path: path.join(ARTIFACTS, "map-phone.png"), fullPage: true });

  const owner = `phone-${Date.now()}`;
  const r = await w.post("/v1/notifications/events", {
    owner, itemKey: "phone:1", serviceType: "e2e", categoryType: "social", notificationType: "like",
    templateType: "default", eventId: `phone-${owner}`, sender: { id: "p1", name: "Pia" }, createdTimeMsec: Date.now(),
  }, { authorization: `Bearer ${SERVICE_KEY}`, "content-type": "application/json" });
  assert.equal(r.status, 201);
  await page.fill("#token", userToken(owner));
  await page.click("#signin-btn");
  await page.waitForSelector('#items [data-key="phone:1"]', WAIT);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth), "inbox fits");
  await page.locator("#inbox-section").screenshot({ path: path.join(ARTIFACTS, "inbox-phone.png") });
  assert.deepEqual(problems, []);
  await page.close();
});
