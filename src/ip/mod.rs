//! IP → country over a MaxMind-format database held in memory, plus the hot-swap version record.
//!
//! Two record layouts are read: the flat `{"country_code":"XX"}` of the ip-location-db packages
//! (our bundled default) and GeoIP2/GeoLite2's `{"country":{"iso_code":"XX"}}`.

mod agreement;
mod db;
mod parse;
mod special;
mod version;

pub use agreement::{
    compare, probe_set, probe_set_with, Agreement, ANCHORS, PROBE_COUNT, PROBE_SEED,
};
pub use db::{IpAnswer, IpDb, IpDbError, Layout};
pub use parse::{parse_ip, IpParseError};
pub use special::special_range;
pub use version::{sha256_hex, IpdbRecord, RecordError};
