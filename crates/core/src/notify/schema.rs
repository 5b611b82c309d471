//! What the event parser enforces, as JSON Schema: the request types' fields name these
//! (`schemars(schema_with = …)`), and the OpenAPI document's parameters use the same patterns.
//! Native only (the document is rendered at build time).

use schemars::{json_schema, Schema, SchemaGenerator};

use super::limits;
use super::NotifyConfig;

/// Template argument values: no control characters (C0, DEL, C1); empty is allowed.
pub const ARG_VALUE: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// Ids and keys (the parser's `text`): no control characters and not only whitespace (the
/// parser trims before its emptiness check). The middle class is every non-control character
/// that is not Unicode `White_Space` (what `str::trim` strips).
pub const TEXT: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]*[^\\u0000-\\u0020\\u007F-\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\u0000-\\u001F\\u007F-\\u009F]*$";
/// `serviceType`, `notificationType`… (the parser's `ident`).
pub const IDENT: &str = "^[A-Za-z0-9_.-]+$";
/// A URL: no whitespace or control characters.
const URL: &str = "^[^\\s\\u0000-\\u001F\\u007F-\\u009F]+$";

/// The parsers' limits are UTF-8 bytes, which JSON Schema cannot state (`maxLength` counts
/// characters): `maxLength` is the same number (more characters are more bytes), and this
/// extension states the bytes. `scripts/schemathesis.sh` keeps generated values within it.
pub const MAX_BYTES: &str = "x-max-bytes";

/// An id or key: 1..=`max` bytes, [`TEXT`].
#[must_use]
pub fn text(max: usize) -> Schema {
    json_schema!({ "type": "string", "minLength": 1, "maxLength": max, MAX_BYTES: max, "pattern": TEXT })
}

/// A type name: 1..=`max`, [`IDENT`].
#[must_use]
pub fn ident(max: usize) -> Schema {
    json_schema!({ "type": "string", "minLength": 1, "maxLength": max, "pattern": IDENT })
}

/// An owner, event id or sender id.
pub fn id(_: &mut SchemaGenerator) -> Schema {
    text(limits::ID)
}

/// An item key.
pub fn item_key(_: &mut SchemaGenerator) -> Schema {
    text(limits::ITEM_KEY)
}

/// A sender's display name.
pub fn name(_: &mut SchemaGenerator) -> Schema {
    text(limits::NAME)
}

/// `serviceType`, `notificationType`, `templateType`.
pub fn kind(_: &mut SchemaGenerator) -> Schema {
    ident(limits::KIND)
}

/// `mutedTypes`: at most 32 type names.
pub fn muted_types(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "maxItems": limits::MUTED, "items": ident(limits::KIND) })
}

/// `mutedCategories`: at most 32 of the configured categories.
pub fn muted_categories(g: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "array", "maxItems": limits::MUTED, "items": category(g) })
}

/// An avatar or landing URL (null is the same as absent).
pub fn url(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "minLength": 1, "maxLength": limits::URL, MAX_BYTES: limits::URL, "pattern": URL })
}

/// One of the configured categories (the defaults; a deployment's own list is its config).
pub fn category(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "enum": NotifyConfig::default().categories })
}

/// Template arguments: at most 16, short names, values without control characters.
pub fn message_arguments(_: &mut SchemaGenerator) -> Schema {
    let names = format!("^[A-Za-z0-9_.-]{{1,{}}}$", limits::ARG_KEY);
    json_schema!({
        "type": "object",
        "maxProperties": limits::ARGS,
        "propertyNames": { "pattern": names },
        "additionalProperties": { "type": "string", "maxLength": limits::ARG_VALUE, MAX_BYTES: limits::ARG_VALUE, "pattern": ARG_VALUE },
    })
}

/// Event time, ms since the epoch (at most 5 minutes ahead).
pub fn created_time(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "minimum": 1 })
}

/// Serde defaults a parser-checked field so that the parser, not serde, names a missing one
/// (`missing_field` with the field's name): the document still says it is required, and gives
/// no default (an empty value is refused).
fn required(s: &mut Schema, names: &[&str]) {
    if let Some(props) = s.get_mut("properties").and_then(|p| p.as_object_mut()) {
        for (name, p) in props.iter_mut() {
            if names.contains(&name.as_str()) {
                if let Some(p) = p.as_object_mut() {
                    p.remove("default");
                }
            }
        }
    }
    s.insert("required".into(), serde_json::json!(names));
}

/// [`required`] for `NewEvent`.
pub fn new_event_fields(s: &mut Schema) {
    required(
        s,
        &[
            "owner",
            "itemKey",
            "serviceType",
            "categoryType",
            "notificationType",
            "templateType",
            "eventId",
            "sender",
            "createdTimeMsec",
        ],
    );
}

/// [`required`] for a sender.
pub fn new_sender_fields(s: &mut Schema) {
    required(s, &["id", "name"]);
}

/// An optional field that refuses `null` reads as absent when left out: no `default: null`.
pub fn no_null_defaults(s: &mut Schema) {
    if let Some(props) = s.get_mut("properties").and_then(|p| p.as_object_mut()) {
        for p in props.values_mut().filter_map(|p| p.as_object_mut()) {
            if p.get("default") == Some(&serde_json::Value::Null) {
                p.remove("default");
            }
        }
    }
}

/// An untagged enum whose forms no value matches twice: `oneOf` (generators make a tagged
/// union of it) instead of schemars' `anyOf`.
pub fn one_of(s: &mut Schema) {
    if let Some(alts) = s.remove("anyOf") {
        s.insert("oneOf".into(), alts);
    }
}

/// A `bool` that is always `true` (`deleted` of a tombstone or a delete's answer).
pub fn always_true(s: &mut Schema) {
    *s = json_schema!({ "const": true });
}
