//! How fresh the served IP database is, for `/healthz` and `scripts/smoke.sh`: when it was
//! built, whether that is longer ago than `IPDB_STALE_AFTER_DAYS`, when the scheduled update
//! last succeeded and when it runs next. Pure: the caller passes the time.

use super::source::{parse_rfc3339, rfc3339};
use super::update::UpdateStatus;
use serde::Serialize;

const DAY_MS: u64 = 86_400_000;

/// The `ipdb.freshness` fragment of `/healthz`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "IpdbFreshness"))]
pub struct Freshness {
    /// RFC 3339 build time of the served database (its metadata's `build_epoch`); `None`
    /// before the isolate serves one, or when the metadata has none.
    pub built_at: Option<String>,
    /// Whole days since then.
    pub age_days: Option<u64>,
    /// The configured age after which it is stale.
    pub stale_after_days: u32,
    /// Older than that; `None` when the age is unknown.
    pub stale: Option<bool>,
    /// RFC 3339 time of the last scheduled update that ended `published` or `unchanged`.
    pub last_success_at: Option<String>,
    /// Seconds since then.
    pub since_last_success_s: Option<u64>,
    /// RFC 3339 time of the next scheduled update, from the cron expression of the last run.
    pub next_check_at: Option<String>,
}

/// The freshness at `now_ms` of a database built at `build_epoch` (seconds; 0 or `None`:
/// unknown), given the last update's status.
pub fn freshness(
    now_ms: u64,
    build_epoch: Option<u64>,
    status: Option<&UpdateStatus>,
    stale_after_days: u32,
) -> Freshness {
    let built_ms = build_epoch.filter(|&e| e > 0).map(|e| e * 1000);
    let age_days = built_ms.map(|b| now_ms.saturating_sub(b) / DAY_MS);
    let last_success_at = status.and_then(|s| s.last_success_at.clone());
    let since = last_success_at
        .as_deref()
        .and_then(parse_rfc3339)
        .map(|t| now_ms.saturating_sub(t) / 1000);
    Freshness {
        built_at: built_ms.map(rfc3339),
        age_days,
        stale_after_days,
        stale: built_ms.map(|b| now_ms.saturating_sub(b) > u64::from(stale_after_days) * DAY_MS),
        last_success_at,
        since_last_success_s: since,
        next_check_at: status.and_then(|s| s.next_check_at.clone()),
    }
}

/// The next run after `now_ms` of a daily cron expression (`M H * * *`, as `wrangler.toml`
/// schedules the update); `None` for any other shape.
pub fn next_daily_run(cron: &str, now_ms: u64) -> Option<u64> {
    let f: Vec<&str> = cron.split_whitespace().collect();
    let [m, h, "*", "*", "*"] = f.as_slice() else {
        return None;
    };
    let (m, h): (u64, u64) = (m.parse().ok()?, h.parse().ok()?);
    if m > 59 || h > 23 {
        return None;
    }
    let today = now_ms - now_ms % DAY_MS + (h * 60 + m) * 60_000;
    Some(if today > now_ms {
        today
    } else {
        today + DAY_MS
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::update::{Plan, UpdateStatus};

    /// 2026-12-02T01:00:00Z.
    const NOW: u64 = 1_796_173_200_000;

    #[test]
    fn stale_after_the_configured_days() {
        // Built 2026-06-01T00:00:00Z: 184 days before NOW.
        let built = 1_780_272_000;
        let f = freshness(NOW, Some(built), None, 45);
        assert_eq!(f.built_at.as_deref(), Some("2026-06-01T00:00:00Z"));
        assert_eq!((f.age_days, f.stale), (Some(184), Some(true)));
        assert_eq!(freshness(NOW, Some(built), None, 200).stale, Some(false));
        // 184 whole days and an hour: not stale at 184 days exactly, yes past it.
        assert_eq!(freshness(NOW, Some(built), None, 184).stale, Some(true));
        assert_eq!(
            freshness(NOW - 3_600_000, Some(built), None, 184).stale,
            Some(false)
        );
        let unknown = freshness(NOW, Some(0), None, 45);
        assert_eq!((unknown.built_at, unknown.stale), (None, None));
    }

    #[test]
    fn time_since_the_last_success_and_the_next_run() {
        let mut s = UpdateStatus::of(
            &Ok(Plan::Unchanged("v".into())),
            "2026-12-01T03:17:00Z".into(),
        );
        s.next_check_at = Some("2026-12-02T03:17:00Z".into());
        let f = freshness(NOW, None, Some(&s), 45);
        assert_eq!(f.last_success_at.as_deref(), Some("2026-12-01T03:17:00Z"));
        assert_eq!(f.since_last_success_s, Some(21 * 3600 + 43 * 60));
        assert_eq!(f.next_check_at.as_deref(), Some("2026-12-02T03:17:00Z"));
    }

    #[test]
    fn next_run_of_a_daily_cron() {
        assert_eq!(
            next_daily_run("17 3 * * *", NOW).map(rfc3339).as_deref(),
            Some("2026-12-02T03:17:00Z")
        );
        assert_eq!(
            next_daily_run("0 1 * * *", NOW).map(rfc3339).as_deref(),
            Some("2026-12-03T01:00:00Z")
        );
        assert_eq!(
            next_daily_run("17 0 * * *", NOW).map(rfc3339).as_deref(),
            Some("2026-12-03T00:17:00Z")
        );
        for other in ["*/5 * * * *", "17 3 * * 1", "61 3 * * *", ""] {
            assert_eq!(next_daily_run(other, NOW), None, "{other}");
        }
    }
}
