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

#[allow(clippy::too_many_lines)]
fn detail(op: Op) -> Detail {
    let none = || Detail {
        description: "",
        params: vec![],
        request: None,
        body_optional: false,
        responses: vec![],
        errors: vec![],
    };
    match op {
        Op::Healthz => Detail {
            description: "200 when the geo index opens, else 503 with the same body (`status: degraded`) so load balancers and humans read one shape.",
            responses: vec![
                (200, json_response("Healthy", schema_ref("Health"))),
                (503, json_response("Degraded: the same health body, not an Error", schema_ref("Health"))),
            ],
            ..none()
        },
        Op::OpenApi => Detail {
            description: "The OpenAPI 3.1 document, built from the worker's route table.",
            responses: vec![(
                200,
                json_response(
                    "This document",
                    json!({ "type": "object", "required": ["openapi", "info", "paths"] }),
                ),
            )],
            ..none()
        },
        Op::Console => Detail {
            description: "A small static web console.",
            responses: vec![(
                200,
                json!({ "description": "HTML", "content": { "text/html": { "schema": { "type": "string" } } } }),
            )],
            errors: vec![(503, codes(ASSET_503))],
            ..none()
        },
        Op::ConsoleAsset => Detail {
            description: "Static files of the console, served with its Content-Security-Policy; no other asset is reachable here.",
            params: vec![json!({
                "name": "file", "in": "path", "required": true,
                "schema": { "type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$" },
            })],
            responses: vec![(
                200,
                json!({ "description": "The file", "content": {
                    "text/javascript": { "schema": { "type": "string" } },
                    "text/css": { "schema": { "type": "string" } },
                    "application/octet-stream": { "schema": { "type": "string" } },
                    "image/svg+xml": { "schema": { "type": "string" } },
                } }),
            )],
            errors: vec![(404, codes(&["not_found"])), (503, codes(ASSET_503))],
            ..none()
        },
        Op::CountryOne => Detail {
            description: "Maritime boundaries: `country` is null on the open sea.",
            params: lat_lon_params(true),
            responses: vec![(200, json_response("The point and its country", schema_ref("PointResult")))],
            errors: vec![
                (400, codes(&["missing_parameter", "invalid_number", "invalid_coordinate"])),
                (503, codes(ASSET_503)),
            ],
            ..none()
        },
        Op::CountryBatch => Detail {
            description: "Points as `{lat, lon}` objects or `[lat, lon]` pairs; answers in request order.",
            request: Some(schema_ref("PointsBody")),
            responses: vec![(
                200,
                json_response(
                    "One country (or null) per point, in order",
                    schema_ref("CountryResults"),
                ),
            )],
            errors: vec![
                (400, codes(&["invalid_json", "empty_batch", "batch_too_large", "invalid_point"])),
                (503, codes(ASSET_503)),
            ],
            ..none()
        },
        Op::IpOne => Detail {
            description: "`reason` says why `country` is null: `not_found`, or the reserved range (`private`, `loopback`, …).",
            params: vec![query(
                "ip",
                true,
                "IPv4 or IPv6 address (no zone id).",
                super::ip::ip(),
            )],
            responses: vec![(200, json_response("The address's country", schema_ref("IpLookup")))],
            errors: vec![
                (400, codes(&["missing_parameter", "invalid_ip", "ip_zone_not_supported"])),
                (503, codes(ASSET_503)),
            ],
            ..none()
        },
        Op::IpBatch => Detail {
            description: "Answers in request order, with the database version once.",
            request: Some(schema_ref("IpsBody")),
            responses: vec![(
                200,
                json_response("One answer per address, in order", schema_ref("IpResults")),
            )],
            errors: vec![
                (400, codes(&["invalid_json", "empty_batch", "batch_too_large", "invalid_ip", "ip_zone_not_supported"])),
                (503, codes(ASSET_503)),
            ],
            ..none()
        },
        Op::Me => Detail {
            description: "`request.cf.country`, the IPDB answer for `CF-Connecting-IP`, optionally the coordinates' country, and whether the sources that answered agree (null with fewer than two).",
            // lat and lon come together or not at all: one form-exploded object parameter
            // (`?lat=…&lon=…` on the wire) is how OpenAPI states that dependency.
            params: vec![json!({
                "name": "coordinates",
                "in": "query",
                "required": false,
                "style": "form",
                "explode": true,
                "description": "`lat` and `lon` (degrees, WGS 84) together, or neither.",
                "schema": {
                    "type": "object",
                    "properties": {
                        "lat": { "type": "number", "minimum": -90, "maximum": 90 },
                        "lon": { "type": "number", "minimum": -180, "maximum": 180 },
                    },
                    "dependentRequired": { "lat": ["lon"], "lon": ["lat"] },
                },
            })],
            responses: vec![(200, json_response("What each source says", schema_ref("Me")))],
            errors: vec![
                (400, codes(&["missing_parameter", "invalid_number", "invalid_coordinate"])),
                (503, codes(ASSET_503)),
            ],
            ..none()
        },
        Op::List => Detail {
            description: "Newest first; pass `nextCursor` back as `cursor` for the next page (null on the last). `counts` (the badge over the whole unarchived inbox) comes in the same Data API call unless `counts=false`. `sync` is the change-feed position this page is a snapshot of: pass it to `changes` as `since`.",
            params: vec![
                query("limit", false, "Page size.", list_limit(20)),
                query("cursor", false, "`nextCursor` of the previous page.", position_schema()),
                query("category", false, "Only this `categoryType`.", json!({ "type": "string" })),
                query("unread", false, "Only unread items.", boolean_param()),
                query("archived", false, "Archived items instead of the inbox.", boolean_param()),
                query("counts", false, "Include `counts` (default true).", boolean_param()),
            ],
            responses: vec![(200, json_response("One page", schema_ref("Page")))],
            errors: vec![
                (422, codes(KEY_422)),
                (400, codes(&["invalid_parameter", "invalid_cursor"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::UnreadCount => Detail {
            params: vec![query("category", false, "Only this `categoryType`.", json!({ "type": "string" }))],
            responses: vec![(200, json_response("Badge counts", schema_ref("Counts")))],
            errors: vec![
                (422, codes(KEY_422)),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::Changes => Detail {
            description: "Every change after `since` (a `sync` from a list page or an earlier answer; omit it for the whole feed), oldest first: created, merged, retracted, read/seen/archived items as full items, deleted, trimmed or expired ones as `{itemKey, deleted: true}`. Apply entries by `itemKey`; an entry can repeat (the position is held a moment behind now so a late write is never missed). Call again at once while `hasMore`.",
            params: vec![
                query(
                    "since",
                    false,
                    "`sync` from a list page or an earlier answer; empty is the same as absent.",
                    json!({ "anyOf": [position_schema(), { "const": "" }] }),
                ),
                query("limit", false, "Most entries returned.", list_limit(egn_core::notify::MAX_PAGE)),
            ],
            responses: vec![(
                200,
                json_response("Changes", schema_ref("ChangesPage")),
            )],
            errors: vec![
                (422, codes(KEY_422)),
                (400, codes(&["invalid_parameter", "invalid_cursor"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::Stream => Detail {
            description: "A WebSocket (`Upgrade: websocket`). Browsers authenticate with the subprotocol list `[\"inbox.v1\", \"auth.<token>\"]` (they cannot set headers on a WebSocket); other clients may send `Authorization`. The server pushes `{type: \"badge\", unread, unseen, sync, reconnect}` on connect and after each change to the inbox (at most one push per 250 ms; bursts are coalesced). It is a hint channel: the list and `changes` stay the truth, and a missed push is repaired by reconnecting. Send `refresh` to get the badge now. Reconnect with exponential backoff from `reconnect.baseMs` to `reconnect.maxMs` with full jitter. A socket ends with its token: when the token's `exp` (plus the verifier's leeway, AUTH_LEEWAY_SECONDS) passes, the server closes it with code 4001 and reason `token_expired`; reconnect at once with a fresh token.",
            params: vec![json!({
                "name": "Upgrade",
                "in": "header",
                "required": true,
                "description": "Without it the route answers 426 `upgrade_required`.",
                "schema": { "type": "string", "const": "websocket" },
            })],
            responses: vec![(101, json!({ "description": "Switching to the WebSocket protocol" }))],
            errors: vec![
                (426, codes(&["upgrade_required"])),
                (503, codes(&["not_configured"])),
            ],
            ..none()
        },
        Op::Bulk => Detail {
            description: "One Data API call over the live inbox, or one category: `read`, `seen` (clears the badge, items stay unread), `archiveRead`, `delete` (other devices see deletions in `changes`).",
            params: vec![user_idempotency_key_param()],
            request: Some(schema_ref("BulkBody")),
            responses: vec![(200, replayable("Items changed", "Updated"))],
            errors: vec![
                (422, codes(USER_WRITE_422)),
                (409, codes(&["idempotency_in_flight"])),
                (400, codes(&["invalid_json", "invalid_action", "invalid_idempotency_key"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::GetPreferences => Detail {
            description: "`enforced` is false when no Redis is configured: preferences are kept but events are not filtered.",
            responses: vec![(200, json_response("Preferences", schema_ref("Preferences")))],
            errors: vec![
                (422, codes(KEY_422)),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::PutPreferences => Detail {
            description: "Replaces both lists. Events of a muted category or type are answered `muted` and not stored. A 503 after the document was saved means the change is not yet in effect: retry the same request.",
            request: Some(schema_ref("PreferencesInput")),
            responses: vec![(200, json_response("Stored", schema_ref("Preferences")))],
            errors: vec![
                (400, codes(&["invalid_json"])),
                (422, codes(&["missing_field", "field_too_long", "invalid_characters", "unknown_category"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::Mark => Detail {
            description: "Exactly one of `itemKey` or `all: true`. An `itemKey` the user has no live item for (never created, deleted, or purged) answers 404 `item_not_found`: reconcile with `changes`.",
            params: vec![user_idempotency_key_param()],
            request: Some(schema_ref("MarkBody")),
            responses: vec![(200, replayable("Items changed", "Updated"))],
            errors: vec![
                (422, codes(USER_WRITE_422)),
                (404, codes(&["item_not_found"])),
                (409, codes(&["idempotency_in_flight"])),
                (400, codes(&["invalid_json", "invalid_flag", "invalid_target", "invalid_idempotency_key"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::DeleteItem => Detail {
            description: "An item the user does not have (never created, already deleted, or purged) answers 404 `item_not_found`; with an Idempotency-Key, a resend of a delete that applied answers its first 200.",
            params: vec![
                json!({
                    "name": "itemKey",
                    "in": "path",
                    "required": true,
                    "description": "The item's key, percent-encoded as one path segment.",
                    "schema": text(256),
                }),
                user_idempotency_key_param(),
            ],
            responses: vec![(200, replayable("Deleted", "Deleted"))],
            errors: vec![
                (422, codes(USER_WRITE_422)),
                (409, codes(&["idempotency_in_flight"])),
                (400, codes(&["invalid_path", "invalid_idempotency_key"])),
                (404, codes(&["item_not_found"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::CreateEvent => Detail {
            description: "Events with the same (owner, itemKey) merge into one item; `eventId` de-duplicates redeliveries. \
Three forms: one event; `{\"events\": [...]}` (1–100); or a fan-out `{\"template\": {event without owner}, \"owners\": [...]}` \
(1–10 000; each owner's `eventId` is `{eventId}:{owner}`). Every event is validated before anything is accepted. \
With the queue (`NOTIFY_QUEUE`) configured, batches and fan-outs are enqueued and answered `202 queued`, and one event \
is written at once unless its item is hot (`NOTIFY_HOT_EVENTS`: then it is queued too); without the queue, one event \
is written at once and a batch of at most 100 events is written at once (`processed`, one result per event); \
more needs the queue (`503 not_configured`).",
            params: vec![idempotency_key_param()],
            request: Some(schema_ref("EventsBody")),
            responses: vec![
                (
                    201,
                    json!({
                        "description": "A new item",
                        "headers": replayed_header(),
                        "content": { "application/json": { "schema": schema_ref("NewItem") } },
                    }),
                ),
                (
                    200,
                    json!({
                        "description": "One event: merged into an existing item, already applied (also: the sender was retracted after this event), a duplicate event id, or muted by the recipient. A batch without the queue: `processed`, one result per event in order",
                        "headers": replayed_header(),
                        "content": { "application/json": { "schema": {
                            "oneOf": [schema_ref("OneEvent"), schema_ref("Processed")],
                        } } },
                    }),
                ),
                (
                    202,
                    json!({
                        "description": "Enqueued: every event was valid and is written by the queue consumer",
                        "headers": replayed_header(),
                        "content": { "application/json": { "schema": schema_ref("Queued") } },
                    }),
                ),
            ],
            errors: vec![
                (400, codes(&["invalid_json", "invalid_idempotency_key", "empty_batch", "batch_too_large"])),
                (409, codes(&["idempotency_in_flight"])),
                (
                    422,
                    codes(&[
                        "missing_field",
                        "field_too_long",
                        "invalid_characters",
                        "unknown_category",
                        "time_out_of_range",
                        "idempotency_key_reused",
                        "invalid_events",
                    ]),
                ),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::Retract => Detail {
            params: vec![idempotency_key_param()],
            request: Some(schema_ref("Retraction")),
            responses: vec![(
                200,
                json!({
                    "description": "`updated` (other senders remain), `deleted` (it was the last), or `not_found`",
                    "headers": replayed_header(),
                    "content": { "application/json": { "schema": schema_ref("RetractResult") } },
                }),
            )],
            errors: vec![
                (400, codes(&["invalid_json", "invalid_idempotency_key"])),
                (409, codes(&["idempotency_in_flight"])),
                (
                    422,
                    codes(&[
                        "missing_field",
                        "field_too_long",
                        "invalid_characters",
                        "idempotency_key_reused",
                    ]),
                ),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::AdminIndexes => Detail {
            description: "Idempotent; run once per deploy.",
            responses: vec![(
                200,
                json_response("Index names", schema_ref("Indexes")),
            )],
            errors: vec![(502, codes(BACKEND_502)), (503, codes(BACKEND_503))],
            ..none()
        },
        Op::DeadLetters => Detail {
            description: "Kept by the dead-letter queue's consumer in the collection `{NOTIFY_COLLECTION}_dead`.",
            params: vec![query(
                "limit",
                false,
                "Letters per answer (1–100, default 100).",
                json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
            )],
            responses: vec![(
                200,
                json_response("The oldest dead letters", schema_ref("DeadLetters")),
            )],
            errors: vec![
                (400, codes(&["invalid_parameter"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        Op::ReplayDeadLetters => Detail {
            description: "Sends the letters back to the events queue, then removes them. An event that was in fact applied is answered by dedup and the upsert's filter, so replaying is safe. No body replays the oldest 100.",
            body_optional: true,
            request: Some(schema_ref("ReplayBody")),
            responses: vec![(
                200,
                json_response("Replayed", schema_ref("ReplayResult")),
            )],
            errors: vec![
                (400, codes(&["invalid_json", "invalid_parameter"])),
                (502, codes(BACKEND_502)),
                (503, codes(BACKEND_503)),
            ],
            ..none()
        },
        // Never documented (`document` skips bench routes); the arm only exists in the bench build.
        #[cfg(feature = "bench")]
        Op::BenchNoop | Op::BenchGeo | Op::BenchIp | Op::BenchAuth => none(),
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
                "description": "A service key; each operation names the scope it needs (`notify:write`, `admin`).",
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

    /// `OPENAPI_OUT=path cargo test --lib write_document` writes the document for tools that
    /// cannot ask a running worker (the worker serves the same value at `/openapi.json`).
    #[test]
    fn write_document() {
        if let Ok(path) = std::env::var("OPENAPI_OUT") {
            let text = serde_json::to_string_pretty(&document()).unwrap();
            std::fs::write(&path, text + "\n").unwrap();
        }
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
