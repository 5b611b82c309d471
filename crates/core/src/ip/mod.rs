//! IP → country over a MaxMind-format database held in memory, plus the hot-swap version record,
//! the isolate's refresh decision and the scheduled update's vetting.
//!
//! Two record layouts are read: the flat `{"country_code":"XX"}` of the ip-location-db packages
//! (our bundled default, DB-IP Lite) and GeoIP2/GeoLite2's `{"country":{"iso_code":"XX"}}`.

mod agreement;
mod answer;
pub mod archive;
mod attribution;
pub mod convert;
mod db;
pub mod freshness;
mod parse;
pub mod promote;
pub mod publish;
pub mod refresh;
pub mod serving;
mod settings;
pub mod source;
mod special;
pub mod table;
pub mod update;
mod version;
// Only the bench build's `/__bench/ip` and the native benches (`bench/rust`) use it.
#[cfg(feature = "bench")]
pub mod workload;

pub use agreement::{
    compare, probe_set, probe_set_with, Agreement, ANCHORS, PROBE_COUNT, PROBE_SEED,
};
pub use answer::{CountryLookup, IpAnswer};
pub use attribution::Attribution;
pub use db::{IpDb, IpDbError, Layout};
pub use parse::{parse_ip, IpParseError};
pub use settings::IpdbSettings;
pub use special::special_range;
pub use version::{hex, sha256_hex, IpdbRecord, RecordError};
