//! The isolate's IP database over its ports: `egn_core::ip::serving` decides when to check the
//! record, which version serves, swap, fallback and the broken-version memo; this runs a request's
//! start (the check after the answer), loads the pages it needs, runs the cron's probe, and says
//! what is logged and answered. The adapter gives it the store (KV, R2, `ASSETS`), the clock and
//! the embedded bundled directory.

use crate::dispatch::{Background, Level};
use crate::ip::page_error;
use crate::ApiError;
use egn_core::ip::serving::{Checked, Clock, IpdbStore, PageError, Served, Serving, Start};
use egn_core::ip::table::page_name;
use egn_core::ip::update::Probe;
use egn_core::ip::IpdbRecord;
use std::net::IpAddr;
use std::rc::Rc;

/// The bundled table's pages (converted from `ip/default.mmdb` by the asset build).
pub const BUNDLED_PAGES: &str = "ip/country";

/// The isolate's serving state with the ports it reads through.
pub struct Ipdb<S, C> {
    /// The isolate's serving state (requests share it).
    pub serving: Rc<Serving>,
    /// The version record, published objects and bundled pages.
    pub store: S,
    /// The clock.
    pub clock: C,
    /// The bundled table's directory, embedded in the worker: a fresh isolate opens it with no
    /// I/O and reads one page through `ASSETS` for its first answer.
    pub bundled_dir: &'static [u8],
}

/// What a check of the record logs: a rejection at error level, a swap; nothing else.
pub fn checked_line<E: std::error::Error>(c: &Checked<E>) -> Option<(Level, String)> {
    match c {
        Checked::Rejected(e) => Some((Level::Error, format!("ipdb refresh rejected: {e}"))),
        Checked::Swapped { version, ms } => {
            Some((Level::Info, format!("ipdb swapped to {version} in {ms} ms")))
        }
        Checked::NoRecord | Checked::UpToDate(_) => None,
    }
}

fn log_checked<E: std::error::Error>(log: &impl Fn(Level, &str), c: &Checked<E>) {
    if let Some((level, line)) = checked_line(c) {
        log(level, &line);
    }
}

/// A page that could not be loaded, as the answer says it; a corrupt one is logged.
fn page_answer<E: std::error::Error>(log: &impl Fn(Level, &str), e: PageError<E>) -> ApiError {
    if let PageError::Corrupt { page, source } = &e {
        let name = page_name(*page);
        log(
            Level::Error,
            &format!("asset {BUNDLED_PAGES}/{name} rejected: {source}"),
        );
    }
    page_error(e, BUNDLED_PAGES)
}

impl<S, C> Ipdb<S, C>
where
    S: IpdbStore<Error: 'static> + Clone + 'static,
    C: Clock + Clone + 'static,
{
    /// [`Serving::start`] with the bundled table as the cold start's default.
    async fn start(
        &self,
        log: &impl Fn(Level, &str),
        check_every_ms: Option<u64>,
        ips: &[IpAddr],
    ) -> Result<Start<S::Error>, ApiError> {
        // Copied (~164 KB, microseconds; only on a cold start) so bundled and swapped tables
        // are one type, the one the native bench times.
        let bundled = || {
            Served::bundled(self.bundled_dir.to_vec(), &self.clock).map_err(|e| {
                let path = "ip/country/dir.bin (embedded)";
                log(Level::Error, &format!("asset {path} rejected: {e}"));
                ApiError::asset_corrupt(path, e)
            })
        };
        let (store, clock) = (&self.store, &self.clock);
        let s = self
            .serving
            .start(store, clock, check_every_ms, bundled, ips)
            .await?;
        if let Some(c) = &s.checked {
            log_checked(log, c);
        }
        Ok(s)
    }

    /// The database serving now with the pages `ips` need loaded; a check of the record runs
    /// after the answer when one is due (every `check_every_ms`), each fallback to the version a
    /// failed one replaced is logged.
    ///
    /// # Errors
    /// 503 `asset_corrupt` / `asset_unavailable` for a table or page that cannot serve.
    pub async fn served(
        &self,
        bg: &impl Background,
        check_every_ms: u64,
        ips: &[IpAddr],
    ) -> Result<Rc<Served>, ApiError> {
        let log = |level: Level, line: &str| bg.log(level, line);
        let s = self.start(&log, Some(check_every_ms), ips).await?;
        if s.check_after {
            // Off the request path: this request is answered with the current database.
            let (serving, store, clock) =
                (self.serving.clone(), self.store.clone(), self.clock.clone());
            bg.after(Box::pin(async move {
                checked_line(&serving.check(&store, &clock).await)
                    .into_iter()
                    .collect()
            }));
        }
        let ready = self
            .serving
            .ready(&self.store, &self.clock, s.served, ips)
            .await;
        for f in ready.fell_back {
            let e = page_answer(&log, f.error);
            let line = format!("ipdb {} page rejected, serving {}: {e}", f.from, f.to);
            log(Level::Error, &line);
        }
        ready.result.map_err(|e| page_answer(&log, e))
    }

    /// Every page of `s` (the cron vets candidates against the whole table).
    ///
    /// # Errors
    /// The first page that failed, as [`Ipdb::served`] answers it.
    pub async fn ready_all(
        &self,
        log: &impl Fn(Level, &str),
        s: Rc<Served>,
    ) -> Result<Rc<Served>, ApiError> {
        let all = self.serving.ready_all(&self.store, &self.clock, &s).await;
        all.map_err(|e| page_answer(log, e))?;
        Ok(s)
    }

    /// The cron's probe: this isolate checks the record now (so it serves what is published),
    /// then loads and verifies every page of what it serves ([`Serving::cron_probe`] decides
    /// what the probe says, as of `at`); the serving version is returned for vetting.
    pub async fn probe(
        &self,
        log: &impl Fn(Level, &str),
        published: Option<&IpdbRecord>,
        at: String,
    ) -> (Result<Rc<Served>, ApiError>, Option<Probe>) {
        let checked = self.serving.check_now(&self.store, &self.clock).await;
        if let Some(c) = &checked {
            log_checked(log, c);
        }
        let rejected = checked.and_then(|c| c.rejection());
        let s = match self.start(log, None, &[]).await {
            Ok(s) => s.served,
            Err(e) => return (Err(e), None),
        };
        // Why the record's version does not serve, as of now (requests may check meanwhile).
        let rejected = rejected.or_else(|| self.serving.health().last_check_outcome);
        let all = self.ready_all(log, s.clone()).await;
        let loaded = all.as_ref().map(|_| ()).map_err(|e| e.message.clone());
        let probe = self.serving.cron_probe(&s, published, rejected, loaded, at);
        (all, Some(probe))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Lines;
    use egn_core::backend::native::block_on;
    use egn_core::ip::serving::CheckError;
    use egn_core::ip::table::{build, Ranges, TableFiles};
    use egn_core::ip::update::table_meta;
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;
    use std::future::Future;
    use std::pin::Pin;

    #[derive(Debug, thiserror::Error)]
    #[error("store down: {0}")]
    struct Down(String);

    /// No record, no objects; the bundled pages by name.
    #[derive(Clone, Default)]
    struct Memory(Rc<RefCell<HashMap<String, Vec<u8>>>>);

    impl IpdbStore for Memory {
        type Error = Down;
        async fn record(&self) -> Result<Option<String>, Down> {
            Ok(None)
        }
        async fn update_status(&self) -> Result<Option<String>, Down> {
            Ok(None)
        }
        async fn object(&self, _key: &str) -> Result<Option<Vec<u8>>, Down> {
            Ok(None)
        }
        async fn bundled_page(&self, name: &str) -> Result<Vec<u8>, Down> {
            self.0.borrow().get(name).cloned().ok_or(Down(name.into()))
        }
    }

    #[derive(Clone, Default)]
    struct Manual(Rc<Cell<u64>>);

    impl Clock for Manual {
        fn now_ms(&self) -> u64 {
            self.0.get()
        }
    }

    /// Records the lines and keeps the work for after the answer.
    #[derive(Default)]
    struct Bg {
        lines: RefCell<Lines>,
        after: RefCell<Vec<Pin<Box<dyn Future<Output = Lines>>>>>,
    }

    impl Background for Bg {
        fn after(&self, work: Pin<Box<dyn Future<Output = Lines>>>) {
            self.after.borrow_mut().push(work);
        }
        fn log(&self, level: Level, line: &str) {
            self.lines.borrow_mut().push((level, line.to_owned()));
        }
    }

    fn table() -> TableFiles {
        let ranges = Ranges {
            v4: vec![(0, None), (0x0808_0800, Some(*b"US")), (0x0808_0900, None)],
            v6: vec![(0, None)],
        };
        build(&ranges, &table_meta("test", 7, None))
    }

    /// A leaked bundled directory (the worker's is a `static`).
    fn ipdb(files: &TableFiles, pages: bool) -> Ipdb<Memory, Manual> {
        let store = Memory::default();
        if pages {
            for (i, p) in files.pages.iter().enumerate() {
                store.0.borrow_mut().insert(page_name(i), p.clone());
            }
        }
        Ipdb {
            serving: Rc::new(Serving::new()),
            store,
            clock: Manual::default(),
            bundled_dir: Box::leak(files.dir.clone().into_boxed_slice()),
        }
    }

    fn ip() -> IpAddr {
        "8.8.8.8".parse().unwrap()
    }

    #[test]
    fn a_due_check_runs_after_the_answer_and_only_once_per_interval() {
        let db = ipdb(&table(), true);
        let bg = Bg::default();
        let s = block_on(db.served(&bg, 60_000, &[ip()])).unwrap();
        assert_eq!(s.db().lookup(ip()), egn_core::ip::IpAnswer::Country("US"));
        assert!(bg.after.borrow().is_empty(), "a cold start checked already");
        db.clock.0.set(59_999);
        block_on(db.served(&bg, 60_000, &[ip()])).unwrap();
        assert!(bg.after.borrow().is_empty());
        db.clock.0.set(60_001);
        block_on(db.served(&bg, 60_000, &[ip()])).unwrap();
        block_on(db.served(&bg, 60_000, &[ip()])).unwrap();
        assert_eq!(bg.after.borrow().len(), 1, "claimed once");
        let work = bg.after.borrow_mut().remove(0);
        assert_eq!(
            block_on(work),
            Vec::new(),
            "nothing published: nothing to log"
        );
    }

    #[test]
    fn a_bad_bundled_directory_is_logged_and_answers_asset_corrupt() {
        let mut db = ipdb(&table(), true);
        db.bundled_dir = b"not a table";
        let bg = Bg::default();
        let e = block_on(db.served(&bg, 60_000, &[ip()])).err().unwrap();
        assert_eq!((e.status(), e.code.as_str()), (503, "asset_corrupt"));
        let lines = bg.lines.borrow();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].0, Level::Error);
        assert!(lines[0]
            .1
            .starts_with("asset ip/country/dir.bin (embedded) rejected: "));
    }

    #[test]
    fn a_missing_page_is_unavailable_and_fails_the_cron_probe() {
        let files = table();
        let db = ipdb(&files, false);
        let bg = Bg::default();
        let e = block_on(db.served(&bg, 60_000, &[ip()])).err().unwrap();
        assert_eq!(e.code.as_str(), "asset_unavailable");
        let log = |l: Level, s: &str| bg.log(l, s);
        let (served, probe) = block_on(db.probe(&log, None, "t0".into()));
        let probe = probe.unwrap();
        assert_eq!(served.err().unwrap().code.as_str(), "asset_unavailable");
        assert!(!probe.ok);
        assert!(probe.reason.unwrap().contains("store down"));
        // With its pages the probe of the serving version passes.
        let db = ipdb(&files, true);
        let (served, probe) = block_on(db.probe(&log, None, "t1".into()));
        let probe = probe.unwrap();
        assert!(probe.ok, "{:?}", probe.reason);
        assert_eq!(probe.version, served.ok().unwrap().version());
        assert_eq!(probe.at, "t1");
    }

    #[test]
    fn only_rejections_and_swaps_are_logged() {
        let swapped: Checked<Down> = Checked::Swapped {
            version: "v2".into(),
            ms: 3.0,
        };
        assert_eq!(
            checked_line(&swapped),
            Some((Level::Info, "ipdb swapped to v2 in 3 ms".into()))
        );
        let rejected: Checked<Down> = Checked::Rejected(CheckError::Broken("v3".into()));
        let (level, line) = checked_line(&rejected).unwrap();
        assert_eq!(level, Level::Error);
        assert!(line.starts_with("ipdb refresh rejected: v3"));
        assert_eq!(checked_line::<Down>(&Checked::NoRecord), None);
        assert_eq!(checked_line::<Down>(&Checked::UpToDate("v".into())), None);
    }
}
