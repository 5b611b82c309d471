//! Staging before production, and what a bucket keeps, minus the I/O.
//!
//! **Promotion.** Production downloads nothing: its cron reads staging's record and status
//! (`IPDB_PROMOTE_FROM_KEY` in staging's KV namespace) and takes staging's version only when
//! staging has served it for `IPDB_PROMOTE_AFTER_HOURS`, staging's cron has probed it since (every
//! page loaded and verified) and no probe of it failed. Then it copies the objects the record
//! names, each checked against the record's SHA-256, and writes the same record under its own
//! key. Anything else leaves production's version as it is, with the reason in its status.
//!
//! **Retention.** After a publish, objects under `ipdb/` named by neither the new record nor
//! the one it replaced (isolates may still fall back to it) are deleted once older than a day
//! (so a publisher's upload is never deleted before its record lands). GeoLite2's EULA asks
//! that only the current release be kept: this keeps the current one and, until the next
//! release (days), the one before.

use super::source::{parse_rfc3339, rfc3339, Origin};
use super::version::{sha256_hex, IpdbRecord, RecordError};
use serde::{Deserialize, Serialize};

/// A cron run's check of the serving version: the table's directory and every page read and
/// checked against the record's SHA-256s, as an isolate would. Staging's status carries the
/// last one and the last failed one (`update::UpdateStatus`); production's rule reads them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "IpdbProbe"))]
pub struct Probe {
    /// The version probed.
    pub version: String,
    /// RFC 3339 time of the probe.
    pub at: String,
    /// Whether every page loaded.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub reason: Option<String>,
}

/// How long staging must have served a version before production takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PromotionPolicy {
    /// Least age of staging's record (ms).
    pub min_age_ms: u64,
}

/// Why staging's version was refused (production's stays).
#[derive(Debug, thiserror::Error)]
pub enum PromoteError {
    /// Staging's record does not parse.
    #[error("staging's record: {0}")]
    Record(#[from] RecordError),
    /// A probe of that version failed on staging.
    #[error("staging's probe of {version} failed at {at}: {reason}")]
    FailedProbe {
        /// The version.
        version: String,
        /// When.
        at: String,
        /// Why.
        reason: String,
    },
    /// `updated_at` is not RFC 3339 (its age is unknown).
    #[error("staging's record has no RFC 3339 updated_at ({0:?})")]
    UpdatedAt(String),
    /// An object is not in staging's bucket.
    #[error("object {0} missing in staging's bucket")]
    Missing(String),
    /// An object's bytes do not hash to the record's SHA-256.
    #[error("object {0} does not match its checksum in staging's record")]
    Checksum(String),
}

/// What production does with staging's record.
#[derive(Debug, PartialEq, Eq)]
pub enum Promotion {
    /// Copy its objects, then write this record (staging's, with the promotion's time and
    /// origin).
    Promote(Box<IpdbRecord>),
    /// Production serves staging's version already.
    Unchanged(String),
    /// Not yet (why).
    Wait(String),
}

fn hours(ms: u64) -> String {
    format!("{:.1} h", ms as f64 / 3_600_000.0)
}

/// Decides from staging's record text (`None`: nothing published), staging's last probe and
/// last failed probe (from its status), production's record, the time and the policy.
/// `from_key` is staging's record key.
///
/// # Errors
/// [`PromoteError`] when staging's record is malformed or a probe of its version failed.
pub fn decide(
    staging: Option<&str>,
    (probe, failed_probe): (Option<&Probe>, Option<&Probe>),
    current: Option<&IpdbRecord>,
    now_ms: u64,
    policy: PromotionPolicy,
    from_key: &str,
) -> Result<Promotion, PromoteError> {
    let Some(text) = staging else {
        return Ok(Promotion::Wait(format!(
            "staging has published nothing under {from_key}"
        )));
    };
    let record = IpdbRecord::parse(text)?;
    let v = record.version.clone();
    if current.is_some_and(|c| c.version == v) {
        return Ok(Promotion::Unchanged(v));
    }
    if let Some(p) = failed_probe.filter(|p| p.version == v) {
        return Err(PromoteError::FailedProbe {
            version: v,
            at: p.at.clone(),
            reason: p.reason.clone().unwrap_or_default(),
        });
    }
    let published = parse_rfc3339(&record.updated_at)
        .ok_or_else(|| PromoteError::UpdatedAt(record.updated_at.clone()))?;
    let age = now_ms.saturating_sub(published);
    if age < policy.min_age_ms {
        return Ok(Promotion::Wait(format!(
            "staging has served {v} for {}; production takes it after {}",
            hours(age),
            hours(policy.min_age_ms)
        )));
    }
    let probed = probe.is_some_and(|p| p.ok && p.version == v);
    if !probed {
        return Ok(Promotion::Wait(format!(
            "staging's cron has not probed {v} yet (its next run does)"
        )));
    }
    let origin = record.origin.clone().unwrap_or_else(|| Origin {
        kind: "promoted".into(),
        ..Origin::default()
    });
    Ok(Promotion::Promote(Box::new(IpdbRecord {
        updated_at: rfc3339(now_ms),
        origin: Some(Origin {
            promoted_from: Some(from_key.to_owned()),
            ..origin
        }),
        ..record
    })))
}

/// Checks one object copied from staging (`None`: not in its bucket) against `sha256`.
///
/// # Errors
/// [`PromoteError::Missing`] or [`PromoteError::Checksum`].
pub fn verify_object(key: &str, sha256: &str, bytes: Option<&[u8]>) -> Result<(), PromoteError> {
    let bytes = bytes.ok_or_else(|| PromoteError::Missing(key.to_owned()))?;
    if sha256_hex(bytes) != sha256 {
        return Err(PromoteError::Checksum(key.to_owned()));
    }
    Ok(())
}

/// How long an object no record names is kept after its upload (a publisher writes the
/// objects before the record).
pub const RETENTION_GRACE_MS: u64 = 86_400_000;

/// The keys to delete from a bucket listing (`(key, uploaded ms)`), keeping every object that
/// a record of `keep` names and anything uploaded within [`RETENTION_GRACE_MS`] of `now_ms`.
/// Only keys under `ipdb/` are considered.
pub fn to_delete(listed: &[(String, u64)], keep: &[&IpdbRecord], now_ms: u64) -> Vec<String> {
    let named: std::collections::BTreeSet<String> = keep
        .iter()
        .flat_map(|r| r.objects().into_iter().map(|(k, _)| k))
        .collect();
    listed
        .iter()
        .filter(|(k, uploaded)| {
            k.starts_with("ipdb/")
                && !named.contains(k)
                && now_ms.saturating_sub(*uploaded) >= RETENTION_GRACE_MS
        })
        .map(|(k, _)| k.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000;
    /// 2026-12-02T01:00:00Z.
    const NOW: u64 = 1_796_173_200_000;

    fn record(version: &str, updated_at: &str) -> IpdbRecord {
        IpdbRecord {
            version: version.into(),
            updated_at: updated_at.into(),
            table_key: Some(format!("ipdb/{version}.table")),
            table_sha256: Some(sha256_hex(b"dir")),
            table_pages: vec![sha256_hex(b"p0"), sha256_hex(b"p1")],
            ..IpdbRecord::for_database(sha256_hex(version.as_bytes()), 1, String::new(), None)
        }
    }

    /// Staging's last probe and last failed probe.
    struct Status(Option<Probe>, Option<Probe>);

    fn status(probe: Option<(&str, bool)>, failed: Option<&str>) -> Status {
        let p = |v: &str, ok: bool| Probe {
            version: v.into(),
            at: "2026-12-01T02:17:00Z".into(),
            ok,
            reason: (!ok).then(|| "page 3: checksum mismatch".into()),
        };
        Status(probe.map(|(v, ok)| p(v, ok)), failed.map(|v| p(v, false)))
    }

    const POLICY: PromotionPolicy = PromotionPolicy { min_age_ms: 24 * H };

    fn decide_now(
        staging: &IpdbRecord,
        st: &Status,
        current: Option<&IpdbRecord>,
    ) -> Result<Promotion, PromoteError> {
        let text = serde_json::to_string(staging).unwrap();
        let probes = (st.0.as_ref(), st.1.as_ref());
        decide(Some(&text), probes, current, NOW, POLICY, "ipdb/current")
    }

    #[test]
    fn takes_a_version_staging_served_long_enough_and_probed() {
        let s = record("v2", "2026-11-30T02:17:00Z");
        let current = record("v1", "2026-11-01T03:17:00Z");
        let Promotion::Promote(p) =
            decide_now(&s, &status(Some(("v2", true)), None), Some(&current)).unwrap()
        else {
            panic!("promote")
        };
        assert_eq!(
            (p.version.as_str(), p.sha256.as_str()),
            ("v2", s.sha256.as_str())
        );
        assert_eq!(p.table_pages, s.table_pages);
        assert_eq!(p.updated_at, "2026-12-02T01:00:00Z");
        let o = p.origin.unwrap();
        assert_eq!(o.promoted_from.as_deref(), Some("ipdb/current"));
        // Production's first version ever: the same rule.
        assert!(matches!(
            decide_now(&s, &status(Some(("v2", true)), None), None),
            Ok(Promotion::Promote(_))
        ));
    }

    #[test]
    fn waits_for_the_age_and_for_a_probe() {
        let young = record("v2", "2026-12-01T12:00:00Z");
        let r = decide_now(&young, &status(Some(("v2", true)), None), None).unwrap();
        assert_eq!(
            r,
            Promotion::Wait(
                "staging has served v2 for 13.0 h; production takes it after 24.0 h".into()
            )
        );
        // Exactly the configured age is old enough.
        let exact = record("v2", "2026-12-01T01:00:00Z");
        assert!(matches!(
            decide_now(&exact, &status(Some(("v2", true)), None), None),
            Ok(Promotion::Promote(_))
        ));
        let old = record("v2", "2026-11-01T00:00:00Z");
        for st in [status(Some(("v1", true)), None), status(None, None)] {
            let r = decide_now(&old, &st, None).unwrap();
            assert!(
                matches!(&r, Promotion::Wait(w) if w.contains("not probed v2")),
                "{r:?}"
            );
        }
        let r = decide(None, (None, None), None, NOW, POLICY, "ipdb/current").unwrap();
        assert!(
            matches!(&r, Promotion::Wait(w) if w.contains("published nothing")),
            "{r:?}"
        );
    }

    #[test]
    fn refuses_a_version_whose_probe_failed() {
        let old = record("v2", "2026-11-01T00:00:00Z");
        // Failed once, probed fine since: still refused (no failed probe is the rule).
        let e = decide_now(&old, &status(Some(("v2", true)), Some("v2")), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "staging's probe of v2 failed at 2026-12-01T02:17:00Z: page 3: checksum mismatch"
        );
        // A failed probe of another version does not count against this one.
        assert!(matches!(
            decide_now(&old, &status(Some(("v2", true)), Some("v1")), None),
            Ok(Promotion::Promote(_))
        ));
        let e = decide(Some("{"), (None, None), None, NOW, POLICY, "k").unwrap_err();
        assert!(e.to_string().starts_with("staging's record: "), "{e}");
        let e = decide_now(
            &record("v2", "last week"),
            &status(Some(("v2", true)), None),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, PromoteError::UpdatedAt(_)), "{e}");
    }

    #[test]
    fn the_same_version_is_unchanged() {
        let s = record("v2", "2026-12-01T12:00:00Z");
        assert_eq!(
            decide_now(&s, &status(None, Some("v2")), Some(&s)).unwrap(),
            Promotion::Unchanged("v2".into())
        );
    }

    #[test]
    fn objects_are_verified_one_by_one() {
        let s = record("v2", "");
        let objects = s.objects();
        assert_eq!(objects.len(), 4, "{objects:?}");
        assert_eq!(objects[1].0, "ipdb/v2.table/dir.bin");
        verify_object(&objects[1].0, &objects[1].1, Some(b"dir")).unwrap();
        let e = verify_object(&objects[2].0, &objects[2].1, Some(b"p1")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "object ipdb/v2.table/page-000.bin does not match its checksum in staging's record"
        );
        let e = verify_object("k", "x", None).unwrap_err();
        assert!(matches!(e, PromoteError::Missing(_)));
    }

    #[test]
    fn retention_keeps_the_named_and_the_recent() {
        let (cur, prev) = (record("v3", ""), record("v2", ""));
        let old = NOW - 2 * RETENTION_GRACE_MS;
        let mut listed: Vec<(String, u64)> = cur
            .objects()
            .into_iter()
            .chain(prev.objects())
            .map(|(k, _)| (k, old))
            .collect();
        let gone = record("v1", "");
        listed.extend(gone.objects().into_iter().map(|(k, _)| (k, old)));
        listed.push(("ipdb/uploading.mmdb".into(), NOW - RETENTION_GRACE_MS + 1));
        listed.push(("other/thing".into(), old));
        let del = to_delete(&listed, &[&cur, &prev], NOW);
        let want: Vec<String> = gone.objects().into_iter().map(|(k, _)| k).collect();
        assert_eq!(del, want);
    }
}
