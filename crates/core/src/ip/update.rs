//! The scheduled update, minus the I/O: bounded buffers for the download and its
//! decompression, and the vetting that decides whether a downloaded database may replace the
//! one being served. A bad build must not replace a good one, so a candidate is refused when it
//! does not open, answers too few countries, or disagrees with the serving database on more
//! than a configured share of the fixed probe set ([`super::probe_set`]).

use super::agreement::{compare, probe_set, Agreement};
use super::answer::CountryLookup;
use super::attribution::Attribution;
use super::db::{IpDb, IpDbError};
pub use super::promote::Probe;
use super::source::Origin;
use super::version::{sha256_hex, IpdbRecord};
use serde::{Deserialize, Serialize};

/// Limits and thresholds of the scheduled update.
#[derive(Clone, Debug, PartialEq)]
pub struct UpdatePolicy {
    /// Largest download accepted, before decompression (bytes).
    pub max_download_bytes: u64,
    /// Largest database accepted, after decompression (bytes).
    pub max_db_bytes: u64,
    /// Largest share of compared probes on which the candidate may disagree with the serving
    /// database.
    pub max_disagreement: f64,
    /// Fewest distinct countries the candidate must answer on the probe set.
    pub min_countries: usize,
}

/// Why a candidate was refused or could not be fetched; the serving database stays.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    /// The download failed or answered an error status.
    #[error("download: {0}")]
    Download(String),
    /// The serving database (candidates are vetted against it) did not load.
    #[error("the serving database (the candidate is vetted against it): {0}")]
    Serving(String),
    /// The download or its decompression did not finish in time.
    #[error("download and decompression did not finish within {0} ms")]
    TimedOut(u32),
    /// A size cap was hit (`what` is `download` or `decompressed database`).
    #[error("{what} is over {limit} bytes")]
    TooLarge {
        /// Which cap.
        what: &'static str,
        /// The cap.
        limit: u64,
    },
    /// The gzip stream is corrupt or truncated.
    #[error("gzip: {0}")]
    Gzip(String),
    /// The tar archive is unusable (no `.mmdb` in it, two, a bad header, truncated).
    #[error(transparent)]
    Archive(super::archive::ArchiveError),
    /// The database staging serves was not promoted (promotion only: `refused`).
    #[error("promotion: {0}")]
    Promotion(#[from] super::promote::PromoteError),
    /// Not a usable database.
    #[error("candidate: {0}")]
    Invalid(#[from] IpDbError),
    /// Answers too few countries to be a real country database.
    #[error(
        "candidate answers {got} distinct countries on the probe set; at least {min} required"
    )]
    TooFewCountries {
        /// Distinct countries answered.
        got: usize,
        /// Required.
        min: usize,
    },
    /// The search tree could not be converted into a table.
    #[error("converting to a table: {0}")]
    Convert(String),
    /// Disagrees with the serving database on too many probes.
    #[error(
        "candidate disagrees with the serving database on {:.1}% of compared probes; at most {:.1}% allowed",
        agreement.disagreement() * 100.0,
        max * 100.0
    )]
    Disagrees {
        /// The comparison.
        agreement: Agreement,
        /// The configured share.
        max: f64,
    },
}

use super::archive::ArchiveError;
pub use super::archive::CappedBuf;

impl From<ArchiveError> for UpdateError {
    /// A cap passed keeps its own variant (the same text as before archives were read).
    fn from(e: ArchiveError) -> Self {
        match e {
            ArchiveError::TooLarge { what, limit } => UpdateError::TooLarge { what, limit },
            e => UpdateError::Archive(e),
        }
    }
}

/// True for a gzip member (magic `1f 8b`, method deflate): DB-IP publishes `.mmdb.gz`.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b, 0x08])
}

/// A candidate that passed every check.
#[derive(Debug)]
pub struct Vetted {
    /// The record to publish.
    pub record: IpdbRecord,
    /// The database bytes (decompressed).
    pub bytes: Vec<u8>,
    /// The compact table converted from them (stored next to the database).
    pub table: super::table::TableFiles,
    /// How it compares with the serving database.
    pub agreement: Agreement,
}

/// What the update does with a candidate that passed.
#[derive(Debug)]
pub enum Plan {
    /// Same bytes as the published record: nothing to write.
    Unchanged(String),
    /// The source answered `304 Not Modified` to the published version's validators.
    NotModified(String),
    /// Promotion only: staging's version is not old enough or not probed yet (the reason).
    Waiting(String),
    /// Promotion only: staging's record, written under production's key.
    Promoted(Box<IpdbRecord>),
    /// Write the object, then the record.
    Publish(Box<Vetted>),
}

/// Vets decompressed candidate bytes against the serving database.
///
/// `current` is the published record, if any; `fallback_attribution` is used when the
/// database's metadata does not name a source we know (the npm builds name none).
///
/// # Errors
/// [`UpdateError`] naming the first check that failed.
pub fn vet<B: CountryLookup + ?Sized>(
    bytes: Vec<u8>,
    serving: &B,
    current: Option<&IpdbRecord>,
    policy: &UpdatePolicy,
    updated_at: String,
    fallback_attribution: Option<Attribution>,
) -> Result<Plan, UpdateError> {
    if bytes.len() as u64 > policy.max_db_bytes {
        return Err(UpdateError::TooLarge {
            what: "decompressed database",
            limit: policy.max_db_bytes,
        });
    }
    let sha256 = sha256_hex(&bytes);
    if let Some(c) = current.filter(|c| c.sha256 == sha256) {
        return Ok(Plan::Unchanged(c.version.clone()));
    }
    let db = IpDb::from_bytes(bytes.as_slice())?;
    let agreement = compare(serving, &db, &probe_set());
    if agreement.candidate_countries < policy.min_countries {
        return Err(UpdateError::TooFewCountries {
            got: agreement.candidate_countries,
            min: policy.min_countries,
        });
    }
    if agreement.disagreement() > policy.max_disagreement {
        return Err(UpdateError::Disagrees {
            agreement,
            max: policy.max_disagreement,
        });
    }
    let (db_type, epoch) = db.describe();
    let attribution = Attribution::for_database_type(&db_type).or(fallback_attribution);
    let meta = table_meta(&db_type, epoch, attribution.as_ref());
    let table =
        super::convert::table(&db, &meta).map_err(|e| UpdateError::Convert(e.to_string()))?;
    let record =
        IpdbRecord::for_database(sha256, epoch, updated_at, attribution).with_table(&table);
    drop(db);
    Ok(Plan::Publish(Box::new(Vetted {
        record,
        bytes,
        table,
        agreement,
    })))
}

/// What a table says about its source: `{database_type, build_epoch, attribution}`.
pub fn table_meta(db_type: &str, build_epoch: u64, attribution: Option<&Attribution>) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "database_type": db_type,
        "build_epoch": build_epoch,
        "attribution": attribution,
    }))
    .expect("plain JSON")
}

/// The outcome of the last scheduled update, kept in KV next to the record (so every isolate's
/// `/healthz` shows it, not only the one that ran the cron).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct UpdateStatus {
    /// RFC 3339 time of the run.
    pub at: String,
    /// `published`, `unchanged`, `waiting` (promotion: staging's version not ready yet) or
    /// `refused`.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(extend("enum" = ["published", "unchanged", "waiting", "refused"]))
    )]
    pub outcome: String,
    /// The version published or kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub version: Option<String>,
    /// Why the candidate was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub reason: Option<String>,
    /// The candidate's comparison with the serving database, when it got that far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(with = "serde_json::Map<String, serde_json::Value>")
    )]
    pub agreement: Option<Agreement>,
    /// Where the candidate came from: the URL and period taken, the release date.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Origin"))]
    pub origin: Option<Origin>,
    /// The URLs passed over before it, each with why (`2026-12: answered 404`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<String>,
    /// The source answered `304 Not Modified` (one small response for an unchanged release).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_modified: bool,
    /// RFC 3339 time of the last run that ended `published` or `unchanged` (this one or one
    /// before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub last_success_at: Option<String>,
    /// RFC 3339 time of the next scheduled run (from the cron expression that ran this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub next_check_at: Option<String>,
    /// This run's check of the version it found serving: every page loaded and verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Probe"))]
    pub probe: Option<Probe>,
    /// The last probe that failed (kept across runs: production's promotion reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Probe"))]
    pub failed_probe: Option<Probe>,
}

impl UpdateStatus {
    /// The status for a run's result.
    pub fn of(result: &Result<Plan, UpdateError>, at: String) -> Self {
        let mut s = UpdateStatus {
            at,
            outcome: String::new(),
            version: None,
            reason: None,
            agreement: None,
            origin: None,
            tried: Vec::new(),
            not_modified: false,
            last_success_at: None,
            next_check_at: None,
            probe: None,
            failed_probe: None,
        };
        match result {
            Ok(Plan::Unchanged(v)) => {
                s.outcome = "unchanged".into();
                s.version = Some(v.clone());
            }
            Ok(Plan::NotModified(v)) => {
                s.outcome = "unchanged".into();
                s.version = Some(v.clone());
                s.not_modified = true;
            }
            Ok(Plan::Promoted(r)) => {
                s.outcome = "published".into();
                s.version = Some(r.version.clone());
                s.origin.clone_from(&r.origin);
            }
            Ok(Plan::Waiting(why)) => {
                s.outcome = "waiting".into();
                s.reason = Some(why.clone());
            }
            Ok(Plan::Publish(v)) => {
                s.outcome = "published".into();
                s.version = Some(v.record.version.clone());
                s.agreement = Some(v.agreement.clone());
            }
            Err(e) => {
                s.outcome = "refused".into();
                s.reason = Some(e.to_string());
                if let UpdateError::Disagrees { agreement, .. } = e {
                    s.agreement = Some(agreement.clone());
                }
            }
        }
        if s.outcome == "published" || s.outcome == "unchanged" {
            s.last_success_at = Some(s.at.clone());
        }
        s
    }

    /// Carries over from the run before what outlives a run: the last success and the last
    /// failed probe; records this run's probe.
    pub fn after(mut self, previous: Option<&UpdateStatus>, probe: Option<Probe>) -> Self {
        if let Some(p) = previous {
            if self.last_success_at.is_none() {
                self.last_success_at.clone_from(&p.last_success_at);
            }
            self.failed_probe.clone_from(&p.failed_probe);
        }
        if let Some(p) = probe.as_ref().filter(|p| !p.ok) {
            self.failed_probe = Some(p.clone());
        }
        self.probe = probe;
        self
    }
}

/// KV key of the last update's status, next to the record's key.
pub fn status_key(record_key: &str) -> String {
    format!("{record_key}:last_update")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::IpAnswer;
    use std::net::IpAddr;

    /// A stand-in serving database: the same country everywhere, or nothing.
    struct Everywhere(Option<&'static str>);

    impl CountryLookup for Everywhere {
        fn country(&self, _: IpAddr) -> IpAnswer<'_> {
            self.0.map_or(IpAnswer::NotFound, IpAnswer::Country)
        }
    }

    fn policy() -> UpdatePolicy {
        UpdatePolicy {
            max_download_bytes: 1 << 20,
            max_db_bytes: 1 << 20,
            max_disagreement: 0.2,
            min_countries: 1,
        }
    }

    #[test]
    fn capped_buffer_refuses_past_its_cap() {
        let mut b = CappedBuf::new(10, "download");
        b.push(&[0; 6]).unwrap();
        b.push(&[0; 4]).unwrap();
        let e = b.push(&[0]).unwrap_err();
        assert_eq!(e.to_string(), "download is over 10 bytes");
        assert_eq!(b.into_inner().len(), 10);
    }

    #[test]
    fn sniffs_gzip() {
        assert!(is_gzip(&[0x1f, 0x8b, 0x08, 0]));
        assert!(!is_gzip(b"\xab\xcd\xefMaxMind.com"));
        assert!(!is_gzip(&[0x1f]));
    }

    #[test]
    fn refuses_unreadable_and_oversized_candidates() {
        let e = vet(
            b"garbage".to_vec(),
            &Everywhere(None),
            None,
            &policy(),
            String::new(),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, UpdateError::Invalid(_)), "{e}");
        let p = UpdatePolicy {
            max_db_bytes: 3,
            ..policy()
        };
        let e = vet(
            b"four".to_vec(),
            &Everywhere(None),
            None,
            &p,
            String::new(),
            None,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            UpdateError::TooLarge {
                what: "decompressed database",
                limit: 3
            }
        ));
    }

    #[test]
    fn same_bytes_as_the_record_are_unchanged() {
        let bytes = b"not even opened".to_vec();
        let rec = IpdbRecord::for_database(sha256_hex(&bytes), 1, String::new(), None);
        let plan = vet(
            bytes,
            &Everywhere(None),
            Some(&rec),
            &policy(),
            String::new(),
            None,
        );
        assert!(matches!(&plan, Ok(Plan::Unchanged(v)) if *v == rec.version));
        let s = UpdateStatus::of(&plan, "t".into());
        assert_eq!(
            (s.outcome.as_str(), s.version),
            ("unchanged", Some(rec.version))
        );
    }

    #[test]
    fn refusal_status_carries_the_reason_and_figures() {
        let a = Agreement {
            probes: 10,
            compared: 10,
            agree: 5,
            ..Agreement::default()
        };
        let r: Result<Plan, UpdateError> = Err(UpdateError::Disagrees {
            agreement: a.clone(),
            max: 0.2,
        });
        let s = UpdateStatus::of(&r, "t".into());
        assert_eq!(s.outcome, "refused");
        assert_eq!(s.agreement, Some(a));
        let reason = s.reason.unwrap();
        assert!(
            reason.contains("50.0%") && reason.contains("20.0%"),
            "{reason}"
        );
        assert_eq!(status_key("ipdb/current"), "ipdb/current:last_update");
    }
}
