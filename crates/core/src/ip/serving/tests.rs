//! The serving state machine over an in-memory store and a hand-set clock. Races are played
//! out by holding chosen reads pending and polling the futures by hand, so every interleaving
//! is exact and no test sleeps.

use super::*;
use crate::ip::table::{build, page_name, Ranges, TableFiles};
use crate::ip::IpdbRecord;
use crate::ip::{sha256_hex, IpAnswer};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

const MIN: u64 = 60_000;
const IP: &str = "8.8.8.8";

fn ip() -> IpAddr {
    IP.parse().unwrap()
}

#[derive(Debug, thiserror::Error)]
#[error("store down: {0}")]
struct Down(String);

/// KV, R2 and the assets in memory. Every read is logged by key; a key in `held` makes its
/// reads wait until the test releases it.
#[derive(Default)]
struct Memory {
    record: RefCell<Option<String>>,
    objects: RefCell<HashMap<String, Vec<u8>>>,
    bundled: RefCell<HashMap<String, Vec<u8>>>,
    reads: RefCell<Vec<String>>,
    held: RefCell<HashSet<String>>,
}

/// Pending while `key` is held.
struct Hold<'a>(&'a Memory, &'a str);

impl Future for Hold<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.held.borrow().contains(self.1) {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

impl Memory {
    async fn read(&self, key: &str) {
        Hold(self, key).await;
        self.reads.borrow_mut().push(key.to_string());
    }

    fn reads_of(&self, key: &str) -> usize {
        self.reads.borrow().iter().filter(|k| *k == key).count()
    }

    fn hold(&self, key: &str) {
        self.held.borrow_mut().insert(key.to_string());
    }

    fn release(&self, key: &str) {
        self.held.borrow_mut().remove(key);
    }

    /// Stores `files` as version `version` and points the record at it.
    fn publish(&self, version: &str, files: &TableFiles) -> IpdbRecord {
        let mut r = IpdbRecord::for_database(sha256_hex(version.as_bytes()), 1, "t".into(), None)
            .with_table(files);
        r.version = version.into();
        let mut objects = self.objects.borrow_mut();
        objects.insert(r.table_dir_key().unwrap(), files.dir.clone());
        for (i, p) in files.pages.iter().enumerate() {
            objects.insert(r.table_page_key(i).unwrap(), p.clone());
        }
        *self.record.borrow_mut() = Some(serde_json::to_string(&r).unwrap());
        r
    }

    /// Flips a byte of an object (its checksum no longer matches).
    fn corrupt(&self, key: &str) {
        let mut objects = self.objects.borrow_mut();
        let bytes = objects.get_mut(key).expect("stored");
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
    }
}

impl IpdbStore for Memory {
    type Error = Down;
    async fn record(&self) -> Result<Option<String>, Down> {
        self.read("record").await;
        Ok(self.record.borrow().clone())
    }
    async fn update_status(&self) -> Result<Option<String>, Down> {
        Ok(None)
    }
    async fn object(&self, key: &str) -> Result<Option<Vec<u8>>, Down> {
        self.read(key).await;
        Ok(self.objects.borrow().get(key).cloned())
    }
    async fn bundled_page(&self, name: &str) -> Result<Vec<u8>, Down> {
        let key = format!("bundled/{name}");
        self.read(&key).await;
        let page = self.bundled.borrow().get(&key).cloned();
        page.ok_or(Down(key))
    }
}

struct Manual(Cell<u64>);

impl Clock for Manual {
    fn now_ms(&self) -> u64 {
        self.0.get()
    }
}

impl Manual {
    fn advance(&self, ms: u64) {
        self.0.set(self.0.get() + ms);
    }
}

/// A one-page table answering `country` for 8.8.8.8 (its /16 holds three ranges, so the
/// answer needs the page, not the directory's /16 array).
fn table(country: &[u8; 2]) -> TableFiles {
    let ranges = Ranges {
        v4: vec![
            (0, None),
            (0x0808_0800, Some(*country)),
            (0x0808_0900, None),
        ],
        v6: vec![(0, None)],
    };
    build(&ranges, &update::table_meta("test", 7, None))
}

struct World {
    store: Memory,
    clock: Manual,
    serving: Serving,
    bundled_dir: Vec<u8>,
}

/// An isolate whose bundled table answers DE, at t = 1000 min, nothing published.
fn world() -> World {
    let store = Memory::default();
    let files = table(b"DE");
    for (i, p) in files.pages.iter().enumerate() {
        let key = format!("bundled/{}", page_name(i));
        store.bundled.borrow_mut().insert(key, p.clone());
    }
    World {
        store,
        clock: Manual(Cell::new(1000 * MIN)),
        serving: Serving::new(),
        bundled_dir: files.dir,
    }
}

fn run<F: Future>(f: F) -> F::Output {
    match poll(pin!(f).as_mut()) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a read is held"),
    }
}

fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

impl World {
    fn bundled(&self) -> Served {
        Served::bundled(self.bundled_dir.clone(), &self.clock).unwrap()
    }

    /// What a request does: [`Serving::start`], the pages its address needs, then the claimed
    /// check, run to the end as `wait_until` runs it after the answer.
    fn request(&self) -> Result<(String, String), String> {
        let ips = [ip()];
        let start = self.serving.start(
            &self.store,
            &self.clock,
            Some(MIN),
            || Ok::<_, std::convert::Infallible>(self.bundled()),
            &ips,
        );
        let Ok(Start {
            served: s,
            check_after: due,
            ..
        }) = run(start);
        let ready = run(self.serving.ready(&self.store, &self.clock, s, &[ip()]));
        if due {
            run(self.serving.check(&self.store, &self.clock));
        }
        let s = ready.result.map_err(|e| e.to_string())?;
        Ok((
            s.version().to_string(),
            format!("{:?}", s.db().lookup(ip())),
        ))
    }

    /// A due check with no request around it.
    fn check(&self) {
        self.clock.advance(MIN);
        assert!(self.serving.claim_check(self.clock.now_ms(), MIN));
        run(self.serving.check(&self.store, &self.clock));
    }

    fn version(&self) -> String {
        self.serving.current().unwrap().version().to_string()
    }

    fn outcome(&self) -> String {
        self.serving.health().last_check_outcome.unwrap_or_default()
    }
}

fn answered(version: &str, country: &'static str) -> Result<(String, String), String> {
    Ok((
        version.to_string(),
        format!("{:?}", IpAnswer::Country(country)),
    ))
}

#[test]
fn a_cold_isolate_serves_the_bundled_table_when_nothing_is_published() {
    let w = world();
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    assert_eq!(w.outcome(), "no record; serving the bundled database");
    let h = w.serving.health();
    assert_eq!(
        (h.loaded, h.source, h.checks),
        (true, Some(Source::Bundled), 1)
    );
    assert_eq!(h.table.unwrap().loaded_pages, 1);
}

#[test]
fn a_published_version_is_swapped_in_at_the_next_due_check() {
    let w = world();
    w.request().unwrap();
    w.store.publish("v2", &table(b"US"));
    w.clock.advance(MIN);
    // The check runs after this request's answer: it still answers from the bundled table.
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    assert_eq!(w.outcome(), "swapped to v2");
    assert_eq!(w.request(), answered("v2", "US"));
    let h = w.serving.health();
    assert_eq!((h.source, h.last_swap_ms), (Some(Source::R2), Some(0.0)));
    w.clock.advance(MIN);
    w.request().unwrap();
    assert_eq!(w.outcome(), "up to date (v2)");
}

#[test]
fn a_cold_isolate_serves_the_published_version_from_its_first_answer() {
    let w = world();
    w.store.publish("v2", &table(b"US"));
    assert_eq!(w.request(), answered("v2", "US"));
    assert_eq!(
        w.store.reads_of("bundled/page-000.bin"),
        1,
        "read alongside the record"
    );
}

#[test]
fn a_directory_that_fails_its_checksum_or_does_not_open_keeps_the_old_version_serving() {
    let w = world();
    w.store.publish("v2", &table(b"US"));
    w.request().unwrap();
    // The directory's bytes no longer hash to the record's table_sha256.
    let r = w.store.publish("v3", &table(b"FR"));
    w.store.corrupt(&r.table_dir_key().unwrap());
    w.clock.advance(MIN);
    w.request().unwrap();
    assert_eq!(
        w.outcome(),
        format!(
            "rejected: checksum mismatch for {}",
            r.table_dir_key().unwrap()
        )
    );
    assert_eq!(w.request(), answered("v2", "US"));
    // Bytes that match their checksum but are no table.
    let mut r = r.clone();
    r.version = "v4".into();
    r.table_sha256 = Some(sha256_hex(b"junk"));
    w.store
        .objects
        .borrow_mut()
        .insert(r.table_dir_key().unwrap(), b"junk".to_vec());
    *w.store.record.borrow_mut() = Some(serde_json::to_string(&r).unwrap());
    w.clock.advance(MIN);
    w.request().unwrap();
    assert!(
        w.outcome().contains("IP country table truncated"),
        "{}",
        w.outcome()
    );
    // A missing object, then a record that does not parse.
    w.store
        .objects
        .borrow_mut()
        .remove(&r.table_dir_key().unwrap());
    w.clock.advance(MIN);
    w.request().unwrap();
    assert!(w.outcome().ends_with("dir.bin missing"), "{}", w.outcome());
    *w.store.record.borrow_mut() = Some("{".into());
    w.clock.advance(MIN);
    w.request().unwrap();
    assert!(w.outcome().contains("not valid JSON"), "{}", w.outcome());
    assert_eq!(w.request(), answered("v2", "US"));
}

/// Publishes v2 (US) over the bundled table (DE) with its page corrupt, and swaps it in.
fn swapped_to_a_version_with_a_corrupt_page(w: &World) -> IpdbRecord {
    w.request().unwrap();
    let r = w.store.publish("v2", &table(b"US"));
    w.store.corrupt(&r.table_page_key(0).unwrap());
    w.clock.advance(MIN);
    w.request().unwrap();
    assert_eq!(w.version(), "v2", "the directory is fine: swapped in");
    r
}

#[test]
fn a_page_that_fails_falls_back_to_the_previous_version_in_the_same_request() {
    let w = world();
    let r = swapped_to_a_version_with_a_corrupt_page(&w);
    let page = r.table_page_key(0).unwrap();
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    assert_eq!(
        w.outcome(),
        format!("rejected: v2: checksum mismatch for {page}")
    );
    assert_eq!(w.version(), "bundled:test:7");
}

#[test]
fn a_broken_version_is_not_fetched_again_until_its_memo_expires() {
    let w = world();
    let r = swapped_to_a_version_with_a_corrupt_page(&w);
    let dir = r.table_dir_key().unwrap();
    w.request().unwrap(); // falls back
    assert_eq!(w.store.reads_of(&dir), 1);
    let mut elapsed = 0;
    while elapsed + MIN < BROKEN_RETRY_MS {
        w.clock.advance(MIN);
        elapsed += MIN;
        assert_eq!(w.request(), answered("bundled:test:7", "DE"));
        assert_eq!(
            w.outcome(),
            "rejected: v2: a page failed to load; not retried"
        );
    }
    assert_eq!(w.store.reads_of(&dir), 1, "not fetched while memoised");
    assert!(
        w.store.reads_of("record") > 10,
        "the record itself is read at every check"
    );
    // Memo over: the version is tried again (its page might have failed for a passing reason).
    w.clock.advance(BROKEN_RETRY_MS - elapsed);
    w.request().unwrap();
    assert_eq!(w.store.reads_of(&dir), 2);
    assert_eq!(w.outcome(), "swapped to v2");
    // Repaired meanwhile: it serves.
    let good = table(b"US").pages[0].clone();
    w.store
        .objects
        .borrow_mut()
        .insert(r.table_page_key(0).unwrap(), good);
    assert_eq!(w.request(), answered("v2", "US"));
}

#[test]
fn a_newer_version_is_tried_at_once_while_a_broken_one_is_memoised() {
    let w = world();
    swapped_to_a_version_with_a_corrupt_page(&w);
    w.request().unwrap(); // falls back, v2 memoised
    w.store.publish("v3", &table(b"FR"));
    w.clock.advance(MIN);
    w.request().unwrap();
    assert_eq!(w.outcome(), "swapped to v3");
    assert_eq!(w.request(), answered("v3", "FR"));
}

#[test]
fn fallback_goes_one_step_back_at_most() {
    let w = world();
    w.request().unwrap();
    let r2 = w.store.publish("v2", &table(b"US"));
    w.check(); // v2 serves, none of its pages loaded
    let r3 = w.store.publish("v3", &table(b"FR"));
    w.check();
    assert_eq!(w.version(), "v3");
    w.store.corrupt(&r3.table_page_key(0).unwrap());
    w.store.corrupt(&r2.table_page_key(0).unwrap());
    // v3 falls back to v2, whose page fails too: v2 kept nothing to fall back to.
    let e = w.request().unwrap_err();
    assert_eq!(
        e,
        format!("checksum mismatch for {}", r2.table_page_key(0).unwrap())
    );
    assert_eq!(w.version(), "v2");
}

#[test]
fn the_record_is_read_only_when_the_watch_interval_has_elapsed() {
    let w = world();
    w.request().unwrap(); // the cold start's check
    assert_eq!(w.store.reads_of("record"), 1);
    w.clock.advance(MIN - 1);
    w.request().unwrap();
    assert_eq!(w.store.reads_of("record"), 1, "not due yet");
    w.clock.advance(1);
    w.request().unwrap();
    w.request().unwrap();
    assert_eq!(w.store.reads_of("record"), 2, "one check once due");
    assert_eq!(w.serving.health().checks, 2);
    // Interval 0 (the tests' setting): every request checks.
    assert!(w.serving.claim_check(w.clock.now_ms(), 0));
}

#[test]
fn a_check_in_flight_is_not_started_twice() {
    let w = world();
    w.request().unwrap();
    w.clock.advance(MIN);
    assert!(w.serving.claim_check(w.clock.now_ms(), MIN));
    w.store.hold("record");
    let mut check = pin!(w.serving.check(&w.store, &w.clock));
    assert!(poll(check.as_mut()).is_pending());
    w.clock.advance(MIN);
    assert!(
        !w.serving.claim_check(w.clock.now_ms(), MIN),
        "one in flight"
    );
    w.store.release("record");
    assert!(poll(check.as_mut()).is_ready());
    // The interval counts from the end of the check.
    assert!(!w.serving.claim_check(w.clock.now_ms(), MIN));
    w.clock.advance(MIN);
    assert!(w.serving.claim_check(w.clock.now_ms(), MIN));
}

/// 00dbcbd made the cold start read the record and the bundled page at once; the bundled table
/// must then not replace the version the check swapped in, whichever read ends last.
#[test]
fn a_cold_start_keeps_the_version_its_check_swapped_in_whichever_read_ends_first() {
    for record_first in [true, false] {
        let w = world();
        w.store.publish("v2", &table(b"US"));
        let slow = if record_first {
            "bundled/page-000.bin"
        } else {
            "record"
        };
        w.store.hold(slow);
        let ips = [ip()];
        let mut cold = pin!(w.serving.cold_start(&w.store, &w.clock, w.bundled(), &ips));
        assert!(poll(cold.as_mut()).is_pending());
        w.store.release(slow);
        let Poll::Ready((s, _)) = poll(cold.as_mut()) else {
            panic!("released")
        };
        assert_eq!(s.version(), "v2", "record first: {record_first}");
        assert_eq!(w.version(), "v2");
    }
}

#[test]
fn two_cold_starts_at_once_serve_the_same_published_version() {
    let w = world();
    w.store.publish("v2", &table(b"US"));
    w.store.hold("record");
    let ips = [ip()];
    let mut a = pin!(w.serving.cold_start(&w.store, &w.clock, w.bundled(), &ips));
    let mut b = pin!(w.serving.cold_start(&w.store, &w.clock, w.bundled(), &ips));
    assert!(poll(a.as_mut()).is_pending() && poll(b.as_mut()).is_pending());
    w.store.release("record");
    let (Poll::Ready((a, _)), Poll::Ready((b, _))) = (poll(a.as_mut()), poll(b.as_mut())) else {
        panic!("released")
    };
    assert_eq!((a.version(), b.version()), ("v2", "v2"));
    assert_eq!(w.request(), answered("v2", "US"));
}

/// Two requests load the same failing page of a swapped-in version at once: the first takes
/// the fallback, and the second must answer from it too, not with the error.
#[test]
fn concurrent_requests_on_a_broken_version_both_answer_from_the_fallback() {
    let w = world();
    let r = swapped_to_a_version_with_a_corrupt_page(&w);
    let page = r.table_page_key(0).unwrap();
    w.store.hold(&page);
    let (ips, s) = ([ip()], w.serving.current().unwrap());
    let mut a = pin!(w.serving.ready(&w.store, &w.clock, s.clone(), &ips));
    let mut b = pin!(w.serving.ready(&w.store, &w.clock, s, &ips));
    assert!(poll(a.as_mut()).is_pending() && poll(b.as_mut()).is_pending());
    w.store.release(&page);
    let (Poll::Ready(a), Poll::Ready(b)) = (poll(a.as_mut()), poll(b.as_mut())) else {
        panic!("released")
    };
    for (name, r) in [("first", a), ("second", b)] {
        let v = r
            .result
            .map(|s| s.version().to_string())
            .map_err(|e| e.to_string());
        assert_eq!(v, Ok("bundled:test:7".to_string()), "{name}");
    }
    assert_eq!(
        w.store.reads_of(&page),
        2,
        "one failed read each, none after"
    );
}

/// A cold isolate whose check swaps in a version with a broken page has the bundled table it
/// opened alongside to fall back to.
#[test]
fn a_cold_isolate_whose_published_version_has_a_broken_page_answers_from_the_bundled_table() {
    let w = world();
    let r = w.store.publish("v2", &table(b"US"));
    w.store.corrupt(&r.table_page_key(0).unwrap());
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    let page = r.table_page_key(0).unwrap();
    assert_eq!(
        w.outcome(),
        format!("rejected: v2: checksum mismatch for {page}")
    );
    w.clock.advance(MIN);
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    assert_eq!(
        w.outcome(),
        "rejected: v2: a page failed to load; not retried"
    );
}

#[test]
fn the_cron_probes_the_serving_version_and_fails_a_published_one_that_does_not_serve() {
    let w = world();
    w.request().unwrap();
    let served = w.serving.current().unwrap();
    let at = || "2026-12-03T00:00:00Z".to_owned();
    // Nothing published: the serving (bundled) version, ok when every page loaded.
    let p = w.serving.cron_probe(&served, None, None, Ok(()), at());
    assert_eq!(
        (p.version.as_str(), p.ok, p.reason),
        ("bundled:test:7", true, None)
    );
    let p = w
        .serving
        .cron_probe(&served, None, None, Err("page 0: bad".into()), at());
    assert_eq!((p.ok, p.reason.as_deref()), (false, Some("page 0: bad")));
    // A published version whose directory fails its checksum is not swapped in: its probe
    // fails with the check's rejection, whatever the serving pages did.
    let r = w.store.publish("v2", &table(b"US"));
    w.store.corrupt(&r.table_dir_key().unwrap());
    w.clock.advance(MIN);
    assert!(w.serving.claim_check(w.clock.now_ms(), 0));
    let checked = run(w.serving.check(&w.store, &w.clock));
    let rejected = checked.rejection();
    assert!(rejected.is_some());
    let p = w
        .serving
        .cron_probe(&served, Some(&r), rejected.clone(), Ok(()), at());
    assert_eq!((p.version.as_str(), p.ok), ("v2", false));
    assert_eq!(p.reason, rejected);
    // Without this run's rejection (a cold start's check): the last outcome says why.
    let p = w.serving.cron_probe(&served, Some(&r), None, Ok(()), at());
    assert_eq!(p.reason, w.serving.health().last_check_outcome);
    // The published version serving: its own probe.
    let fresh = world();
    let r = fresh.store.publish("v3", &table(b"US"));
    fresh.request().unwrap();
    let served = fresh.serving.current().unwrap();
    let p = fresh
        .serving
        .cron_probe(&served, Some(&r), None, Ok(()), at());
    assert_eq!((p.version.as_str(), p.ok), ("v3", true));
    assert!(Checked::<Down>::UpToDate("v3".into()).rejection().is_none());
}

#[test]
fn the_crons_check_runs_at_once_but_only_when_a_version_serves_and_none_is_in_flight() {
    let w = world();
    // Cold: no check (the cold start reads the record), and nothing is read.
    assert!(run(w.serving.check_now(&w.store, &w.clock)).is_none());
    assert_eq!(w.store.reads_of("record"), 0);
    assert_eq!(w.request(), answered("bundled:test:7", "DE"));
    // Published a moment later, long before the watch interval: the cron's check swaps it in.
    w.store.publish("v2", &table(b"FR"));
    let checked = run(w.serving.check_now(&w.store, &w.clock));
    assert!(matches!(checked, Some(Checked::Swapped { ref version, .. }) if version == "v2"));
    assert_eq!(w.version(), "v2");
    // A check in flight (claimed by a request) is not started twice.
    w.clock.advance(MIN);
    assert!(w.serving.claim_check(w.clock.now_ms(), MIN));
    let reads = w.store.reads_of("record");
    assert!(run(w.serving.check_now(&w.store, &w.clock)).is_none());
    assert_eq!(w.store.reads_of("record"), reads);
}

#[test]
fn a_warm_start_claims_a_due_check_for_after_the_answer_and_the_crons_claims_none() {
    let w = world();
    let start = |every| {
        let no_bundle = || Err::<Served, _>("built only for a cold start");
        run(w
            .serving
            .start(&w.store, &w.clock, every, no_bundle, &[ip()]))
    };
    assert_eq!(start(None).err(), Some("built only for a cold start"));
    assert!(
        w.serving.current().is_none(),
        "nothing serves after a failed bundle"
    );
    w.request().unwrap();
    w.clock.advance(MIN);
    assert!(
        !start(None).unwrap().check_after,
        "the cron's start claims no check"
    );
    let first = start(Some(MIN)).unwrap();
    assert!(first.check_after && first.checked.is_none());
    assert!(!start(Some(MIN)).unwrap().check_after, "claimed once");
    assert_eq!(
        w.store.reads_of("record"),
        1,
        "the check runs after the answer"
    );
}

#[test]
fn a_cold_start_reports_its_check_and_claims_none() {
    let w = world();
    w.store.publish("v2", &table(b"US"));
    let bundled = || Ok::<_, std::convert::Infallible>(w.bundled());
    let start = run(w
        .serving
        .start(&w.store, &w.clock, Some(0), bundled, &[ip()]))
    .unwrap();
    assert_eq!(start.served.version(), "v2");
    assert!(!start.check_after);
    assert_eq!(start.checked.unwrap().to_string(), "swapped to v2");
}
