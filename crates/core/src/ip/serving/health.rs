//! The `ipdb` fragment of `/healthz`, as the serving state reports it.

use crate::ip::source::Origin;
use crate::ip::update::UpdateStatus;
use crate::ip::Attribution;
use serde::Serialize;

use super::Source;

/// The `ipdb` fragment of `/healthz`.
#[derive(Clone, Debug, Serialize)]
pub struct Health {
    /// Whether a version serves (false before the isolate's first IP request).
    pub loaded: bool,
    /// The version serving.
    pub version: Option<String>,
    /// Bundled or published.
    pub source: Option<Source>,
    /// Its credit.
    pub attribution: Option<Attribution>,
    /// Its table's sizes and page loads.
    pub table: Option<TableHealth>,
    /// Fetch + open time of its directory (ms).
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
pub struct TableHealth {
    /// Directory bytes.
    pub dir_bytes: usize,
    /// Pages in the table.
    pub pages: usize,
    /// Bytes of all pages.
    pub page_bytes: usize,
    /// Pages loaded so far.
    pub loaded_pages: usize,
    /// Bytes of the pages loaded so far.
    pub loaded_page_bytes: usize,
    /// Fetch + validation time of those pages (ms).
    pub page_load_ms: f64,
    /// The reader's derived indexes (bytes).
    pub derived_bytes: usize,
}
