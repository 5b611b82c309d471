//! The cron job over memory: KV and R2 in one logged store, a scripted source, a fake gunzip
//! and a timer on the hand-set clock. Futures are polled by hand, so the deadline is exact and
//! no test sleeps.

use super::*;
use crate::ip::db::tests::{flat, mmdb};
use crate::ip::promote::RETENTION_GRACE_MS;
use crate::ip::IpdbSettings;
use crate::ip::{sha256_hex, IpAnswer};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// 2026-12-02T01:00:00Z.
const DEC_2: u64 = 1_796_173_200_000;
const KEY: &str = "ipdb/current";
const STATUS: &str = "ipdb/current:last_update";
const MONTHLY: &str = "https://db.test/country-{YYYY}-{MM}.mmdb.gz";
const PLAIN: &str = "https://db.test/country.mmdb";
const CRON: &str = "17 3 * * *";
const TIMEOUT: u32 = 4000;

#[derive(Debug, thiserror::Error)]
#[error("down: {0}")]
struct Down(String);

/// KV and R2 in memory; every write is logged in order (`kv <key>`, `r2 <key>`).
#[derive(Default)]
struct Memory {
    kv: RefCell<BTreeMap<String, String>>,
    objects: RefCell<BTreeMap<String, (Vec<u8>, u64)>>,
    writes: RefCell<Vec<String>>,
    deleted: RefCell<Vec<String>>,
    /// A write to a key containing this fails.
    fail_put: RefCell<Option<String>>,
    /// Upload time of what is written.
    now: Cell<u64>,
    /// Keys per listing page.
    page: Cell<usize>,
}

impl Kv for Memory {
    type Error = Down;
    async fn get_text(&self, key: &str) -> Result<Option<String>, Down> {
        Ok(self.kv.borrow().get(key).cloned())
    }
    async fn put_text(&self, key: &str, text: String) -> Result<(), Down> {
        self.check_put(key)?;
        self.writes.borrow_mut().push(format!("kv {key}"));
        self.kv.borrow_mut().insert(key.into(), text);
        Ok(())
    }
}

impl Bucket for Memory {
    type Error = Down;
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Down> {
        Ok(self.objects.borrow().get(key).map(|(b, _)| b.clone()))
    }
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), Down> {
        self.check_put(key)?;
        self.writes.borrow_mut().push(format!("r2 {key}"));
        let at = self.now.get();
        self.objects.borrow_mut().insert(key.into(), (bytes, at));
        Ok(())
    }
    async fn list(&self, prefix: &str, cursor: Option<String>) -> Result<Listing, Down> {
        let objects = self.objects.borrow();
        let from = cursor.map_or(0, |c| c.parse().unwrap());
        let all: Vec<_> = (objects.iter())
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, (_, at))| (k.clone(), *at))
            .collect();
        let end = (from + self.page.get()).min(all.len());
        Ok(Listing {
            objects: all[from..end].to_vec(),
            cursor: (end < all.len()).then(|| end.to_string()),
        })
    }
    async fn delete(&self, keys: Vec<String>) -> Result<(), Down> {
        for k in &keys {
            self.objects.borrow_mut().remove(k);
        }
        self.deleted.borrow_mut().extend(keys);
        Ok(())
    }
}

impl Memory {
    fn check_put(&self, key: &str) -> Result<(), Down> {
        match &*self.fail_put.borrow() {
            Some(f) if key.contains(f.as_str()) => Err(Down(key.into())),
            _ => Ok(()),
        }
    }

    fn record(&self) -> Option<IpdbRecord> {
        let kv = self.kv.borrow();
        kv.get(KEY).map(|t| IpdbRecord::parse(t).unwrap())
    }

    fn status(&self) -> UpdateStatus {
        serde_json::from_str(&self.kv.borrow()[STATUS]).unwrap()
    }
}

/// A chunk stream; `stall` keeps it pending once the chunks are out.
struct Chunks {
    chunks: VecDeque<Result<Vec<u8>, Down>>,
    stall: bool,
}

impl Stream for Chunks {
    type Item = Result<Vec<u8>, Down>;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.chunks.pop_front() {
            Some(c) => Poll::Ready(Some(c)),
            None if self.stall => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

/// What the scripted source answers for a URL (an unknown URL answers 404).
#[derive(Clone, Default)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    chunks: Vec<Vec<u8>>,
    stall: bool,
}

fn ok(body: Vec<u8>) -> Reply {
    // In two chunks, as a stream delivers it.
    let half = body.len() / 2;
    Reply {
        status: 200,
        chunks: vec![body[..half].to_vec(), body[half..].to_vec()],
        ..Reply::default()
    }
}

fn status(s: u16) -> Reply {
    Reply {
        status: s,
        ..Reply::default()
    }
}

/// Request headers as the core sends them.
type Sent = Vec<(&'static str, String)>;

#[derive(Default)]
struct Source {
    replies: RefCell<HashMap<String, Reply>>,
    /// `(url, request headers)` in order.
    requests: RefCell<Vec<(String, Sent)>>,
    aborted: Cell<bool>,
}

impl Source {
    fn answer(&self, url: &str, reply: Reply) {
        self.replies.borrow_mut().insert(url.into(), reply);
    }

    fn urls(&self) -> Vec<String> {
        self.requests.borrow().iter().map(|r| r.0.clone()).collect()
    }
}

impl Fetch for Source {
    type Error = Down;
    type Body = Chunks;
    async fn get(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
    ) -> Result<Response<Chunks>, Down> {
        (self.requests.borrow_mut()).push((url.into(), headers.to_vec()));
        let r = self.replies.borrow().get(url).cloned();
        let r = r.unwrap_or_else(|| status(404));
        Ok(Response {
            status: r.status,
            headers: (r.headers.iter())
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            body: Chunks {
                chunks: r.chunks.into_iter().map(Ok).collect(),
                stall: r.stall,
            },
        })
    }
    fn abort(&self) {
        self.aborted.set(true);
    }
}

/// A stand-in for gzip: the magic, a repeat count (u32, big-endian), then the payload, which
/// "decompresses" to the payload that many times, one chunk each (a bomb is a large count).
/// A payload starting with `!` fails mid-stream, as a truncated gzip does.
#[derive(Default)]
struct FakeGzip {
    calls: Cell<usize>,
}

fn gz(payload: &[u8], repeat: u32) -> Vec<u8> {
    let mut v = vec![0x1f, 0x8b, 0x08];
    v.extend(repeat.to_be_bytes());
    v.extend(payload);
    v
}

impl Gunzip for FakeGzip {
    type Error = Down;
    type Output = Chunks;
    fn gunzip(&self, gz: Vec<u8>) -> Result<Chunks, Down> {
        self.calls.set(self.calls.get() + 1);
        let n = u32::from_be_bytes(gz[3..7].try_into().unwrap());
        let payload = &gz[7..];
        let mut chunks: VecDeque<_> = (0..n).map(|_| Ok(payload.to_vec())).collect();
        if payload.starts_with(b"!") {
            chunks.push_back(Err(Down("unexpected end of file".into())));
        }
        Ok(Chunks {
            chunks,
            stall: false,
        })
    }
}

struct Manual(Cell<u64>);

impl Clock for Manual {
    fn now_ms(&self) -> u64 {
        self.0.get()
    }
}

/// A timer on the hand-set clock: ready once the clock reaches its end.
struct Until<'a>(&'a Manual, u64);

impl Future for Until<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.now_ms() >= self.1 {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

struct ManualTimer<'a>(&'a Manual);

impl Timer for ManualTimer<'_> {
    async fn sleep(&self, ms: u32) {
        Until(self.0, self.0.now_ms() + u64::from(ms)).await;
    }
}

/// The serving database: one country everywhere.
struct Everywhere(&'static str);

impl CountryLookup for Everywhere {
    fn country(&self, _: IpAddr) -> IpAnswer<'_> {
        IpAnswer::Country(self.0)
    }
}

struct World {
    store: Memory,
    staging: Memory,
    source: Source,
    gzip: FakeGzip,
    clock: Manual,
    settings: IpdbSettings,
    promote: bool,
}

fn world(url: &str) -> World {
    let store = Memory::default();
    store.now.set(DEC_2);
    store.page.set(3);
    World {
        store,
        staging: Memory::default(),
        source: Source::default(),
        gzip: FakeGzip::default(),
        clock: Manual(Cell::new(DEC_2)),
        settings: IpdbSettings {
            kv_key: KEY.into(),
            check_interval_s: 60,
            source: Some(SourceSpec::parse(url, None, None, None).unwrap()),
            stale_after_days: 45,
            promote_from_key: None,
            promote_after_hours: 24,
            max_download_bytes: 1 << 20,
            max_db_bytes: 1 << 20,
            download_timeout_ms: TIMEOUT,
            max_disagreement: 1.0,
            min_countries: 1,
        },
        promote: false,
    }
}

/// A database answering US for 8.8.8.0/24 and `extra`'s country for 1.1.1.0/24.
fn database(extra: &str) -> Vec<u8> {
    mmdb(
        "tiny-flat",
        &[("8.8.8.0", 24, flat("US")), ("1.1.1.0", 24, flat(extra))],
    )
}

fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

fn ready<F: Future>(f: F) -> F::Output {
    match poll(std::pin::pin!(f).as_mut()) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the run waits"),
    }
}

type TestPorts<'a> = Ports<'a, Memory, Memory, Source, FakeGzip, ManualTimer<'a>, Manual>;

impl World {
    fn ports<'a>(&'a self, timer: &'a ManualTimer<'a>) -> TestPorts<'a> {
        Ports {
            kv: &self.store,
            bucket: &self.store,
            staging_kv: self.promote.then_some(&self.staging),
            staging_bucket: self.promote.then_some(&self.staging),
            fetch: &self.source,
            gunzip: &self.gzip,
            timer,
            clock: &self.clock,
        }
    }

    fn job(&self) -> Job<'_> {
        Job {
            settings: &self.settings,
            mode: Mode::of(&self.settings).unwrap(),
            cron: CRON,
            serving: Ok(Against {
                db: &Everywhere("US"),
                attribution: None,
            }),
            probe: None,
        }
    }

    /// One cron run to its end.
    fn run(&self) -> Run {
        self.run_job(self.job())
    }

    fn run_job(&self, job: Job<'_>) -> Run {
        let timer = ManualTimer(&self.clock);
        let ports = self.ports(&timer);
        ready(async {
            let prior = ports.prior(&self.settings).await;
            ports.run(job, prior).await
        })
    }

    /// Publishes `bytes` as a plain URL's download would, and returns its record.
    fn published(&self, bytes: Vec<u8>) -> IpdbRecord {
        self.source.answer(PLAIN, ok(bytes));
        let run = self.run();
        assert!(matches!(run.result, Ok(Plan::Publish(_))), "{run:?}");
        self.store.record().unwrap()
    }
}

fn reason(run: &Run) -> String {
    run.status.reason.clone().unwrap_or_default()
}

#[test]
fn promotion_wins_over_a_source_and_nothing_configured_is_off() {
    let mut w = world(PLAIN);
    assert!(matches!(Mode::of(&w.settings), Some(Mode::Download(_))));
    w.settings.promote_from_key = Some("staging/current".into());
    assert!(matches!(
        Mode::of(&w.settings),
        Some(Mode::Promote("staging/current"))
    ));
    // Promotion downloads nothing, though a source is set.
    w.source.answer(PLAIN, ok(database("AU")));
    let run = w.run();
    assert!(
        matches!(&run.result, Ok(Plan::Waiting(why)) if why.contains("published nothing")),
        "{run:?}"
    );
    assert!(w.source.urls().is_empty());
    assert_eq!(run.status.outcome, "waiting");
    w.settings.promote_from_key = None;
    w.settings.source = None;
    assert!(Mode::of(&w.settings).is_none());
}

#[test]
fn a_plain_download_is_published_objects_before_the_record() {
    let w = world(PLAIN);
    w.source.answer(
        PLAIN,
        Reply {
            headers: vec![("ETag", "\"e1\"".into())],
            ..ok(database("AU"))
        },
    );
    let run = w.run();
    let Ok(Plan::Publish(v)) = &run.result else {
        panic!("{run:?}")
    };
    assert_eq!(
        Run::summary(run.result.as_ref().unwrap()),
        format!("published {}", v.record.version)
    );
    let record = w.store.record().unwrap();
    assert_eq!(record, v.record);
    let origin = record.origin.as_ref().unwrap();
    assert_eq!((origin.kind.as_str(), origin.url.as_str()), ("url", PLAIN));
    assert_eq!(origin.etag.as_deref(), Some("\"e1\""));
    // Every object the record names, then the record, then the status.
    let writes = w.store.writes.borrow().clone();
    let objects: Vec<String> = record
        .objects()
        .into_iter()
        .map(|(k, _)| format!("r2 {k}"))
        .collect();
    assert_eq!(writes[..objects.len()], objects[..]);
    assert_eq!(
        writes[objects.len()..],
        [format!("kv {KEY}"), format!("kv {STATUS}")]
    );
    for (key, sha) in record.objects() {
        assert_eq!(sha256_hex(&w.store.objects.borrow()[&key].0), sha, "{key}");
    }
    // Not a gzip: the decompressor is not used.
    assert_eq!(w.gzip.calls.get(), 0);
    assert_eq!(w.store.status(), run.status);
}

#[test]
fn a_failing_object_write_leaves_no_record() {
    let w = world(PLAIN);
    *w.store.fail_put.borrow_mut() = Some("page-000".into());
    w.source.answer(PLAIN, ok(database("AU")));
    let run = w.run();
    assert!(run.result.is_err());
    assert!(w.store.record().is_none());
    assert_eq!(run.status.outcome, "refused");
    assert!(
        reason(&run).starts_with("download: storing the candidate: R2 write ipdb/"),
        "{}",
        reason(&run)
    );
    // The status is still written: isolates show the refusal.
    assert_eq!(w.store.status().outcome, "refused");
}

#[test]
fn a_gzip_body_is_decompressed_and_a_plain_one_is_not() {
    let plain = world(PLAIN);
    let a = plain.published(database("AU"));
    let w = world(PLAIN);
    w.source.answer(PLAIN, ok(gz(&database("AU"), 1)));
    let run = w.run();
    assert!(matches!(run.result, Ok(Plan::Publish(_))), "{run:?}");
    assert_eq!(w.gzip.calls.get(), 1);
    // The same database either way.
    assert_eq!(w.store.record().unwrap().sha256, a.sha256);
    // A corrupt stream is the gzip reason.
    let w = world(PLAIN);
    w.source.answer(PLAIN, ok(gz(b"!junk", 1)));
    assert_eq!(reason(&w.run()), "gzip: down: unexpected end of file");
}

#[test]
fn caps_on_the_declared_length_the_stream_and_the_decompressed_size() {
    let mut w = world(PLAIN);
    w.settings.max_download_bytes = 1000;
    w.settings.max_db_bytes = 5000;
    // Declared over the cap: refused before the body is read (this one would fit).
    w.source.answer(
        PLAIN,
        Reply {
            headers: vec![("content-length", "1001".into())],
            ..ok(vec![0; 10])
        },
    );
    assert_eq!(reason(&w.run()), "download is over 1000 bytes");
    // Declared within the cap (or not at all), the stream is counted anyway.
    for headers in [vec![("content-length", "900".into())], vec![]] {
        w.source.answer(
            PLAIN,
            Reply {
                headers,
                ..ok(vec![7; 1001])
            },
        );
        assert_eq!(reason(&w.run()), "download is over 1000 bytes");
    }
    // A small gzip that inflates past the database cap stops at it.
    w.source.answer(PLAIN, ok(gz(&[7; 100], 51)));
    assert_eq!(reason(&w.run()), "decompressed database is over 5000 bytes");
    assert!(w.store.record().is_none());
}

#[test]
fn a_template_falls_back_to_the_previous_period_on_not_published() {
    for s in [403, 404, 410] {
        let w = world(MONTHLY);
        let (dec, nov) = (
            "https://db.test/country-2026-12.mmdb.gz",
            "https://db.test/country-2026-11.mmdb.gz",
        );
        w.source.answer(dec, status(s));
        w.source.answer(nov, ok(gz(&database("AU"), 1)));
        let run = w.run();
        assert!(matches!(run.result, Ok(Plan::Publish(_))), "{run:?}");
        assert_eq!(w.source.urls(), [dec, nov]);
        assert_eq!(run.status.tried, [format!("2026-12: answered {s}")]);
        let origin = w.store.record().unwrap().origin.unwrap();
        assert_eq!(
            (origin.kind.as_str(), origin.period.as_deref()),
            ("template", Some("2026-11"))
        );
        assert_eq!(run.status.origin, Some(origin));
    }
}

#[test]
fn the_last_candidate_and_other_statuses_end_the_run() {
    let w = world(MONTHLY);
    // Neither month published: the last one's status is the reason.
    let run = w.run();
    assert_eq!(reason(&run), "download: 2026-11: answered 404");
    assert_eq!(run.status.tried, ["2026-12: answered 404"]);
    // A 401 is not a missing month: no fallback.
    let w = world(MONTHLY);
    w.source
        .answer("https://db.test/country-2026-12.mmdb.gz", status(401));
    let run = w.run();
    assert_eq!(reason(&run), "download: 2026-12: answered 401");
    assert_eq!(w.source.urls().len(), 1);
    assert!(run.status.tried.is_empty());
    // A plain URL has one candidate: its 404 is the reason, with no period.
    let w = world(PLAIN);
    assert_eq!(reason(&w.run()), "download: answered 404");
}

#[test]
fn a_period_older_than_the_published_one_is_never_tried() {
    let w = world(MONTHLY);
    let dec = "https://db.test/country-2026-12.mmdb.gz";
    w.source.answer(dec, ok(gz(&database("AU"), 1)));
    w.run();
    assert_eq!(
        w.store.record().unwrap().origin.unwrap().period.as_deref(),
        Some("2026-12")
    );
    // December gone (a late 404): November is not tried, the record stays.
    w.source.answer(dec, status(404));
    let before = w.store.record();
    let run = w.run();
    assert_eq!(reason(&run), "download: 2026-12: answered 404");
    assert_eq!(w.source.urls(), [dec, dec]);
    assert_eq!(w.store.record(), before);
}

#[test]
fn a_304_to_the_validators_keeps_the_published_version() {
    let w = world(PLAIN);
    w.source.answer(
        PLAIN,
        Reply {
            headers: vec![
                ("etag", "\"e1\"".into()),
                ("last-modified", "Tue, 01 Dec 2026 16:00:00 GMT".into()),
            ],
            ..ok(database("AU"))
        },
    );
    w.run();
    let record = w.store.record().unwrap();
    let writes = w.store.writes.borrow().len();
    w.source.answer(PLAIN, status(304));
    let run = w.run();
    assert!(
        matches!(&run.result, Ok(Plan::NotModified(v)) if *v == record.version),
        "{run:?}"
    );
    let sent = w.source.requests.borrow().last().unwrap().1.clone();
    assert_eq!(
        sent,
        [
            ("if-none-match", "\"e1\"".to_owned()),
            (
                "if-modified-since",
                "Tue, 01 Dec 2026 16:00:00 GMT".to_owned()
            )
        ]
    );
    assert_eq!(
        (run.status.outcome.as_str(), run.status.not_modified),
        ("unchanged", true)
    );
    // The 304 repeated no validator: the published origin is kept, the record untouched.
    assert_eq!(run.status.origin, record.origin);
    assert_eq!(w.store.writes.borrow()[writes..], [format!("kv {STATUS}")]);
}

#[test]
fn a_304_without_validators_is_a_failure() {
    let w = world(PLAIN);
    w.source.answer(PLAIN, status(304));
    let run = w.run();
    assert!(w.source.requests.borrow()[0].1.is_empty());
    assert_eq!(reason(&run), "download: answered 304");
}

#[test]
fn an_unchanged_database_keeps_the_new_validators() {
    let w = world(PLAIN);
    let with_etag = |e: &str| Reply {
        headers: vec![("etag", e.into())],
        ..ok(database("AU"))
    };
    w.source.answer(PLAIN, with_etag("\"e1\""));
    w.run();
    let first = w.store.record().unwrap();
    // Same bytes under a new ETag: the record keeps its version, with the new validator.
    w.source.answer(PLAIN, with_etag("\"e2\""));
    let run = w.run();
    assert!(
        matches!(&run.result, Ok(Plan::Unchanged(v)) if *v == first.version),
        "{run:?}"
    );
    let second = w.store.record().unwrap();
    assert_eq!(
        second.origin.as_ref().unwrap().etag.as_deref(),
        Some("\"e2\"")
    );
    assert_eq!(
        IpdbRecord {
            origin: first.origin.clone(),
            ..second.clone()
        },
        first
    );
    assert_eq!(run.status.outcome, "unchanged");
    // The same validators again: the record is not rewritten.
    let writes = w.store.writes.borrow().len();
    w.run();
    assert_eq!(w.store.writes.borrow()[writes..], [format!("kv {STATUS}")]);
}

#[test]
fn retirement_keeps_the_new_and_replaced_versions_and_deletes_at_most_max_deletes() {
    let w = world(PLAIN);
    let old = w.published(database("AU"));
    w.clock.0.set(DEC_2 + 2 * RETENTION_GRACE_MS);
    w.store.now.set(w.clock.now_ms());
    let replaced = w.published(database("NZ"));
    // Nothing old enough beyond `old`: its objects go (it is neither new nor replaced).
    let older: Vec<String> = old.objects().into_iter().map(|(k, _)| k).collect();
    assert!(
        w.store.deleted.borrow().is_empty(),
        "the replaced version stays"
    );
    // 150 stray objects from long ago and one just uploaded.
    for i in 0..150 {
        w.store
            .objects
            .borrow_mut()
            .insert(format!("ipdb/stray-{i:03}"), (vec![], DEC_2));
    }
    w.clock.0.set(DEC_2 + 4 * RETENTION_GRACE_MS);
    w.store.now.set(w.clock.now_ms());
    let recent = "ipdb/uploading.mmdb".to_owned();
    w.store
        .objects
        .borrow_mut()
        .insert(recent.clone(), (vec![], w.clock.now_ms() - 1));
    w.source.answer(PLAIN, ok(database("FJ")));
    let run = w.run();
    let Ok(Plan::Publish(v)) = &run.result else {
        panic!("{run:?}")
    };
    let deleted = w.store.deleted.borrow().clone();
    assert_eq!(deleted.len(), MAX_DELETES);
    assert!(
        matches!(run.notes[..], [Note::Retired(MAX_DELETES)]),
        "{:?}",
        run.notes
    );
    let objects = w.store.objects.borrow();
    for (k, _) in v.record.objects().into_iter().chain(replaced.objects()) {
        assert!(objects.contains_key(&k), "{k} kept");
    }
    assert!(objects.contains_key(&recent));
    // The listing was read page by page (3 keys a page): `old`'s objects sort first and go.
    for k in &older {
        assert!(deleted.contains(k), "{k} deleted");
    }
    drop(objects);
    // The next run deletes the rest.
    w.source.answer(PLAIN, ok(database("TO")));
    let run = w.run();
    assert!(
        w.store
            .objects
            .borrow()
            .keys()
            .all(|k| !k.starts_with("ipdb/stray")),
        "{:?}",
        run.notes
    );
}

#[test]
fn the_status_carries_the_probe_the_last_success_and_the_next_run() {
    let w = world(PLAIN);
    w.published(database("AU"));
    let first = w.store.status();
    assert_eq!(first.at, "2026-12-02T01:00:00.000Z");
    assert_eq!(
        first.last_success_at.as_deref(),
        Some("2026-12-02T01:00:00.000Z")
    );
    assert_eq!(first.next_check_at.as_deref(), Some("2026-12-02T03:17:00Z"));
    // A day later the source is down and the probe failed: refused, last success kept.
    w.clock.0.set(DEC_2 + 86_400_000 + 5);
    w.source.answer(PLAIN, status(500));
    let probe = Probe {
        version: "v".into(),
        at: "t".into(),
        ok: false,
        reason: Some("page 3".into()),
    };
    let run = w.run_job(Job {
        probe: Some(probe.clone()),
        ..w.job()
    });
    let s = w.store.status();
    assert_eq!(s, run.status);
    assert_eq!(
        (s.outcome.as_str(), s.at.as_str()),
        ("refused", "2026-12-03T01:00:00.005Z")
    );
    assert_eq!(s.last_success_at, first.last_success_at);
    assert_eq!(s.next_check_at.as_deref(), Some("2026-12-03T03:17:00Z"));
    assert_eq!(
        (s.probe.as_ref(), s.failed_probe.as_ref()),
        (Some(&probe), Some(&probe))
    );
    // A status that cannot be written is a note; the run's result stands.
    *w.store.fail_put.borrow_mut() = Some(STATUS.into());
    let run = w.run();
    assert!(
        matches!(run.notes[..], [Note::StatusNotStored(_)]),
        "{:?}",
        run.notes
    );
    assert!(run.notes[0].is_error());
}

#[test]
fn a_serving_database_that_did_not_load_refuses_the_download() {
    let w = world(PLAIN);
    w.source.answer(PLAIN, ok(database("AU")));
    let run = w.run_job(Job {
        serving: Err(UpdateError::Serving("page 2: checksum".into())),
        ..w.job()
    });
    assert!(w.source.urls().is_empty());
    assert_eq!(
        reason(&run),
        "the serving database (the candidate is vetted against it): page 2: checksum"
    );
}

#[test]
fn the_deadline_aborts_the_download_and_times_out() {
    let w = world(PLAIN);
    w.source.answer(
        PLAIN,
        Reply {
            stall: true,
            ..ok(database("AU"))
        },
    );
    let timer = ManualTimer(&w.clock);
    let ports = w.ports(&timer);
    let mut run = std::pin::pin!(async {
        let prior = ports.prior(&w.settings).await;
        ports.run(w.job(), prior).await
    });
    assert!(poll(run.as_mut()).is_pending());
    w.clock.0.set(DEC_2 + u64::from(TIMEOUT) - 1);
    assert!(poll(run.as_mut()).is_pending());
    assert!(!w.source.aborted.get());
    w.clock.0.set(DEC_2 + u64::from(TIMEOUT));
    let Poll::Ready(run) = poll(run.as_mut()) else {
        panic!("the deadline passed")
    };
    assert!(
        matches!(run.result, Err(UpdateError::TimedOut(TIMEOUT))),
        "{run:?}"
    );
    assert!(w.source.aborted.get());
    assert_eq!(
        reason(&run),
        "download and decompression did not finish within 4000 ms"
    );
    assert!(w.store.record().is_none());
}

/// Staging's store holding `db` published at `at`, probed fine.
fn staged(w: &World, db: Vec<u8>, at: &str) -> IpdbRecord {
    let s = world(PLAIN);
    let r = s.published(db);
    let r = IpdbRecord {
        updated_at: at.into(),
        ..r
    };
    for (k, v) in s.store.objects.borrow().iter() {
        w.staging.objects.borrow_mut().insert(k.clone(), v.clone());
    }
    let status = UpdateStatus {
        probe: Some(Probe {
            version: r.version.clone(),
            at: at.into(),
            ok: true,
            reason: None,
        }),
        ..UpdateStatus::of(&Ok(Plan::Unchanged(r.version.clone())), at.into())
    };
    let kv = &w.staging.kv;
    kv.borrow_mut()
        .insert("ipdb/current".into(), serde_json::to_string(&r).unwrap());
    kv.borrow_mut()
        .insert(STATUS.into(), serde_json::to_string(&status).unwrap());
    r
}

fn promoting() -> World {
    let mut w = world(PLAIN);
    w.settings.source = None;
    w.settings.promote_from_key = Some("ipdb/current".into());
    w.promote = true;
    w
}

#[test]
fn promotion_copies_verified_objects_before_the_record() {
    let w = promoting();
    let young = staged(&w, database("AU"), "2026-12-01T12:00:00Z");
    let run = w.run();
    assert!(
        matches!(&run.result, Ok(Plan::Waiting(why)) if why.contains("13.0 h")),
        "{run:?}"
    );
    assert!(w.store.record().is_none());
    let r = staged(&w, database("AU"), "2026-11-30T00:00:00Z");
    assert_eq!(r.version, young.version);
    let before = w.store.writes.borrow().len();
    let run = w.run();
    assert!(
        matches!(&run.result, Ok(Plan::Promoted(p)) if p.version == r.version),
        "{run:?}"
    );
    let record = w.store.record().unwrap();
    assert_eq!(
        record.origin.unwrap().promoted_from.as_deref(),
        Some("ipdb/current")
    );
    let writes = w.store.writes.borrow()[before..].to_vec();
    let objects: Vec<String> = r
        .objects()
        .into_iter()
        .map(|(k, _)| format!("r2 {k}"))
        .collect();
    assert_eq!(writes[..objects.len()], objects[..]);
    assert_eq!(writes[objects.len()], format!("kv {KEY}"));
    // Again: production serves it already.
    assert!(matches!(w.run().result, Ok(Plan::Unchanged(_))));
}

#[test]
fn a_staging_object_that_does_not_match_refuses_the_promotion() {
    let w = promoting();
    let r = staged(&w, database("AU"), "2026-11-30T00:00:00Z");
    let page = r.table_page_key(0).unwrap();
    w.staging
        .objects
        .borrow_mut()
        .get_mut(&page)
        .unwrap()
        .0
        .push(0);
    let run = w.run();
    assert_eq!(
        reason(&run),
        format!("promotion: object {page} does not match its checksum in staging's record")
    );
    assert!(w.store.record().is_none());
}
