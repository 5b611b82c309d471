//! The components' schemas, generated from the wire and stored types by `schemars` (natively
//! only: the document is rendered natively into `src/openapi.json`, so no schema code is in the wasm). Responses are read in
//! serialize mode (a field that is always sent is required, even when it may be null), request
//! bodies in deserialize mode (what the parser accepts).

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{json, Map, Value};

use crate::geo::{CountryCodes, CountryResults, PointResult};
use crate::ip::{IpLookup, IpResult, IpResults, Ipdb, Me};
use crate::notify_bodies::{
    DeadLetters, Deleted, Indexes, NewItem, OneEvent, PreferencesBody, Processed, Queued,
    ReplayResult, RetractResult, Updated,
};
use egn_core::ip::Attribution;
use egn_core::notify::{ChangesView, Counts, NotificationView, OriginView, PageView, Tombstone};

fn generator(settings: SchemaSettings) -> SchemaGenerator {
    let mut settings = settings;
    settings.definitions_path = "/components/schemas".into();
    settings.into_generator()
}

/// Every generated component schema, by name.
#[must_use]
pub fn components() -> Map<String, Value> {
    let mut out = generator(SchemaSettings::draft2020_12().for_serialize());
    out.subschema_for::<PageView>();
    out.subschema_for::<ChangesView>();
    out.subschema_for::<NotificationView>();
    out.subschema_for::<OriginView>();
    out.subschema_for::<Counts>();
    out.subschema_for::<egn_core::notify::badge::BadgeMessage>();
    out.subschema_for::<Tombstone>();
    out.subschema_for::<CountryCodes>();
    out.subschema_for::<PointResult>();
    out.subschema_for::<CountryResults>();
    out.subschema_for::<Attribution>();
    out.subschema_for::<Ipdb>();
    out.subschema_for::<IpResult>();
    out.subschema_for::<IpLookup>();
    out.subschema_for::<IpResults>();
    out.subschema_for::<Me>();
    out.subschema_for::<NewItem>();
    out.subschema_for::<OneEvent>();
    out.subschema_for::<Processed>();
    out.subschema_for::<Queued>();
    out.subschema_for::<RetractResult>();
    out.subschema_for::<Updated>();
    out.subschema_for::<Deleted>();
    out.subschema_for::<Indexes>();
    out.subschema_for::<DeadLetters>();
    out.subschema_for::<ReplayResult>();
    out.subschema_for::<PreferencesBody>();
    out.subschema_for::<egn_core::notify::erasure::ErasureView>();
    out.subschema_for::<egn_core::notify::senders::SenderErasureView>();
    out.subschema_for::<egn_core::notify::privacy::AnyErasureView>();
    out.subschema_for::<egn_core::notify::privacy::ExportPage>();
    out.subschema_for::<crate::ErrorBody<'static>>();
    out.subschema_for::<crate::health::Health>();
    let mut defs = out.take_definitions(true);

    let mut input = generator(SchemaSettings::draft2020_12().for_deserialize());
    input.subschema_for::<crate::notify::EventsBody>();
    input.subschema_for::<egn_core::notify::Retraction>();
    input.subschema_for::<crate::notify::MarkBody>();
    input.subschema_for::<crate::notify::BulkBody>();
    input.subschema_for::<egn_core::notify::preferences::PreferencesInput>();
    input.subschema_for::<crate::notify::ReplayBody>();
    input.subschema_for::<crate::geo::Batch>();
    input.subschema_for::<crate::ip::Batch>();
    for (name, schema) in input.take_definitions(true) {
        assert!(
            !defs.contains_key(&name),
            "{name} is both a request and a response type"
        );
        defs.insert(name, schema);
    }
    let template = event_template(&defs["NewEvent"]);
    defs.insert("EventTemplate".into(), template);
    for schema in defs.values_mut() {
        openapi_formats(schema);
    }
    defs
}

/// `integer`, or a list of types with it (`["integer", "null"]`).
fn integer(t: Option<&Value>) -> bool {
    match t {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
        _ => false,
    }
}

/// Only the integer formats OpenAPI defines (`int32`, `int64`): schemars names Rust's widths
/// (`uint64`, `uint`…), which validators warn about; `minimum: 0` already says unsigned.
fn openapi_formats(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let custom = o
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| integer(o.get("type")) && f != "int32" && f != "int64");
            if custom {
                o.remove("format");
            }
            o.values_mut().for_each(openapi_formats);
        }
        Value::Array(a) => a.iter_mut().for_each(openapi_formats),
        _ => {}
    }
}

/// The fan-out template: a `NewEvent` whose owner is absent (or empty: `owners` names them),
/// and whose `eventId` leaves room for `:{owner}`.
fn event_template(new_event: &Value) -> Value {
    let mut t = new_event.clone();
    if let Some(required) = t["required"].as_array_mut() {
        // An absent eventId is empty: the fan-out id `:{owner}` is still non-empty.
        required.retain(|f| f != "owner" && f != "eventId");
    }
    t["description"] = json!("An event without `owner`; each owner's `eventId` is `{eventId}:{owner}` (`fanout:` and a SHA-256 of both when that is over the `eventId` limit).");
    t["properties"]["owner"] = json!({ "type": "string", "maxLength": 0 });
    t["properties"]["eventId"] = json!({
        "type": "string",
        "maxLength": 127,
        egn_core::notify::schema::MAX_BYTES: 127,
        "pattern": egn_core::notify::schema::ARG_VALUE,
    });
    t
}
