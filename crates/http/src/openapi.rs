//! The OpenAPI 3.1 document, served at `GET /openapi.json`.
//!
//! Paths, methods, `operationId`, summary, tag, security, request-body presence and body limits
//! all come from [`routes::ROUTES`] (bench routes excluded), so the document cannot drift from
//! the router. What the table cannot say — parameters, body and response schemas, the error
//! codes an operation can answer — is written per [`Op`] in one exhaustive `match`: adding an
//! operation does not compile until it is documented here.
//!
//! Errors: every 4xx/5xx body is the `Error` schema. Per status, the `code` is narrowed to the
//! stable codes that status can carry where the set is known from the parsers; statuses whose
//! codes belong to layers that may grow (authentication, rate limiting, 5xx) only require a
//! snake_case code. 405 carries `Allow`, 429 and 503 carry `Retry-After`.

use super::routes::{self, Access, Method, Op, RateLimit, Route};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

mod operations;

/// Codes of one error status: `Some` = exactly these, `None` = any snake_case code.
type Codes = Option<Vec<&'static str>>;

/// What the route table does not know about an operation.
struct Detail {
    /// Longer text for the operation (Markdown).
    description: &'static str,
    /// Query, path and header parameters.
    params: Vec<Value>,
    /// Request body schema (only for routes with a body limit).
    request: Option<Value>,
    /// The body may be left out (the parser reads an empty body as the defaults).
    body_optional: bool,
    /// Success and non-error responses: status → response object.
    responses: Vec<(u16, Value)>,
    /// Error statuses and their codes, beyond the ones every route of its kind shares.
    errors: Vec<(u16, Codes)>,
}

impl Detail {
    /// No description, parameters, body or responses beyond the shared ones.
    fn none() -> Self {
        Detail {
            description: "",
            params: vec![],
            request: None,
            body_optional: false,
            responses: vec![],
            errors: vec![],
        }
    }
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn json_response(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

fn query(name: &str, required: bool, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": required, "description": description, "schema": schema })
}

fn codes(list: &[&'static str]) -> Codes {
    Some(list.to_vec())
}

/// 503 codes of operations that only read the bundled assets.
const ASSET_503: &[&str] = &["asset_unavailable", "asset_corrupt"];
/// 503 codes of operations on the notification backends.
const BACKEND_503: &[&str] = &["backend_unavailable", "duplicate_key", "not_configured"];
/// 422 of operations that check an owner (the token's `sub`) or an item key as stored text.
const KEY_422: &[&str] = &["missing_field", "field_too_long", "invalid_characters"];
/// 422 of the user writes: [`KEY_422`] and a reused Idempotency-Key.
const USER_WRITE_422: &[&str] = &[
    "missing_field",
    "field_too_long",
    "invalid_characters",
    "idempotency_key_reused",
];
/// 502: the backend refused a request the worker built (a bug or a misconfiguration).
const BACKEND_502: &[&str] = &["backend_rejected", "backend_decode"];

/// An id or key as the parser checks it ([`egn_core::notify::schema::text`]).
fn text(max: usize) -> Value {
    egn_core::notify::schema::text(max).to_value()
}

/// A change-feed position or a page cursor as the worker writes them: base64url without
/// padding of the JSON array `[revision, id]`. Anything else answers 400 `invalid_cursor`, so
/// a client only ever passes back a value it was given.
fn position_schema() -> Value {
    json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9_-]+$",
        "contentEncoding": "base64url",
        "contentMediaType": "application/json",
        "contentSchema": {
            "type": "array",
            "prefixItems": [{ "type": "integer" }, { "type": "string" }],
            "minItems": 2,
            "maxItems": 2,
        },
    })
}

fn lat_lon_params(required: bool) -> Vec<Value> {
    vec![
        query(
            "lat",
            required,
            "Latitude in degrees (WGS 84).",
            json!({ "type": "number", "minimum": -90, "maximum": 90 }),
        ),
        query(
            "lon",
            required,
            "Longitude in degrees (WGS 84); `lng` is accepted as an alias.",
            json!({ "type": "number", "minimum": -180, "maximum": 180 }),
        ),
    ]
}

fn path_param(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "path", "required": true, "description": description, "schema": text(256) })
}

/// `fields` of the country routes.
fn fields_param() -> Value {
    query(
        "fields",
        false,
        "Comma-separated answer fields: `country`, `timeZone` (default both). `fields=country` skips the time zone.",
        json!({ "type": "string", "pattern": "^(country|timeZone)(,(country|timeZone))*$" }),
    )
}

fn idempotency_key_param() -> Value {
    json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Replays the first answer for the same key and body (24 h); another body → 422 `idempotency_key_reused`; while the first runs → 409 `idempotency_in_flight`.",
        "schema": { "type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$" },
    })
}

/// The header on a user's write: the same rules, in a key space of the token's `sub` alone.
fn user_idempotency_key_param() -> Value {
    let mut p = idempotency_key_param();
    p["description"] = json!("Keys are per user (another user's equal key is another key). Replays the first answer for the same key and body (24 h; for a delete, the same `itemKey`), so a resend whose first attempt applied gets that first answer; another body → 422 `idempotency_key_reused`; while the first runs → 409 `idempotency_in_flight`.");
    p
}

/// A user write's 200, which a replay repeats.
fn replayable(description: &str, schema: &str) -> Value {
    json!({
        "description": description,
        "headers": replayed_header(),
        "content": { "application/json": { "schema": schema_ref(schema) } },
    })
}

fn replayed_header() -> Value {
    json!({
        "Idempotent-Replayed": {
            "description": "`true` when this answer is a replay of an earlier request with the same Idempotency-Key.",
            "schema": { "type": "string", "enum": ["true"] },
        }
    })
}

fn list_limit(default: u32) -> Value {
    json!({ "type": "integer", "minimum": 1, "maximum": egn_core::notify::MAX_PAGE, "default": default })
}

fn boolean_param() -> Value {
    json!({ "type": "string", "enum": ["true", "false", "1", "0"] })
}

/// What the route table does not know about `op`: one function per operation, in
/// `openapi/operations.rs`.
fn detail(op: Op) -> Detail {
    match op {
        Op::Healthz => operations::healthz(),
        Op::OpenApi => operations::open_api(),
        Op::Console => operations::console(),
        Op::ConsoleAsset => operations::console_asset(),
        Op::CountryOne => operations::country_one(),
        Op::CountryBatch => operations::country_batch(),
        Op::IpOne => operations::ip_one(),
        Op::IpBatch => operations::ip_batch(),
        Op::Me => operations::me(),
        Op::List => operations::list(),
        Op::UnreadCount => operations::unread_count(),
        Op::Changes => operations::changes(),
        Op::Stream => operations::stream(),
        Op::Bulk => operations::bulk(),
        Op::GetPreferences => operations::get_preferences(),
        Op::PutPreferences => operations::put_preferences(),
        Op::Mark => operations::mark(),
        Op::DeleteItem => operations::delete_item(),
        Op::CreateEvent => operations::create_event(),
        Op::Retract => operations::retract(),
        Op::AdminIndexes => operations::admin_indexes(),
        Op::DeadLetters => operations::dead_letters(),
        Op::ReplayDeadLetters => operations::replay_dead_letters(),
        Op::EraseOwner => operations::erase_owner(),
        Op::EraseSender => operations::erase_sender(),
        Op::Erasure => operations::erasure(),
        Op::ExportOwner => operations::export(true),
        Op::ExportMine => operations::export(false),
        // Never documented (`document` skips bench routes); the arm only exists in the bench build.
        #[cfg(feature = "bench")]
        Op::BenchNoop | Op::BenchGeo | Op::BenchIp | Op::BenchAuth => Detail::none(),
    }
}

/// Merges `add` into the codes of `status` (`None` absorbs everything).
fn add_codes(errors: &mut BTreeMap<u16, Codes>, status: u16, add: Codes) {
    match (errors.get_mut(&status), add) {
        (None, add) => {
            errors.insert(status, add);
        }
        (Some(slot), None) => *slot = None,
        (Some(None), Some(_)) => {}
        (Some(Some(have)), Some(more)) => {
            for c in more {
                if !have.contains(&c) {
                    have.push(c);
                }
            }
        }
    }
}

fn error_description(status: u16) -> &'static str {
    match status {
        400 => "Bad request",
        401 => "Missing or invalid credentials",
        403 => "The service key lacks the operation's scope",
        404 => "Not found",
        405 => "Method not allowed",
        409 => "Conflict",
        413 => "Body larger than the operation's limit",
        422 => "Well-formed but invalid",
        426 => "This route only speaks WebSocket",
        429 => "Rate limited",
        500 => "Internal error",
        502 => "The backend refused a request",
        503 => "Unavailable; retry after `Retry-After` seconds",
        _ => "Error",
    }
}

fn retry_after_header() -> Value {
    json!({
        "Retry-After": {
            "description": "Seconds to wait before retrying.",
            "required": true,
            "schema": { "type": "string", "pattern": "^[0-9]+$" },
        }
    })
}

fn error_response(status: u16, codes: &Codes) -> Value {
    let schema = match codes {
        None => schema_ref("Error"),
        Some(c) => json!({
            "allOf": [
                schema_ref("Error"),
                { "properties": { "error": { "properties": { "code": { "enum": c } } } } },
            ],
        }),
    };
    let mut r = json!({
        "description": error_description(status),
        "content": { "application/json": { "schema": schema } },
    });
    if matches!(status, 429 | 503) {
        r["headers"] = retry_after_header();
    }
    r
}

/// Errors every route of its kind can answer, from the route table.
fn shared_errors(r: &Route) -> BTreeMap<u16, Codes> {
    let mut e = BTreeMap::new();
    if r.body_limit > 0 {
        add_codes(&mut e, 400, codes(&["unreadable_body"]));
        add_codes(&mut e, 413, codes(&["payload_too_large"]));
    }
    match r.access {
        Access::Public => {}
        // 401 codes are not pinned: the authentication layer says why (`unauthorized`,
        // `invalid_token`, `token_expired`, `invalid_signature`, `invalid_service_key`, …).
        Access::User => add_codes(&mut e, 401, None),
        Access::Service(_) => {
            add_codes(&mut e, 401, None);
            add_codes(&mut e, 403, codes(&["insufficient_scope"]));
        }
    }
    if r.access != Access::Public {
        // Authentication can be unconfigured, or its signing keys unreachable.
        add_codes(&mut e, 503, codes(&["not_configured", "auth_unavailable"]));
    }
    if r.op != Op::Healthz {
        // A configuration value the worker cannot use (named in /healthz).
        add_codes(&mut e, 503, codes(&["config_invalid"]));
    }
    if r.rate_limit != RateLimit::None {
        add_codes(&mut e, 429, None);
    }
    add_codes(&mut e, 500, None);
    e
}

fn security(access: Access) -> Value {
    match access {
        Access::Public => json!([]),
        Access::User => json!([{ "userToken": [] }]),
        Access::Service(scope) => json!([{ "serviceKey": [scope.as_str()] }]),
    }
}

fn operation(r: &Route) -> Value {
    let d = detail(r.op);
    let mut op = Map::new();
    op.insert("operationId".into(), r.operation_id.into());
    op.insert("summary".into(), r.summary.into());
    if !d.description.is_empty() {
        op.insert("description".into(), d.description.into());
    }
    op.insert("tags".into(), json!([r.tag]));
    op.insert("security".into(), security(r.access));
    if let Access::Service(scope) = r.access {
        op.insert("x-scope".into(), scope.as_str().into());
    }
    if r.rate_limit != RateLimit::None {
        let by = match r.rate_limit {
            RateLimit::PerIp => "ip",
            _ => "user",
        };
        op.insert("x-rate-limit".into(), by.into());
    }
    if !d.params.is_empty() {
        op.insert("parameters".into(), Value::Array(d.params));
    }
    if r.body_limit > 0 {
        let schema = d.request.unwrap_or_else(|| json!({ "type": "object" }));
        op.insert(
            "requestBody".into(),
            json!({
                "required": !d.body_optional,
                "description": format!("JSON, at most {} bytes (larger → 413 `payload_too_large`).", r.body_limit),
                "content": { "application/json": { "schema": schema } },
            }),
        );
        op.insert("x-max-body-bytes".into(), r.body_limit.into());
    }
    let mut responses = Map::new();
    for (status, resp) in d.responses {
        responses.insert(status.to_string(), resp);
    }
    let mut errors = shared_errors(r);
    for (status, c) in d.errors {
        add_codes(&mut errors, status, c);
    }
    for (status, c) in &errors {
        // A documented non-error answer of the same status (healthz's 503) wins.
        responses
            .entry(status.to_string())
            .or_insert_with(|| error_response(*status, c));
    }
    op.insert("responses".into(), Value::Object(responses));
    Value::Object(op)
}

fn method_key(m: Method) -> &'static str {
    match m {
        Method::Get => "get",
        Method::Post => "post",
        Method::Put => "put",
        Method::Delete => "delete",
    }
}

/// Security schemes and the shared responses; the schemas are generated ([`super::schemas`]).
fn components() -> Value {
    let mut c = json!({
        "securitySchemes": {
            "userToken": {
                "type": "http",
                "scheme": "bearer",
                "bearerFormat": "JWT",
                "description": "A user's token; the notification owner is its `sub`.",
            },
            "serviceKey": {
                "type": "http",
                "scheme": "bearer",
                "description": "A service key; each operation names the scope it needs (`notify:write`, `admin`, `privacy`; `admin` also holds `privacy`).",
            },
        },
        "responses": {
            "NotFound": error_response(404, &codes(&["not_found"])),
            "MethodNotAllowed": {
                "description": "The path exists under other methods, listed in `Allow`",
                "headers": {
                    "Allow": {
                        "description": "Comma-separated methods of this path.",
                        "required": true,
                        "schema": { "type": "string", "pattern": "^[A-Z]+(, [A-Z]+)*$" },
                    },
                },
                "content": { "application/json": { "schema": {
                    "allOf": [
                        schema_ref("Error"),
                        { "properties": { "error": { "properties": { "code": { "const": "method_not_allowed" } } } } },
                    ],
                } } },
            },
        },
    });
    c["schemas"] = Value::Object(super::schemas::components());
    c
}

/// The OpenAPI 3.1 document of every non-bench route.
#[must_use]
pub fn document() -> Value {
    let mut paths = Map::new();
    for r in routes::ROUTES.iter().filter(|r| !r.bench) {
        let item = paths.entry(r.path.to_owned()).or_insert_with(|| json!({}));
        item[method_key(r.method)] = operation(r);
    }
    let mut tags: Vec<&str> = Vec::new();
    for r in routes::ROUTES.iter().filter(|r| !r.bench) {
        if !tags.contains(&r.tag) {
            tags.push(r.tag);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "edge-geo-notify",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Geo lookups at the edge and a notification center. Every 4xx/5xx body is `{\"error\":{\"code\",\"message\"}}` with a stable `code` (except `/healthz`'s 503, which is the health body). An unknown path answers 404 (`#/components/responses/NotFound`); a known path under another method 405 with `Allow` (`#/components/responses/MethodNotAllowed`).",
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" },
        },
        "tags": tags.iter().map(|t| json!({ "name": t })).collect::<Vec<_>>(),
        "paths": paths,
        "components": components(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                out.push((path.clone(), method.clone(), op));
            }
        }
        out
    }

    #[test]
    fn every_non_bench_route_once_and_no_bench_route() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        let ops = operations(&doc);
        for r in routes::ROUTES {
            let hits: Vec<_> = ops
                .iter()
                .filter(|(_, _, op)| op["operationId"] == r.operation_id)
                .collect();
            if r.bench {
                assert!(hits.is_empty(), "bench route {} documented", r.path);
                assert!(doc["paths"].get(r.path).is_none());
                continue;
            }
            assert_eq!(
                hits.len(),
                1,
                "{} documented {} times",
                r.operation_id,
                hits.len()
            );
            let (path, method, op) = hits[0];
            assert_eq!(
                (path.as_str(), method.as_str()),
                (r.path, method_key(r.method))
            );
            assert_eq!(op["summary"], r.summary);
            assert_eq!(op["tags"], json!([r.tag]));
            assert_eq!(
                op.get("requestBody").is_some(),
                r.body_limit > 0,
                "{}",
                r.path
            );
        }
        assert_eq!(
            ops.len(),
            routes::ROUTES.iter().filter(|r| !r.bench).count()
        );
        // Valid JSON text that reads back as the same document.
        let text = serde_json::to_string(&doc).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), doc);
    }

    #[test]
    fn security_follows_access() {
        let doc = document();
        for r in routes::ROUTES.iter().filter(|r| !r.bench) {
            let op = &doc["paths"][r.path][method_key(r.method)];
            let want = match r.access {
                Access::Public => json!([]),
                Access::User => json!([{ "userToken": [] }]),
                Access::Service(s) => json!([{ "serviceKey": [s.as_str()] }]),
            };
            assert_eq!(op["security"], want, "{}", r.path);
            assert_eq!(
                op["responses"].get("401").is_some(),
                r.access != Access::Public
            );
        }
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes["userToken"]["bearerFormat"], "JWT");
        assert_eq!(schemes["serviceKey"]["scheme"], "bearer");
    }

    #[test]
    fn errors_are_error_bodies_with_their_headers() {
        let doc = document();
        for (path, _, op) in operations(&doc) {
            for (status, resp) in op["responses"].as_object().unwrap() {
                let s: u16 = status.parse().unwrap();
                if s < 400 || path == "/healthz" {
                    continue;
                }
                let schema = &resp["content"]["application/json"]["schema"];
                let text = schema.to_string();
                assert!(text.contains("#/components/schemas/Error"), "{path} {s}");
                let has_retry = resp["headers"].get("Retry-After").is_some();
                assert_eq!(has_retry, s == 429 || s == 503, "{path} {s}");
            }
        }
        assert!(
            doc["components"]["responses"]["MethodNotAllowed"]["headers"]
                .get("Allow")
                .is_some()
        );
    }

    #[test]
    fn every_reference_resolves() {
        fn walk(v: &Value, doc: &Value) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::String(r)) = m.get("$ref") {
                        let ptr = r.strip_prefix('#').expect("local ref");
                        assert!(doc.pointer(ptr).is_some(), "dangling {r}");
                    }
                    m.values().for_each(|x| walk(x, doc));
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, doc)),
                _ => {}
            }
        }
        let doc = document();
        walk(&doc, &doc);
    }

    #[test]
    fn every_documented_code_is_an_error_code() {
        fn walk(v: &Value, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => {
                    if let Some(Value::Object(code)) = m.get("code") {
                        if let Some(Value::Array(e)) = code.get("enum") {
                            out.extend(e.iter().filter_map(|x| x.as_str().map(String::from)));
                        }
                    }
                    m.values().for_each(|x| walk(x, out));
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(&document(), &mut found);
        assert!(found.len() > 20, "{found:?}");
        for c in &found {
            assert!(
                crate::ErrorCode::ALL.iter().any(|k| k.as_str() == c),
                "{c} is documented but is not an ErrorCode"
            );
        }
    }
}
