//! The IPDB an isolate serves, as a platform-free state machine: when to re-read the version
//! record (the watch interval), which version serves, swapping in a new one, falling back one
//! step when a page of a swapped-in version fails, and the memo that keeps a broken version from
//! being fetched again on every check. The worker adapter implements [`IpdbStore`] over KV, R2
//! and the assets binding and keeps one [`Serving`] per isolate; the unit tests drive it over
//! memory with a hand-set [`Clock`].
//!
//! The seam: this module only *serves* what a version record names. Where new versions come
//! from (the cron's download and vetting in `update.rs`, `scripts/publish-ipdb.sh`, any later
//! source) is the publisher's business; a publisher's only contract with this module is the
//! record and the objects it names ([`IpdbRecord`]).

use super::freshness::{freshness, Freshness};
use super::refresh::{self, Check, RefreshError};
use super::table::{IpTable, TableError};
use super::update::{self, UpdateStatus};
use super::Attribution;
use futures_util::future::{join, join_all};
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::rc::Rc;

mod health;
mod served;
#[cfg(test)]
mod tests;

pub use health::{Health, TableHealth};
use served::{meta_of, Pages};
pub use served::{Served, Source};

/// How long a version whose page failed is not swapped in again, unless a newer one is
/// published. A page fails for a corrupt object but also for a transient R2 error, so the memo
/// must end; an hour bounds what a transient error costs, and a really broken version costs an
/// isolate one directory and one failed page read per hour.
pub const BROKEN_RETRY_MS: u64 = 3_600_000;

/// What serving reads: the version record and the last update's status (KV in the worker), the
/// objects a record names (R2), and the bundled table's pages (the assets binding).
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait IpdbStore {
    /// Why a read failed (a missing key or object is not an error: `None`).
    type Error: std::error::Error + 'static;
    /// The version record's text; `None` when nothing is published.
    async fn record(&self) -> Result<Option<String>, Self::Error>;
    /// The last scheduled update's status ([`UpdateStatus`] as JSON); `None` when none ran.
    async fn update_status(&self) -> Result<Option<String>, Self::Error>;
    /// A published object's bytes; `None` when the bucket does not have it.
    async fn object(&self, key: &str) -> Result<Option<Vec<u8>>, Self::Error>;
    /// A page of the bundled table, by file name ([`page_name`]).
    async fn bundled_page(&self, name: &str) -> Result<Vec<u8>, Self::Error>;
}

/// Milliseconds since the Unix epoch; passed in so the watch interval and the memo are tested
/// without waiting.
pub trait Clock {
    /// Now.
    fn now_ms(&self) -> u64;
}

fn elapsed(clock: &impl Clock, started: u64) -> f64 {
    clock.now_ms().saturating_sub(started) as f64
}

/// Why a page could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PageError<E: std::error::Error + 'static> {
    /// The store could not read it.
    #[error("{source}")]
    Read {
        /// Page number.
        page: usize,
        /// The store's error.
        source: E,
    },
    /// A bundled page that does not validate.
    #[error("page {page}: {source}")]
    Corrupt {
        /// Page number.
        page: usize,
        /// Why.
        source: TableError,
    },
    /// A published page that is missing, does not match its checksum or does not validate.
    #[error(transparent)]
    Refused(RefreshError),
    /// A table converted in the isolate lacks a page (a bug: they are all loaded at once).
    #[error("page {0} of a loaded table missing")]
    NotLoaded(usize),
}

/// Why a check did not swap in the published version (the current one keeps serving).
#[derive(Debug, thiserror::Error)]
pub enum CheckError<E: std::error::Error + 'static> {
    /// The store could not read the record or an object.
    #[error(transparent)]
    Store(E),
    /// The record, or an object it names, was refused.
    #[error(transparent)]
    Refused(#[from] RefreshError),
    /// A record naming only the mmdb did not convert into a table.
    #[error("{0}")]
    Convert(#[from] super::convert::ConvertError),
    /// The converted table did not open.
    #[error("{0}")]
    Table(#[from] TableError),
    /// The version's page failed after it was swapped in, less than [`BROKEN_RETRY_MS`] ago.
    #[error("{0}: a page failed to load; not retried")]
    Broken(String),
}

/// The outcome of one check of the record.
#[derive(Debug)]
pub enum Checked<E: std::error::Error + 'static> {
    /// Nothing published.
    NoRecord,
    /// The record names the version served.
    UpToDate(String),
    /// The record's version serves now; `ms` to fetch and open it.
    Swapped {
        /// The new version.
        version: String,
        /// Time to fetch and open its directory (ms).
        ms: f64,
    },
    /// The record's version was not swapped in.
    Rejected(CheckError<E>),
}

impl<E: std::error::Error + 'static> std::fmt::Display for Checked<E> {
    /// What `/healthz` shows as `last_check_outcome`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Checked::NoRecord => f.write_str("no record; serving the bundled database"),
            Checked::UpToDate(v) => write!(f, "up to date ({v})"),
            Checked::Swapped { version, .. } => write!(f, "swapped to {version}"),
            Checked::Rejected(e) => write!(f, "rejected: {e}"),
        }
    }
}

impl<E: std::error::Error + 'static> Checked<E> {
    /// Why the record's version was not swapped in, if it was not.
    pub fn rejection(&self) -> Option<String> {
        match self {
            Checked::Rejected(e) => Some(e.to_string()),
            Checked::NoRecord | Checked::UpToDate(_) | Checked::Swapped { .. } => None,
        }
    }
}

/// A swapped-in version whose page failed: `to` serves in its place.
#[derive(Debug)]
pub struct FellBack<E: std::error::Error + 'static> {
    /// The version given up.
    pub from: String,
    /// The version that serves again.
    pub to: String,
    /// Why its page failed.
    pub error: PageError<E>,
}

/// What [`Serving::ready`] did: the version whose pages are loaded (or why none could be), and
/// every fallback on the way (for the adapter's log).
pub struct Ready<E: std::error::Error + 'static> {
    /// The version to answer with.
    pub result: Result<Rc<Served>, PageError<E>>,
    /// Fallbacks taken, in order.
    pub fell_back: Vec<FellBack<E>>,
}

/// How a request (or the cron) meets the isolate's database ([`Serving::start`]).
pub struct Start<E: std::error::Error + 'static> {
    /// The version to load pages of ([`Serving::ready`]) and answer from.
    pub served: Rc<Served>,
    /// A check of the record is due and claimed: run [`Serving::check`] after the answer.
    pub check_after: bool,
    /// A cold start's check of the record, for the log.
    pub checked: Option<Checked<E>>,
}

/// A version that failed after it was swapped in, and when.
struct Broken {
    version: String,
    at_ms: u64,
}

#[derive(Default)]
struct Watch {
    last_check_ms: u64,
    checking: bool,
    checks: u64,
    last_outcome: Option<String>,
    last_swap_ms: Option<f64>,
    last_update: Option<UpdateStatus>,
    broken: Option<Broken>,
}

/// An isolate's serving state: the current version and the watch over the record. Interior
/// mutability because requests and the background check share it across awaits; no borrow is
/// held over one.
#[derive(Default)]
pub struct Serving {
    current: RefCell<Option<Rc<Served>>>,
    watch: RefCell<Watch>,
}

impl Serving {
    /// Nothing served yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The version serving now; `None` before the first request.
    pub fn current(&self) -> Option<Rc<Served>> {
        self.current.borrow().clone()
    }

    /// Whether a check of the record is due at `now_ms`: `interval_ms` after the last one ended
    /// and none in flight. A `true` claims it: run [`Serving::check`], which releases it.
    pub fn claim_check(&self, now_ms: u64, interval_ms: u64) -> bool {
        let mut w = self.watch.borrow_mut();
        let due = !w.checking && now_ms.saturating_sub(w.last_check_ms) >= interval_ms;
        if due {
            w.checking = true;
        }
        due
    }

    /// The claimed check ([`Serving::claim_check`]): reads the record, swaps in its version when
    /// it changed, reads the last update's status, and releases the claim.
    pub async fn check<S: IpdbStore>(&self, store: &S, clock: &impl Clock) -> Checked<S::Error> {
        let checked = self.refresh(store, clock, None).await;
        self.watch.borrow_mut().checking = false;
        checked
    }

    /// The cron's check, before its probe: run now, whatever the watch interval, when a
    /// version serves and no check is in flight; `None` otherwise (a cold isolate's start
    /// reads the record anyway, and a check in flight ends on its own).
    pub async fn check_now<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
    ) -> Option<Checked<S::Error>> {
        if self.current().is_none() || !self.claim_check(clock.now_ms(), 0) {
            return None;
        }
        Some(self.check(store, clock).await)
    }

    /// Where a request starts: a warm isolate answers from what serves at once and claims a
    /// due check (`check_every_ms`; `None` claims none) to run after the answer; a cold one
    /// builds the bundled table (`bundled`, only then) and runs [`Serving::cold_start`], so it
    /// never serves a stale default when a newer version is published.
    ///
    /// # Errors
    /// The bundled table's, when it does not open.
    pub async fn start<S: IpdbStore, B>(
        &self,
        store: &S,
        clock: &impl Clock,
        check_every_ms: Option<u64>,
        bundled: impl FnOnce() -> Result<Served, B>,
        ips: &[IpAddr],
    ) -> Result<Start<S::Error>, B> {
        if let Some(served) = self.current() {
            let check_after =
                check_every_ms.is_some_and(|every| self.claim_check(clock.now_ms(), every));
            return Ok(Start {
                served,
                check_after,
                checked: None,
            });
        }
        let (served, checked) = self.cold_start(store, clock, bundled()?, ips).await;
        Ok(Start {
            served,
            check_after: false,
            checked,
        })
    }

    /// The first request of an isolate: the record is read and, at the same time, the bundled
    /// pages `ips` need (so the common cold start pays one round trip, not two in a row); the
    /// bundled table serves when no newer version is published. `None` when another request
    /// got there first.
    pub async fn cold_start<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        bundled: Served,
        ips: &[IpAddr],
    ) -> (Rc<Served>, Option<Checked<S::Error>>) {
        if let Some(s) = self.current() {
            return (s, None);
        }
        let bundled = Rc::new(bundled);
        let need = bundled.missing_pages(ips);
        // A page that fails here is fetched again by `ready` (and its error answered there).
        let (checked, _) = join(
            self.refresh(store, clock, Some(&bundled)),
            self.load_pages(store, clock, &bundled, &need),
        )
        .await;
        // A concurrent cold start or the check may have set a version meanwhile: it wins.
        let s = self.current.borrow_mut().get_or_insert(bundled).clone();
        (s, Some(checked))
    }

    /// Loads the pages `ips` need into `s` (concurrently, once per isolate). When a page of a
    /// swapped-in version fails, the version it replaced serves again (this request included)
    /// and the failed one is memoised as broken; a version with nothing to fall back to (the
    /// bundled one) answers the error.
    pub async fn ready<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        s: Rc<Served>,
        ips: &[IpAddr],
    ) -> Ready<S::Error> {
        let mut s = s;
        let mut fell_back = Vec::new();
        loop {
            let need = s.missing_pages(ips);
            let Err(error) = self.load_pages(store, clock, &s, &need).await else {
                return Ready {
                    result: Ok(s),
                    fell_back,
                };
            };
            let Some(old) = s.fallback.borrow_mut().take() else {
                // Another request loading the same page fell back first (it took the fallback,
                // memoised and logged): answer from what serves now, not with the error.
                match self.current() {
                    Some(now) if !Rc::ptr_eq(&now, &s) => {
                        s = now;
                        continue;
                    }
                    _ => {
                        return Ready {
                            result: Err(error),
                            fell_back,
                        }
                    }
                }
            };
            {
                let mut w = self.watch.borrow_mut();
                w.last_outcome = Some(format!("rejected: {}: {error}", s.version));
                w.broken = Some(Broken {
                    version: s.version.clone(),
                    at_ms: clock.now_ms(),
                });
            }
            *self.current.borrow_mut() = Some(old.clone());
            fell_back.push(FellBack {
                from: s.version.clone(),
                to: old.version.clone(),
                error,
            });
            s = old;
        }
    }

    /// Every page of `s` (the cron vets candidates against the whole table).
    ///
    /// # Errors
    /// The first page that failed.
    pub async fn ready_all<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        s: &Served,
    ) -> Result<(), PageError<S::Error>> {
        let all: Vec<usize> = (0..s.db.page_count()).collect();
        self.load_pages(store, clock, s, &all).await
    }

    /// The cron's probe, after it checked the record (`rejected`: why that check did not swap
    /// the record's version in) and loaded every page of `served` (`all_pages`): a published
    /// version that does not serve counts as a failed probe of that version (why: the check's
    /// rejection, else the last check's outcome); otherwise the probe is of the serving version
    /// and fails when one of its pages did. Staging's promotion rule reads it.
    pub fn cron_probe(
        &self,
        served: &Served,
        published: Option<&super::IpdbRecord>,
        rejected: Option<String>,
        all_pages: Result<(), String>,
        at: String,
    ) -> super::update::Probe {
        let (version, reason) = match published.filter(|r| r.version != served.version()) {
            // A cold start's rejection is in its outcome: the record's version does not serve.
            Some(r) => (
                r.version.clone(),
                Some(
                    rejected
                        .or_else(|| self.health().last_check_outcome)
                        .unwrap_or_else(|| "not swapped in".into()),
                ),
            ),
            None => (served.version().to_owned(), all_pages.err()),
        };
        super::update::Probe {
            version,
            at,
            ok: reason.is_none(),
            reason,
        }
    }

    /// Keeps the cron's outcome for this isolate's `/healthz` (others read it from the store).
    pub fn set_last_update(&self, status: UpdateStatus) {
        self.watch.borrow_mut().last_update = Some(status);
    }

    /// The `ipdb` fragment of `/healthz`.
    pub fn health(&self) -> Health {
        let s = self.current();
        let w = self.watch.borrow();
        Health {
            loaded: s.is_some(),
            version: s.as_ref().map(|s| s.version.clone()),
            source: s.as_ref().map(|s| s.source),
            attribution: s.as_ref().and_then(|s| s.attribution.clone()),
            table: s.as_ref().map(|s| TableHealth {
                dir_bytes: s.db.dir_len(),
                pages: s.db.page_count(),
                page_bytes: s.db.pages_len(),
                loaded_pages: s.db.loaded_pages(),
                loaded_page_bytes: s.db.loaded_len(),
                page_load_ms: s.page_ms.get(),
                derived_bytes: s.db.derived_len(),
            }),
            load_ms: s.as_ref().map(|s| s.load_ms),
            checks: w.checks,
            last_check_outcome: w.last_outcome.clone(),
            last_swap_ms: w.last_swap_ms,
            last_update: w.last_update.clone(),
            origin: s.as_ref().and_then(|s| s.origin.clone()),
        }
    }

    /// The `ipdb.freshness` fragment of `/healthz` at `now_ms`: the served database's age
    /// (stale past `stale_after_days`), the last successful update and the next one.
    pub fn freshness(&self, now_ms: u64, stale_after_days: u32) -> Freshness {
        let built = self.current().map(|s| s.build_epoch);
        let w = self.watch.borrow();
        freshness(now_ms, built, w.last_update.as_ref(), stale_after_days)
    }

    /// One check: the record and the status read together; the outcome kept for `/healthz`.
    /// `cold` is the bundled table a cold start opens: what a swap falls back to when nothing
    /// served before.
    async fn refresh<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        cold: Option<&Rc<Served>>,
    ) -> Checked<S::Error> {
        let check = self.try_refresh(store, clock, cold);
        let (checked, status) = join(check, read_status(store)).await;
        let checked = checked.unwrap_or_else(Checked::Rejected);
        let mut w = self.watch.borrow_mut();
        w.last_check_ms = clock.now_ms();
        w.checks += 1;
        w.last_outcome = Some(checked.to_string());
        if let Checked::Swapped { ms, .. } = checked {
            w.last_swap_ms = Some(ms);
        }
        if status.is_some() {
            w.last_update = status;
        }
        checked
    }

    async fn try_refresh<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        cold: Option<&Rc<Served>>,
    ) -> Result<Checked<S::Error>, CheckError<S::Error>> {
        let text = store.record().await.map_err(CheckError::Store)?;
        let serving = self.current().map(|s| s.version.clone());
        let record = match refresh::check(text.as_deref(), serving.as_deref())? {
            Check::NoRecord => return Ok(Checked::NoRecord),
            Check::UpToDate(v) => return Ok(Checked::UpToDate(v)),
            Check::Fetch(r) => r,
        };
        if self.is_broken(&record.version, clock.now_ms()) {
            return Err(CheckError::Broken(record.version));
        }
        let started = clock.now_ms();
        let (db, pages) = match record.table_dir_key() {
            // The publisher stored the converted table: read its directory now, pages on need.
            Some(key) => {
                let bytes = store.object(&key).await.map_err(CheckError::Store)?;
                let db = refresh::accept_table(&record, bytes)?;
                (db, Pages::Published(record.clone()))
            }
            // Older records name only the mmdb: convert here (off the request path when warm),
            // with every page in memory.
            None => {
                let bytes = store.object(&record.object_key).await;
                let mmdb = refresh::accept(&record, bytes.map_err(CheckError::Store)?)?;
                let (db_type, epoch) = mmdb.describe();
                let meta = update::table_meta(&db_type, epoch, record.attribution.as_ref());
                let t = super::convert::table(&mmdb, &meta)?;
                (IpTable::from_parts(t.dir, t.pages)?, Pages::Loaded)
            }
        };
        let meta = meta_of(&db);
        let build_epoch = meta.build_epoch;
        let attribution = record.attribution.clone().or_else(|| {
            meta.attribution
                .or_else(|| Attribution::for_database_type(&meta.database_type))
        });
        let load_ms = elapsed(clock, started);
        // One step back at most: what serves now (on a cold start, the bundled table), without
        // what it replaced.
        let fallback = self.current().or_else(|| cold.cloned());
        if let Some(f) = &fallback {
            f.fallback.borrow_mut().take();
        }
        let state = Rc::new(Served {
            db,
            pages,
            version: record.version.clone(),
            source: Source::R2,
            attribution,
            origin: record.origin.clone(),
            build_epoch,
            load_ms,
            page_ms: Cell::new(0.0),
            fallback: RefCell::new(fallback),
        });
        *self.current.borrow_mut() = Some(state);
        Ok(Checked::Swapped {
            version: record.version,
            ms: elapsed(clock, started),
        })
    }

    /// Whether `version` failed after a swap less than [`BROKEN_RETRY_MS`] ago.
    fn is_broken(&self, version: &str, now_ms: u64) -> bool {
        let w = self.watch.borrow();
        w.broken.as_ref().is_some_and(|b| {
            b.version == version && now_ms.saturating_sub(b.at_ms) < BROKEN_RETRY_MS
        })
    }

    async fn load_pages<S: IpdbStore>(
        &self,
        store: &S,
        clock: &impl Clock,
        s: &Served,
        need: &[usize],
    ) -> Result<(), PageError<S::Error>> {
        if need.is_empty() {
            return Ok(());
        }
        let started = clock.now_ms();
        let results = join_all(need.iter().map(|&p| s.load_page(store, p))).await;
        s.page_ms.set(s.page_ms.get() + elapsed(clock, started));
        results.into_iter().collect()
    }
}

/// The last update's status; unreadable or absent is `None` (the one this isolate knows stays).
async fn read_status<S: IpdbStore>(store: &S) -> Option<UpdateStatus> {
    let text = store.update_status().await.ok()??;
    serde_json::from_str(&text).ok()
}
