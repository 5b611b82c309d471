//! The cron: what runs in which order and what it logs ([`scheduled`]), and the notification
//! housekeeping (trim each owner's inbox within the configured subrequest budget, and which
//! trimmed owners' hubs are poked with what budget is left). The adapter gives it the ports.

use crate::{backends, ApiError};
use egn_core::backend::HttpClient;
use egn_core::config::{Config, ConfigError};
use egn_core::notify::NotificationStore;
use serde_json::{json, Value};
use std::fmt::Display;

/// What the cron reaches: the Data API, the clock, the IP database's publish run and the hubs.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait CronPorts {
    /// Outbound HTTP (the Data API).
    type Http: HttpClient;
    /// Why the IP database's run did not end well.
    type Error: Display;
    /// The HTTP client.
    fn http(&self) -> Self::Http;
    /// Milliseconds since the epoch.
    fn now_ms(&self) -> i64;
    /// The IP database's publish run (`cron` is the expression that fired): its summary.
    async fn publish_ipdb(&self, cfg: &Config, cron: &str) -> Result<String, Self::Error>;
    /// Tells the owners' hubs their inbox changed, awaited (there is no answer to go after).
    async fn poke(&self, owners: Vec<String>);
}

/// The cron's run and its log line: nothing without a configuration; else the IP database's
/// publish run, then the housekeeping, whose trimmed owners' hubs are poked.
pub async fn scheduled<P: CronPorts>(
    ports: &P,
    config: &Result<Config, ConfigError>,
    cron: &str,
) -> Value {
    let cfg = match config {
        Ok(c) => c,
        Err(e) => return json!({"cron": "skipped", "error": e.to_string()}),
    };
    // Logged as `{"Ok": outcome}` or `{"Err": reason}`.
    let ipdb = (ports.publish_ipdb(cfg, cron).await).map_err(|e| e.to_string());
    let store = backends::store(ports.http(), cfg);
    let (hk, owners) = housekeeping(store, cfg, ports.now_ms()).await;
    ports.poke(owners).await;
    json!({"cron": "done", "ipdb": ipdb, "housekeeping": hk})
}

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
    use crate::testing::{config, data_api, Script};
    use egn_core::backend::native::block_on;
    use std::cell::RefCell;

    #[derive(Clone, Debug, thiserror::Error)]
    #[error("{0}")]
    struct Failed(&'static str);

    /// A publish run that answers `ipdb`, hubs that record their pokes.
    struct Ports {
        http: Script,
        ipdb: Result<String, Failed>,
        runs: RefCell<Vec<String>>,
        poked: RefCell<Vec<String>>,
    }

    impl CronPorts for Ports {
        type Http = Script;
        type Error = Failed;
        fn http(&self) -> Script {
            self.http.clone()
        }
        fn now_ms(&self) -> i64 {
            1_700_000_000_000
        }
        async fn publish_ipdb(&self, _: &Config, cron: &str) -> Result<String, Failed> {
            self.runs.borrow_mut().push(cron.to_owned());
            self.ipdb.clone()
        }
        async fn poke(&self, owners: Vec<String>) {
            self.poked.borrow_mut().extend(owners);
        }
    }

    fn ports(ipdb: Result<String, Failed>) -> Ports {
        Ports {
            http: Script::default(),
            ipdb,
            runs: RefCell::default(),
            poked: RefCell::default(),
        }
    }

    #[test]
    fn a_configuration_that_does_not_parse_skips_the_run() {
        let p = ports(Ok("published v1".into()));
        let bad = config(&[("NOTIFY_MAX_PER_OWNER", "many")]);
        let line = block_on(scheduled(&p, &bad, "17 3 * * *"));
        assert_eq!(line["cron"], "skipped");
        assert!(line["error"]
            .as_str()
            .unwrap()
            .contains("NOTIFY_MAX_PER_OWNER"));
        assert!(p.runs.borrow().is_empty());
        assert_eq!(p.http.1.get(), 0);
    }

    #[test]
    fn the_ipdb_runs_then_the_housekeeping_pokes_the_trimmed_owners() {
        let p = ports(Err(Failed("download: answered 404")));
        let cfg = config(&[]);
        let line = block_on(scheduled(&p, &cfg, "17 3 * * *"));
        assert_eq!(*p.runs.borrow(), ["17 3 * * *"]);
        assert_eq!(line["cron"], "done");
        assert_eq!(line["ipdb"], json!({"Err": "download: answered 404"}));
        assert!(line["housekeeping"]["error"].is_string(), "{line}");
        assert!(p.poked.borrow().is_empty());
        // A housekeeping that trimmed one owner (then nothing expired, and its budget of 6
        // calls ends before the senders' index): that hub is poked.
        let p = ports(Ok("unchanged (v1)".into()));
        for answer in [
            r#"{"documents":[{"_id":"ana"}]}"#,
            r#"{"documents":[{"_id":"i9","revision":5}]}"#,
            r#"{"matchedCount":3,"modifiedCount":3}"#,
            r#"{"documents":[]}"#,
        ] {
            p.http.0.borrow_mut().push(data_api(200, answer));
        }
        let cfg = config(&[("HOUSEKEEPING_SUBREQUESTS", "6")]);
        let line = block_on(scheduled(&p, &cfg, "17 3 * * *"));
        assert_eq!(line["housekeeping"]["trimmed"], 3, "{line}");
        assert_eq!(line["ipdb"], json!({"Ok": "unchanged (v1)"}));
        assert_eq!(*p.poked.borrow(), ["ana"], "{line}");
    }

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
