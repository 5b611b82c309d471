// Calls to the worker: JSON in and out; an error body `{error:{code,message}}` becomes an
// ApiError carrying that code, so the page can say what went wrong.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

/** `fetch` a worker route; `token` adds `Authorization: Bearer`. Resolves to the parsed JSON. */
export async function call(path, { method = "GET", body, token } = {}) {
  const headers = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* reported below */ }
  if (!r.ok) {
    const e = json?.error ?? {};
    throw new ApiError(r.status, e.code ?? `http_${r.status}`, e.message ?? text.slice(0, 200));
  }
  return json;
}

/** Shows a value as text in `el` (never as HTML). */
export function say(el, text, isError = false) {
  el.textContent = text;
  el.classList.toggle("error", isError);
}

/** `<dl>` rows from `[term, value]` pairs; a value may be a Node. */
export function fillList(dl, rows) {
  dl.replaceChildren();
  for (const [k, v] of rows) {
    const dt = document.createElement("dt");
    dt.textContent = k;
    const dd = document.createElement("dd");
    if (v instanceof Node) dd.append(v); else dd.textContent = v ?? "—";
    dl.append(dt, dd);
  }
}

/** Country label: "FR (FRA)" or "open sea". */
export const countryLabel = (c) => (c ? `${c.alpha2} (${c.alpha3})` : "open sea");
