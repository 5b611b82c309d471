//! The isolate's IP database over its ports: `egn_core::ip::serving` decides when to check the
//! record, which version serves, swap, fallback and the broken-version memo; this runs a request's
//! start (the check after the answer), loads the pages it needs, runs the cron's probe and its
//! publish job (`egn_core::ip::publish`), and says what is logged and answered. The adapter gives
//! it the store (KV, R2, `ASSETS`), the clock, the embedded bundled directory and, for the cron,
//! the job's ports ([`Publisher`]).

use crate::dispatch::{Background, Level};
use crate::ip::page_error;
use crate::ApiError;
use egn_core::ip::publish::{
    self, Against, Bucket, Fetch, Gunzip, Job, Kv, Mode, Ports, Run, Timer,
};
use egn_core::ip::serving::{Checked, Clock, IpdbStore, PageError, Served, Serving, Start};
use egn_core::ip::table::page_name;
use egn_core::ip::update::{Probe, UpdateError};
use egn_core::ip::{IpdbRecord, IpdbSettings};
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

/// The cron's bindings for one publish run: the core's [`Ports`], owned. `kv` is what the
/// binding lookup answered: only a configured run needs it, so a missing one fails only that.
pub struct Publisher<K, B, F, G, T, E> {
    /// The record and the status (`IPDB_CONFIG`), or why the binding is missing.
    pub kv: Result<K, E>,
    /// Staging's record and status, when production reads staging's namespace.
    pub staging_kv: Option<K>,
    /// The published objects.
    pub bucket: B,
    /// Staging's objects, when production reads staging's bucket.
    pub staging_bucket: Option<B>,
    /// The source.
    pub fetch: F,
    /// The decompressor.
    pub gunzip: G,
    /// The deadline's timer.
    pub timer: T,
}

/// Why the cron's run did not end in `published`, `unchanged` or `waiting`. The texts are the
/// cron's log.
#[derive(Debug, thiserror::Error)]
pub enum PublishError<E: std::error::Error> {
    /// The KV binding is missing.
    #[error("KV binding: {0}")]
    Binding(E),
    /// The candidate was refused or could not be fetched or stored.
    #[error(transparent)]
    Update(#[from] UpdateError),
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

    /// The cron's publish run ([`publish::Ports::run`]): nothing without a source or a
    /// promotion; else the prior record, this isolate's probe of what serves (the database a
    /// download is vetted against), the run, its status kept for this isolate's `/healthz`, and
    /// its notes logged. Answers the run's summary.
    ///
    /// # Errors
    /// [`PublishError`] when the KV binding is missing, or the candidate was refused or not
    /// stored.
    pub async fn publish<K, B, F, G, T, E>(
        &self,
        log: &impl Fn(Level, &str),
        settings: &IpdbSettings,
        cron: &str,
        p: Publisher<K, B, F, G, T, E>,
    ) -> Result<String, PublishError<E>>
    where
        K: Kv,
        B: Bucket,
        F: Fetch,
        G: Gunzip,
        T: Timer,
        E: std::error::Error,
    {
        let Some(mode) = Mode::of(settings) else {
            return Ok(publish::OFF.into());
        };
        let kv = p.kv.map_err(PublishError::Binding)?;
        let ports = Ports {
            kv: &kv,
            bucket: &p.bucket,
            staging_kv: p.staging_kv.as_ref(),
            staging_bucket: p.staging_bucket.as_ref(),
            fetch: &p.fetch,
            gunzip: &p.gunzip,
            timer: &p.timer,
            clock: &self.clock,
        };
        let prior = ports.prior(settings).await;
        let at = publish::iso_ms(self.clock.now_ms());
        let (serving, probe) = self.probe(log, prior.current.as_ref(), at).await;
        let job = Job {
            settings,
            mode,
            cron,
            serving: match &serving {
                Ok(s) => Ok(Against {
                    db: s.db(),
                    attribution: s.attribution().cloned(),
                }),
                Err(e) => Err(UpdateError::Serving(e.message.clone())),
            },
            probe,
        };
        let Run {
            result,
            status,
            notes,
        } = ports.run(job, prior).await;
        self.serving.set_last_update(status);
        for note in notes {
            let level = if note.is_error() {
                Level::Error
            } else {
                Level::Info
            };
            log(level, &note.to_string());
        }
        Ok(Run::summary(&result?))
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

    /// The publish job's other ports: KV in a map (a write to `fail_put` fails), a bucket
    /// nobody writes to in these runs, a source that answers 404 to every URL it records, no
    /// gunzip, and a timer that never fires.
    mod cron {
        use super::*;
        use egn_core::ip::publish::{Listing, Response};
        use egn_core::ip::update::{status_key, UpdateStatus};
        use futures_util::stream::{empty, Empty};

        type Chunks = Empty<Result<Vec<u8>, Down>>;

        #[derive(Clone, Default)]
        pub(super) struct Texts {
            pub(super) map: Rc<RefCell<HashMap<String, String>>>,
            pub(super) fail_put: Option<String>,
        }

        impl Kv for Texts {
            type Error = Down;
            async fn get_text(&self, key: &str) -> Result<Option<String>, Down> {
                Ok(self.map.borrow().get(key).cloned())
            }
            async fn put_text(&self, key: &str, text: String) -> Result<(), Down> {
                if self.fail_put.as_deref() == Some(key) {
                    return Err(Down(key.into()));
                }
                self.map.borrow_mut().insert(key.into(), text);
                Ok(())
            }
        }

        pub(super) struct Objects;

        impl Bucket for Objects {
            type Error = Down;
            async fn get(&self, _: &str) -> Result<Option<Vec<u8>>, Down> {
                Ok(None)
            }
            async fn put(&self, key: &str, _: Vec<u8>) -> Result<(), Down> {
                Err(Down(key.into()))
            }
            async fn list(&self, _: &str, _: Option<String>) -> Result<Listing, Down> {
                Ok(Listing::default())
            }
            async fn delete(&self, _: Vec<String>) -> Result<(), Down> {
                Ok(())
            }
        }

        #[derive(Clone, Default)]
        pub(super) struct Source(pub(super) Rc<RefCell<Vec<String>>>);

        impl Fetch for Source {
            type Error = Down;
            type Body = Chunks;
            async fn get(
                &self,
                url: &str,
                _: &[(&'static str, String)],
            ) -> Result<Response<Chunks>, Down> {
                self.0.borrow_mut().push(url.into());
                Ok(Response {
                    status: 404,
                    headers: Vec::new(),
                    body: empty(),
                })
            }
            fn abort(&self) {}
        }

        pub(super) struct NoGunzip;

        impl Gunzip for NoGunzip {
            type Error = Down;
            type Output = Chunks;
            fn gunzip(&self, _: Vec<u8>) -> Result<Chunks, Down> {
                Err(Down("gunzip".into()))
            }
        }

        pub(super) struct Never;

        impl Timer for Never {
            async fn sleep(&self, _: u32) {
                std::future::pending::<()>().await;
            }
        }

        pub(super) type Ports = Publisher<Texts, Objects, Source, NoGunzip, Never, Down>;

        pub(super) fn ports(kv: Result<&Texts, Down>, source: &Source) -> Ports {
            Publisher {
                kv: kv.cloned(),
                staging_kv: None,
                bucket: Objects,
                staging_bucket: None,
                fetch: source.clone(),
                gunzip: NoGunzip,
                timer: Never,
            }
        }

        pub(super) fn stored(kv: &Texts, settings: &IpdbSettings) -> UpdateStatus {
            let text = kv.map.borrow()[&status_key(&settings.kv_key)].clone();
            serde_json::from_str(&text).unwrap()
        }
    }

    const PLAIN: &str = "https://db.test/country.mmdb";

    fn settings(source: bool) -> IpdbSettings {
        let vars: &[(&str, &str)] = if source {
            &[("IPDB_SOURCE_URL", PLAIN)]
        } else {
            &[]
        };
        crate::testing::config(vars).unwrap().ipdb
    }

    /// A publish run of `db` over `kv` and `source` (fired by `17 3 * * *`), with what it logged.
    fn publish(
        db: &Ipdb<Memory, Manual>,
        settings: &IpdbSettings,
        kv: Result<&cron::Texts, Down>,
        source: &cron::Source,
    ) -> (Result<String, PublishError<Down>>, Lines) {
        let bg = Bg::default();
        let log = |l: Level, s: &str| bg.log(l, s);
        let ports = cron::ports(kv, source);
        let out = block_on(db.publish(&log, settings, "17 3 * * *", ports));
        (out, bg.lines.take())
    }

    #[test]
    fn a_run_with_nothing_configured_is_off_and_needs_no_kv_binding() {
        let db = ipdb(&table(), true);
        let source = cron::Source::default();
        let no_kv = || Err(Down("no IPDB_CONFIG".into()));
        let (out, lines) = publish(&db, &settings(false), no_kv(), &source);
        assert_eq!(out.unwrap(), egn_core::ip::publish::OFF);
        assert!(lines.is_empty());
        // With a source the binding is needed, before anything is fetched.
        let (out, _) = publish(&db, &settings(true), no_kv(), &source);
        let e = out.err().unwrap();
        assert!(matches!(e, PublishError::Binding(_)));
        assert_eq!(e.to_string(), "KV binding: store down: no IPDB_CONFIG");
        assert!(source.0.borrow().is_empty());
    }

    #[test]
    fn a_run_probes_what_serves_keeps_its_status_here_and_logs_its_notes() {
        let db = ipdb(&table(), true);
        db.clock.0.set(1_796_173_200_123);
        let settings = settings(true);
        let kv = cron::Texts::default();
        let source = cron::Source::default();
        let (out, lines) = publish(&db, &settings, Ok(&kv), &source);
        assert_eq!(out.err().unwrap().to_string(), "download: answered 404");
        assert_eq!(*source.0.borrow(), [PLAIN]);
        let status = cron::stored(&kv, &settings);
        let probe = status.probe.clone().unwrap();
        assert!(probe.ok, "{:?}", probe.reason);
        assert_eq!(probe.at, "2026-12-02T01:00:00.123Z");
        assert_eq!(db.serving.health().last_update, Some(status));
        assert!(lines.is_empty(), "{lines:?}");
        // A status that cannot be stored is logged as an error; this isolate still shows it.
        let kv = cron::Texts {
            fail_put: Some(egn_core::ip::update::status_key(&settings.kv_key)),
            ..Default::default()
        };
        let (out, lines) = publish(&db, &settings, Ok(&kv), &source);
        assert!(out.is_err());
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].0, Level::Error);
        assert!(
            lines[0].1.starts_with("ipdb update status not stored: "),
            "{lines:?}"
        );
        assert!(db.serving.health().last_update.is_some());
    }

    #[test]
    fn a_serving_database_that_does_not_load_refuses_the_download_unfetched() {
        let db = ipdb(&table(), false);
        let settings = settings(true);
        let kv = cron::Texts::default();
        let source = cron::Source::default();
        let (out, _) = publish(&db, &settings, Ok(&kv), &source);
        let e = out.err().unwrap();
        assert!(
            matches!(e, PublishError::Update(UpdateError::Serving(_))),
            "{e}"
        );
        assert!(source.0.borrow().is_empty());
        let probe = cron::stored(&kv, &settings).probe.unwrap();
        assert!(!probe.ok);
        assert!(probe.reason.unwrap().contains("store down"));
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
