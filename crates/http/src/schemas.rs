//! The components' schemas, generated from the wire and stored types by `schemars` (natively
//! only: build.rs renders the document, so no schema code is in the wasm). Responses are read in
//! serialize mode (a field that is always sent is required, even when it may be null), request
//! bodies in deserialize mode (what the parser accepts).

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

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
    out.subschema_for::<Tombstone>();
    out.take_definitions(true)
}
