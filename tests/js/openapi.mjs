// Validates the worker's answers against its own OpenAPI 3.1 document (GET /openapi.json).
//
//   const v = compileDocument(doc);
//   v.validateResponse("GET", url, status, headers, bodyText);   // throws on any violation
//
// Checked for every answer: the (path, method, status) is documented (an unknown path must be
// the 404 of `#/components/responses/NotFound`, a known path under an undocumented method the 405
// of `#/components/responses/MethodNotAllowed` whose `Allow` lists exactly the path's methods);
// required response headers are present and match their schema; the content type is one the
// response documents; a JSON body validates against its schema (Ajv, JSON Schema 2020-12).
import Ajv2020 from "ajv/dist/2020.js";

const COMPONENTS_ID = "https://openapi.local/components.json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

export class OpenApiViolation extends Error {
  constructor(message) {
    super(message);
    this.name = "OpenApiViolation";
  }
}

// `#/components/schemas/X` → an absolute reference into one schema holding every component.
function rewriteRefs(v) {
  if (Array.isArray(v)) return v.map(rewriteRefs);
  if (v && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      out[k] = k === "$ref" && typeof x === "string" && x.startsWith("#/components/schemas/")
        ? `${COMPONENTS_ID}#/$defs/${x.slice("#/components/schemas/".length)}`
        : rewriteRefs(x);
    }
    return out;
  }
  return v;
}

function resolve(doc, obj) {
  // Response objects may be `$ref`s to `#/components/responses/…`.
  let seen = 0;
  while (obj && obj.$ref) {
    if (++seen > 8) throw new Error(`ref loop at ${obj.$ref}`);
    obj = obj.$ref.slice(2).split("/").reduce((o, k) => o?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  }
  return obj;
}

function templateMatcher(template) {
  const segs = template.split("/");
  return (path) => {
    const got = path.split("/");
    if (got.length !== segs.length) return false;
    return segs.every((s, i) => (s.startsWith("{") ? got[i] !== "" : s === got[i]));
  };
}

function mediaType(headers) {
  const ct = headers.get("content-type");
  return ct ? ct.split(";")[0].trim().toLowerCase() : null;
}

const short = (text, n = 400) => (text.length > n ? `${text.slice(0, n)}…` : text);

/** Compiles every schema of the document once; returns `{ doc, validateResponse, operations }`. */
export function compileDocument(doc) {
  if (doc?.openapi !== "3.1.0") throw new OpenApiViolation(`not an OpenAPI 3.1.0 document: openapi=${doc?.openapi}`);
  // OpenAPI's numeric formats (https://spec.openapis.org/oas/v3.1.0#data-types), checked.
  const formats = {
    int32: { type: "number", validate: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 },
    int64: { type: "number", validate: (n) => Number.isInteger(n) },
    float: { type: "number", validate: (n) => Number.isFinite(n) },
    double: { type: "number", validate: (n) => Number.isFinite(n) },
  };
  const ajv = new Ajv2020({ allErrors: true, strict: false, formats });
  ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewriteRefs(doc.components?.schemas ?? {}) });
  const cache = new Map();
  const validatorFor = (schema, where) => {
    const key = JSON.stringify(schema);
    if (!cache.has(key)) {
      try {
        cache.set(key, ajv.compile(rewriteRefs(schema)));
      } catch (e) {
        throw new OpenApiViolation(`schema of ${where} does not compile: ${e.message}`);
      }
    }
    return cache.get(key);
  };
  const paths = Object.entries(doc.paths ?? {}).map(([template, item]) => ({ template, item, matches: templateMatcher(template) }));
  // Literal paths win over templated ones, as in the router.
  paths.sort((a, b) => Number(a.template.includes("{")) - Number(b.template.includes("{")));
  // Compile everything up front so a broken schema fails at start, not at first use.
  const operations = [];
  for (const { template, item } of paths) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      operations.push({ method: m.toUpperCase(), path: template, operationId: op.operationId });
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        for (const [type, media] of Object.entries(resolve(doc, r)?.content ?? {})) {
          if (media.schema) validatorFor(media.schema, `${m.toUpperCase()} ${template} ${status} ${type}`);
        }
      }
    }
  }

  function checkResponse(where, response, status, headers, bodyText, method) {
    const fail = (msg) => {
      throw new OpenApiViolation(`${where} → ${status}: ${msg}\n  body: ${short(bodyText ?? "")}`);
    };
    for (const [name, h] of Object.entries(response.headers ?? {})) {
      const value = headers.get(name);
      if (value === null) {
        if (h.required) fail(`required header ${name} missing`);
        continue;
      }
      if (h.schema) {
        const v = validatorFor(h.schema, `${where} header ${name}`);
        if (!v(value)) fail(`header ${name}: ${JSON.stringify(value)} ${ajv.errorsText(v.errors)}`);
      }
    }
    const content = response.content ?? {};
    const types = Object.keys(content);
    if (types.length === 0 || method === "HEAD") return;
    const type = mediaType(headers);
    if (!type || !content[type]) fail(`content-type ${type} is not documented (${types.join(", ")})`);
    if (type !== "application/json" && !type.endsWith("+json")) return;
    let body;
    try {
      body = JSON.parse(bodyText);
    } catch (e) {
      fail(`body is not JSON: ${e.message}`);
    }
    const schema = content[type].schema;
    if (!schema) return;
    const v = validatorFor(schema, where);
    if (!v(body)) {
      const errs = v.errors.slice(0, 8).map((e) => `${e.instancePath || "/"} ${e.message}${e.params && Object.keys(e.params).length ? " " + JSON.stringify(e.params) : ""}`);
      fail(`body does not match the schema:\n    ${errs.join("\n    ")}`);
    }
  }

  /**
   * Throws an OpenApiViolation unless the answer is documented and matches.
   * `headers` is a Headers (or anything with get(name)); `bodyText` the body as text.
   */
  function validateResponse(method, url, status, headers, bodyText) {
    method = method.toUpperCase();
    const path = new URL(url).pathname;
    const where = `${method} ${path}`;
    const hit = paths.find((p) => p.matches(path));
    if (!hit) {
      if (status !== 404) throw new OpenApiViolation(`${where} → ${status}: undocumented path (only 404 expected)\n  body: ${short(bodyText ?? "")}`);
      checkResponse(`${where} (unknown path)`, resolve(doc, doc.components.responses.NotFound), status, headers, bodyText, method);
      return { path: null, operationId: null };
    }
    const op = hit.item[method.toLowerCase()];
    if (!op) {
      const allowed = METHODS.filter((m) => hit.item[m]).map((m) => m.toUpperCase());
      if (method === "OPTIONS" && status < 300) return { path: hit.template, operationId: null }; // CORS preflight
      if (status !== 405) throw new OpenApiViolation(`${where} → ${status}: ${method} is not documented on ${hit.template} (only 405 expected)\n  body: ${short(bodyText ?? "")}`);
      checkResponse(`${where} (method not allowed)`, resolve(doc, doc.components.responses.MethodNotAllowed), status, headers, bodyText, method);
      const allow = (headers.get("allow") ?? "").split(",").map((s) => s.trim()).filter(Boolean);
      if ([...allow].sort().join() !== [...allowed].sort().join()) {
        throw new OpenApiViolation(`${where} → 405: Allow ${JSON.stringify(headers.get("allow"))} but the document has ${allowed.join(", ")}`);
      }
      return { path: hit.template, operationId: null };
    }
    const r = op.responses?.[String(status)] ?? op.responses?.[`${String(status)[0]}XX`] ?? op.responses?.default;
    if (!r) {
      throw new OpenApiViolation(`${where} → ${status}: status not documented for ${op.operationId} (documented: ${Object.keys(op.responses ?? {}).join(", ")})\n  body: ${short(bodyText ?? "")}`);
    }
    checkResponse(`${where} [${op.operationId}]`, resolve(doc, r), status, headers, bodyText, method);
    return { path: hit.template, operationId: op.operationId };
  }

  return { doc, operations, validateResponse };
}

const compiled = new Map();

/** Compiles a document given as JSON text (cached by text: several workers share one). */
export function compileText(text) {
  if (!compiled.has(text)) compiled.set(text, compileDocument(JSON.parse(text)));
  return compiled.get(text);
}

/** Fetches `${base}/openapi.json` with `fetchImpl` and compiles it. */
export async function loadValidator(base, fetchImpl = fetch) {
  const r = await fetchImpl(`${base}/openapi.json`);
  const text = await r.text();
  if (r.status !== 200) throw new OpenApiViolation(`GET /openapi.json → ${r.status}: ${short(text)}`);
  return compileText(text);
}
