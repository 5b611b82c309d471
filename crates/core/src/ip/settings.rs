//! The IP database's settings, as the configuration parses them.

use super::{promote, source, update};

/// IP database settings (parsed by `config`; kept here so `ip` does not name `config`, which
/// names `ip`).
#[derive(Clone, Debug, PartialEq)]
pub struct IpdbSettings {
    /// KV key of the version record.
    pub kv_key: String,
    /// Seconds between an isolate's checks of the record.
    pub check_interval_s: u32,
    /// Where the daily cron downloads a new database from (`None` = off).
    pub source: Option<source::SourceSpec>,
    /// Days after its build when the served database is flagged stale.
    pub stale_after_days: u32,
    /// Production: staging's record key to promote from (instead of downloading).
    pub promote_from_key: Option<String>,
    /// How long staging must have served a version before it is promoted.
    pub promote_after_hours: u32,
    /// Largest download the cron accepts, compressed (bytes).
    pub max_download_bytes: u64,
    /// Largest database the cron accepts, decompressed (bytes).
    pub max_db_bytes: u64,
    /// Deadline of the download and its decompression (ms).
    pub download_timeout_ms: u32,
    /// Largest share of the probe set on which a downloaded database may disagree with the
    /// serving one.
    pub max_disagreement: f64,
    /// Fewest distinct countries a downloaded database must answer on the probe set.
    pub min_countries: usize,
}

impl IpdbSettings {
    /// The scheduled update's limits.
    pub fn update_policy(&self) -> update::UpdatePolicy {
        update::UpdatePolicy {
            max_download_bytes: self.max_download_bytes,
            max_db_bytes: self.max_db_bytes,
            max_disagreement: self.max_disagreement,
            min_countries: self.min_countries,
        }
    }

    /// The promotion rule's policy.
    pub fn promotion_policy(&self) -> promote::PromotionPolicy {
        promote::PromotionPolicy {
            min_age_ms: u64::from(self.promote_after_hours) * 3_600_000,
        }
    }
}
