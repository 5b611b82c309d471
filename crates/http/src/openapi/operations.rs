//! Each operation's documentation beyond the route table: its description, parameters, body,
//! responses and error codes, one function per operation ([`super::detail`] dispatches).

use super::*;

pub(super) fn healthz() -> Detail {
    Detail {
        description: "200 when the geo index opens, else 503 with the same body (`status: degraded`) so load balancers and humans read one shape.",
        responses: vec![
            (200, json_response("Healthy", schema_ref("Health"))),
            (503, json_response("Degraded: the same health body, not an Error", schema_ref("Health"))),
        ],
        ..Detail::none()
    }
}

pub(super) fn open_api() -> Detail {
    Detail {
        description: "The OpenAPI 3.1 document, built from the worker's route table.",
        responses: vec![(
            200,
            json_response(
                "This document",
                json!({ "type": "object", "required": ["openapi", "info", "paths"] }),
            ),
        )],
        ..Detail::none()
    }
}

pub(super) fn console() -> Detail {
    Detail {
        description: "A small static web console.",
        responses: vec![(
            200,
            json!({ "description": "HTML", "content": { "text/html": { "schema": { "type": "string" } } } }),
        )],
        errors: vec![(503, codes(ASSET_503))],
        ..Detail::none()
    }
}

pub(super) fn console_asset() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn country_one() -> Detail {
    Detail {
        description: "Maritime boundaries: `country` is null on the open sea. `timeZone` is the IANA zone from the same kind of index (every point has one; the open sea answers `Etc/GMT±N`); `fields=country` leaves it out and costs nothing extra.",
        params: [lat_lon_params(true), vec![fields_param()]].concat(),
        responses: vec![(
            200,
            json_response(
                "The point, its country and time zone",
                schema_ref("PointResult"),
            ),
        )],
        errors: vec![
            (
                400,
                codes(&[
                    "missing_parameter",
                    "invalid_number",
                    "invalid_coordinate",
                    "invalid_parameter",
                ]),
            ),
            (503, codes(ASSET_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn country_batch() -> Detail {
    Detail {
        description: "Points as `{lat, lon}` objects or `[lat, lon]` pairs; answers in request order, the time zones in `timeZones` beside `results` (left out with `fields=country`).",
        params: vec![fields_param()],
        request: Some(schema_ref("PointsBody")),
        responses: vec![(
            200,
            json_response(
                "One country (or null) and one time zone per point, in order",
                schema_ref("CountryResults"),
            ),
        )],
        errors: vec![
            (
                400,
                codes(&[
                    "invalid_json",
                    "empty_batch",
                    "batch_too_large",
                    "invalid_point",
                    "invalid_parameter",
                ]),
            ),
            (503, codes(ASSET_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn ip_one() -> Detail {
    Detail {
        description: "`reason` says why `country` is null: `not_found`, or the reserved range (`private`, `loopback`, …).",
        params: vec![query(
            "ip",
            true,
            "IPv4 or IPv6 address (no zone id).",
            crate::ip::ip(),
        )],
        responses: vec![(200, json_response("The address's country", schema_ref("IpLookup")))],
        errors: vec![
            (400, codes(&["missing_parameter", "invalid_ip", "ip_zone_not_supported"])),
            (503, codes(ASSET_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn ip_batch() -> Detail {
    Detail {
        description: "Answers in request order, with the database version once.",
        request: Some(schema_ref("IpsBody")),
        responses: vec![(
            200,
            json_response("One answer per address, in order", schema_ref("IpResults")),
        )],
        errors: vec![
            (
                400,
                codes(&[
                    "invalid_json",
                    "empty_batch",
                    "batch_too_large",
                    "invalid_ip",
                    "ip_zone_not_supported",
                ]),
            ),
            (503, codes(ASSET_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn me() -> Detail {
    Detail {
        description: "`request.cf.country`, the IPDB answer for `CF-Connecting-IP`, optionally the coordinates' country and time zone, and whether the sources that answered agree (null with fewer than two). `time_zone` is the coordinates' zone when given, else `request.cf.timezone`, with its `source`.",
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
        ..Detail::none()
    }
}

pub(super) fn list() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn unread_count() -> Detail {
    Detail {
        params: vec![query(
            "category",
            false,
            "Only this `categoryType`.",
            json!({ "type": "string" }),
        )],
        responses: vec![(200, json_response("Badge counts", schema_ref("Counts")))],
        errors: vec![
            (422, codes(KEY_422)),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn changes() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn stream() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn bulk() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn get_preferences() -> Detail {
    Detail {
        description: "`enforced` is false when no Redis is configured: preferences are kept but events are not filtered.",
        responses: vec![(200, json_response("Preferences", schema_ref("Preferences")))],
        errors: vec![
            (422, codes(KEY_422)),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn put_preferences() -> Detail {
    Detail {
        description: "Replaces both lists. Events of a muted category or type are answered `muted` and not stored. A 503 after the document was saved means the change is not yet in effect: retry the same request.",
        request: Some(schema_ref("PreferencesInput")),
        responses: vec![(200, json_response("Stored", schema_ref("Preferences")))],
        errors: vec![
            (400, codes(&["invalid_json"])),
            (422, codes(&["missing_field", "field_too_long", "invalid_characters", "unknown_category"])),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn mark() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn delete_item() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn create_event() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn retract() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn admin_indexes() -> Detail {
    Detail {
        description: "Idempotent; run once per deploy.",
        responses: vec![(200, json_response("Index names", schema_ref("Indexes")))],
        errors: vec![(502, codes(BACKEND_502)), (503, codes(BACKEND_503))],
        ..Detail::none()
    }
}

pub(super) fn dead_letters() -> Detail {
    Detail {
        description:
            "Kept by the dead-letter queue's consumer in the collection `{NOTIFY_COLLECTION}_dead`.",
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
        ..Detail::none()
    }
}

pub(super) fn replay_dead_letters() -> Detail {
    Detail {
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
        ..Detail::none()
    }
}

pub(super) fn erase_owner() -> Detail {
    Detail {
        description: "Removes every item and tombstone (a hard delete), the preferences, the user's idempotency records, the dead letters addressed to them and the badge hub's state (its sockets closed), in steps within one request's subrequest budget; then leaves a fence so an event created before the erasure that arrives later is dropped (events created after it start a new inbox). 200 when done, 202 while steps remain: the queue continues it when bound, otherwise call again (idempotent: a finished erasure runs again and removes whatever arrived since). See docs/privacy.md.",
        params: vec![path_param("owner", "The user's id (the token `sub`), percent-encoded.")],
        responses: vec![
            (200, json_response("Erased", schema_ref("ErasureView"))),
            (202, json_response("Steps remain (continued by the queue, or the next call)", schema_ref("ErasureView"))),
        ],
        errors: vec![
            (400, codes(&["invalid_path"])),
            (422, codes(&["field_too_long", "invalid_characters", "missing_field"])),
            (502, codes(BACKEND_502)),
            (503, codes(&["backend_unavailable", "duplicate_key", "not_configured", "hub_unavailable"])),
        ],
        ..Detail::none()
    }
}

pub(super) fn erase_sender() -> Detail {
    Detail {
        description: "Takes the sender's origins (id, name, avatar, landing) out of every item of every owner, found through the senders' index (items past the origins cap, where the sender is only in the Redis roster, included): the summary re-renders, an item whose only sender it was is removed as a retraction of its last sender removes it, each item's exact sender count drops by one; dead letters carrying the sender are deleted. A fence drops the sender's events created before the erasure that arrive later (events created after it are written). In steps within one request's subrequest budget: 200 when done, 202 while steps remain (the queue continues it when bound, otherwise call again; idempotent: the same sender is the same job). See docs/privacy.md.",
        params: vec![path_param("senderId", "The sender's id (the events' `sender.id`), percent-encoded.")],
        responses: vec![
            (200, json_response("Erased", schema_ref("SenderErasureView"))),
            (202, json_response("Steps remain (continued by the queue, or the next call)", schema_ref("SenderErasureView"))),
        ],
        errors: vec![
            (400, codes(&["invalid_path"])),
            (422, codes(&["field_too_long", "invalid_characters", "missing_field"])),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}

pub(super) fn erasure() -> Detail {
    Detail {
        description: "The job's id is the one `DELETE /v1/admin/owners/{owner}` or `POST /v1/admin/senders/{senderId}/erasure` answered (`owner:…` or `sender:…`, and the answer has that erasure's shape); it stays readable as long as the erasure's fence holds.",
        params: vec![path_param("id", "The erasure's id.")],
        responses: vec![(200, json_response("Progress", schema_ref("AnyErasureView")))],
        errors: vec![
            (400, codes(&["invalid_path"])),
            (404, codes(&["erasure_not_found"])),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}

/// `GET /v1/admin/owners/{owner}/export` (`for_owner`) and the user's own `GET /v1/notifications/export`.
pub(super) fn export(for_owner: bool) -> Detail {
    let mut params = vec![
        query(
            "cursor",
            false,
            "`nextCursor` of the previous page.",
            text(64),
        ),
        query(
            "limit",
            false,
            "Items per page (1–200, default 200).",
            json!({ "type": "integer", "minimum": 1, "maximum": 200 }),
        ),
    ];
    if for_owner {
        params.insert(
            0,
            path_param("owner", "The user's id (the token `sub`), percent-encoded."),
        );
    }
    Detail {
        description: "Everything stored about the owner as a recipient: items and tombstones as stored, by id; the first page also carries the preferences document and the dead letters addressed to them. Follow `nextCursor` until it is absent.",
        params,
        responses: vec![(200, json_response("One page", schema_ref("ExportPage")))],
        errors: vec![
            (400, codes(&["invalid_parameter", "invalid_path"])),
            (422, codes(&["field_too_long", "invalid_characters", "missing_field"])),
            (502, codes(BACKEND_502)),
            (503, codes(BACKEND_503)),
        ],
        ..Detail::none()
    }
}
