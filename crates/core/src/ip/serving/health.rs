//! The `ipdb` fragment of `/healthz`, as the serving state reports it.

use crate::ip::source::Origin;
use crate::ip::update::UpdateStatus;
use crate::ip::Attribution;
use serde::Serialize;

use super::Source;

/// The `ipdb` fragment of `/healthz`.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "IpdbHealth"))]
pub struct Health {
    /// Whether a version serves (false before the isolate's first IP request).
    pub loaded: bool,
    /// The version serving.
    pub version: Option<String>,
    /// Bundled or published.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Option<String>"))]
    pub source: Option<Source>,
    /// Its credit.
    pub attribution: Option<Attribution>,
    /// The country table being served: its directory, its pages, and the pages this isolate has loaded so far
    pub table: Option<TableHealth>,
    /// Fetch (R2 only) + open time of the table's directory (ms).
    pub load_ms: Option<f64>,
    /// Checks of the record so far.
    pub checks: u64,
    /// The last check's outcome, or the last page failure's.
    pub last_check_outcome: Option<String>,
    /// Time the last swap took (ms).
    pub last_swap_ms: Option<f64>,
    /// The last scheduled update's status.
    pub last_update: Option<UpdateStatus>,
    /// Where the served version came from (source kind, URL, period or release date); `None`
    /// for the bundled table.
    pub origin: Option<Origin>,
}

/// A served table's sizes and page loads.
#[derive(Clone, Debug, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct TableHealth {
    /// Directory bytes.
    pub dir_bytes: usize,
    /// Pages in the table.
    pub pages: usize,
    /// All pages, loaded or not (bytes).
    pub page_bytes: usize,
    /// Pages loaded so far.
    pub loaded_pages: usize,
    /// Bytes of the pages loaded so far.
    pub loaded_page_bytes: usize,
    /// Fetch + validation time of those pages (ms).
    pub page_load_ms: f64,
    /// Memory the reader keeps besides directory and pages: the /16 lookup array and the bucket indexes of the IPv6 chunks loaded so far (bytes).
    pub derived_bytes: usize,
}
