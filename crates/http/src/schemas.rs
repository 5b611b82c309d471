//! The components' schemas, generated from the wire and stored types by `schemars` (natively
//! only: build.rs renders the document, so no schema code is in the wasm). Responses are read in
//! serialize mode (a field that is always sent is required, even when it may be null), request
//! bodies in deserialize mode (what the parser accepts).

use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

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
    out.subschema_for::<crate::ErrorBody<'static>>();
    out.subschema_for::<crate::health::Health>();
    out.take_definitions(true)
}
