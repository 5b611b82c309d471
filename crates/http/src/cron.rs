//! The cron's notification housekeeping: trim each owner's inbox within the configured
//! subrequest budget, and which trimmed owners' hubs are poked with what budget is left. The
//! adapter runs it and sends the pokes.

use crate::ApiError;
use egn_core::backend::HttpClient;
use egn_core::config::Config;
use egn_core::notify::NotificationStore;
use serde_json::{json, Value};

/// Subrequests one invocation may make (the free plan's limit).
pub const SUBREQUESTS: u32 = 50;

/// The owners to poke out of `trimmed`, after `calls` Data API calls: pokes are subrequests
/// too, so they get what is left of [`SUBREQUESTS`] less two spare.
#[must_use]
pub fn pokes(trimmed: &[String], calls: u32) -> Vec<String> {
    let room = SUBREQUESTS.saturating_sub(calls + 2) as usize;
    trimmed.iter().take(room).cloned().collect()
}

/// Runs the housekeeping over `store` (or says why it was skipped): the cron's log fragment and
/// the owners whose hubs to poke.
pub async fn housekeeping<H: HttpClient>(
    store: Result<NotificationStore<H>, ApiError>,
    cfg: &Config,
    now_ms: i64,
) -> (Value, Vec<String>) {
    let store = match store {
        Ok(s) => s,
        Err(e) => return (json!({ "skipped": e.message }), Vec::new()),
    };
    let (keep, budget) = (cfg.max_per_owner, cfg.housekeeping_subrequests);
    match store.housekeeping(keep, budget, 500, now_ms).await {
        Ok(r) => (json!(r), pokes(&r.trimmed_owners, r.calls)),
        Err(e) => (json!({ "error": e.to_string() }), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{config, Script};
    use egn_core::backend::native::block_on;

    #[test]
    fn pokes_stay_within_the_subrequests_left() {
        let owners: Vec<String> = (0..60).map(|i| format!("o{i}")).collect();
        assert_eq!(pokes(&owners, 0).len(), 48);
        assert_eq!(pokes(&owners, 40).len(), 8);
        assert_eq!(pokes(&owners, 48), Vec::<String>::new());
        assert_eq!(pokes(&owners, 60), Vec::<String>::new());
        assert_eq!(pokes(&owners[..3], 10), ["o0", "o1", "o2"]);
    }

    #[test]
    fn a_missing_store_skips_and_a_failed_one_reports_without_pokes() {
        let cfg = config(&[]).unwrap();
        let none = Err(ApiError::not_configured("the Data API"));
        let (line, owners) = block_on(housekeeping::<Script>(none, &cfg, 0));
        assert_eq!(line["skipped"], "the Data API is not configured");
        assert!(owners.is_empty());
        let http = Script::default();
        let store = crate::backends::store(http.clone(), &cfg);
        let (line, owners) = block_on(housekeeping(store, &cfg, 0));
        assert!(
            line["error"].as_str().unwrap().contains("unreachable"),
            "{line}"
        );
        assert!(owners.is_empty());
        assert!(http.1.get() >= 1);
    }
}
