//! The IPDB cron job, minus the I/O: either take staging's version once staging has proved it
//! (`IPDB_PROMOTE_FROM_KEY`, [`super::promote`]), or download the configured source
//! ([`super::source`]: its candidates in order, a not-published status falling back to the
//! next, conditional requests), unpack it ([`super::archive`]) within the caps and one deadline,
//! vet it ([`super::update`]) and publish it: objects before the record that names them, then
//! old objects retired. The outcome becomes the status every isolate's `/healthz` shows.
//!
//! The worker adapter implements the ports ([`Kv`], [`Bucket`], [`Fetch`], [`Gunzip`],
//! [`Timer`], and [`Clock`]) over KV, R2, `fetch` with an `AbortController`,
//! `DecompressionStream` and `Delay`; the unit tests drive the same job over memory with a
//! hand-set clock (`publish/tests.rs`).

use super::archive::{Unpacked, Unpacker};
use super::freshness::next_daily_run;
use super::promote::{self, Promotion};
use super::serving::Clock;
use super::source::{self, Candidate, Origin, SourceAuth, SourceSpec};
use super::update::{self, CappedBuf, Plan, Probe, UpdateError, UpdatePolicy, UpdateStatus};
use super::{Attribution, CountryLookup, IpdbRecord};
use crate::ip::IpdbSettings;
use futures_util::future::{select, Either};
use futures_util::{Stream, StreamExt};
use std::error::Error;
use std::pin::pin;

#[cfg(test)]
mod tests;

/// Old objects deleted per run at most (the platform counts subrequests); the rest go on the
/// next run.
pub const MAX_DELETES: usize = 100;

/// What the cron's run answers when neither a source nor a promotion is configured.
pub const OFF: &str = "IPDB_SOURCE_URL not set; nothing to publish";

/// Text values by key (KV in the worker): the version record and the update status.
#[allow(async_fn_in_trait)] // Used with concrete types only; no `Send` bound is wanted on wasm.
pub trait Kv {
    /// Why a read or a write failed (a missing key is `None`, not an error).
    type Error: Error + 'static;
    /// The value under `key`.
    async fn get_text(&self, key: &str) -> Result<Option<String>, Self::Error>;
    /// Writes `text` under `key`.
    async fn put_text(&self, key: &str, text: String) -> Result<(), Self::Error>;
}

/// One page of a bucket listing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// `(key, uploaded ms)` of each object.
    pub objects: Vec<(String, u64)>,
    /// Where the next page starts; `None` on the last page.
    pub cursor: Option<String>,
}

/// Published objects by key (R2 in the worker).
#[allow(async_fn_in_trait)]
pub trait Bucket {
    /// Why an operation failed (a missing object is `None`, not an error).
    type Error: Error + 'static;
    /// An object's bytes.
    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, Self::Error>;
    /// Writes an object.
    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), Self::Error>;
    /// One page of the keys under `prefix`, from `cursor`.
    async fn list(&self, prefix: &str, cursor: Option<String>) -> Result<Listing, Self::Error>;
    /// Deletes `keys` in one call.
    async fn delete(&self, keys: Vec<String>) -> Result<(), Self::Error>;
}

/// What the source answered: the status, the headers (names in any case) and the body.
pub struct Response<B> {
    /// HTTP status.
    pub status: u16,
    /// Response headers.
    pub headers: Vec<(String, String)>,
    /// The body, chunk by chunk.
    pub body: B,
}

impl<B> Response<B> {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    }
}

/// Outbound GETs to the source (`fetch` in the worker).
#[allow(async_fn_in_trait)]
pub trait Fetch {
    /// Why a request or its body failed.
    type Error: Error + 'static;
    /// The body stream.
    type Body: Stream<Item = Result<Vec<u8>, Self::Error>>;
    /// GET `url` with `headers` (lower-case names). A response without a body (a `304`)
    /// answers an empty body stream, not an error: only a `200`'s body is read.
    async fn get(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
    ) -> Result<Response<Self::Body>, Self::Error>;
    /// Cancels what is in flight: the deadline passed.
    fn abort(&self);
}

/// Gzip decompression as a stream (the runtime's `DecompressionStream` in the worker, so the
/// wasm carries no inflate code), read chunk by chunk so a bomb stops at the cap.
pub trait Gunzip {
    /// Why the stream is corrupt or could not be set up.
    type Error: Error + 'static;
    /// The decompressed chunks.
    type Output: Stream<Item = Result<Vec<u8>, Self::Error>>;
    /// Starts decompressing `gz`.
    ///
    /// # Errors
    /// When the decompressor cannot be set up.
    fn gunzip(&self, gz: Vec<u8>) -> Result<Self::Output, Self::Error>;
}

/// The deadline's timer (`Delay` in the worker).
#[allow(async_fn_in_trait)]
pub trait Timer {
    /// Resolves after `ms`.
    async fn sleep(&self, ms: u32);
}

/// Everything the job touches. `staging_kv` / `staging_bucket` are production's reads of
/// staging's store (`None`: the job's own `kv` / `bucket`, a shared store under another key).
pub struct Ports<'a, K, B, F, G, T, C> {
    /// The record and the status.
    pub kv: &'a K,
    /// The published objects.
    pub bucket: &'a B,
    /// Staging's record and status (promotion).
    pub staging_kv: Option<&'a K>,
    /// Staging's objects (promotion): copied, each checked, into `bucket`.
    pub staging_bucket: Option<&'a B>,
    /// The source.
    pub fetch: &'a F,
    /// The decompressor.
    pub gunzip: &'a G,
    /// The deadline.
    pub timer: &'a T,
    /// Now.
    pub clock: &'a C,
}

/// Which job the configuration asks for.
#[derive(Clone, Copy, Debug)]
pub enum Mode<'a> {
    /// Production: take staging's version from this record key.
    Promote(&'a str),
    /// Download this source.
    Download(&'a SourceSpec),
}

impl<'a> Mode<'a> {
    /// Promotion wins over a source; `None` when neither is configured ([`OFF`]).
    pub fn of(settings: &'a IpdbSettings) -> Option<Self> {
        match (&settings.promote_from_key, &settings.source) {
            (Some(from), _) => Some(Mode::Promote(from)),
            (None, Some(source)) => Some(Mode::Download(source)),
            (None, None) => None,
        }
    }
}

/// What was published before this run: the last status and the record (unreadable is `None`).
#[derive(Clone, Debug, Default)]
pub struct Prior {
    /// The last run's status.
    pub previous: Option<UpdateStatus>,
    /// The version record.
    pub current: Option<IpdbRecord>,
}

/// The database a download is vetted against: the serving one, every page loaded.
pub struct Against<'a> {
    /// Its lookups.
    pub db: &'a dyn CountryLookup,
    /// Its credit, carried over when the candidate's metadata names no source.
    pub attribution: Option<Attribution>,
}

/// One run's inputs beside the ports.
pub struct Job<'a> {
    /// The configuration.
    pub settings: &'a IpdbSettings,
    /// [`Mode::of`] the settings.
    pub mode: Mode<'a>,
    /// The cron expression that fired (the next run is computed from it).
    pub cron: &'a str,
    /// The serving database, or why it did not load (a download is then refused).
    pub serving: Result<Against<'a>, UpdateError>,
    /// This run's probe of the serving version.
    pub probe: Option<Probe>,
}

/// Something the adapter logs: the run went on regardless.
#[derive(Debug, thiserror::Error)]
pub enum Note {
    /// The status could not be written (isolates keep showing the previous one).
    #[error("ipdb update status not stored: {0}")]
    StatusNotStored(Box<dyn Error>),
    /// Old objects deleted.
    #[error("ipdb retention: deleted {0} old objects")]
    Retired(usize),
    /// The bucket could not be listed: nothing deleted.
    #[error("ipdb retention: R2 list: {0}")]
    ListFailed(Box<dyn Error>),
    /// The delete failed: the next run tries again.
    #[error("ipdb retention: R2 delete: {0}")]
    DeleteFailed(Box<dyn Error>),
}

impl Note {
    /// Whether it is logged as an error.
    pub fn is_error(&self) -> bool {
        !matches!(self, Note::Retired(_))
    }
}

/// Why storing a candidate failed (then reported as a failed update: no record is written).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An object could not be written.
    #[error("R2 write {key}: {source}")]
    Write {
        /// The object.
        key: String,
        /// The bucket's error.
        source: Box<dyn Error>,
    },
    /// An object could not be read (promotion).
    #[error("R2 read {key}: {source}")]
    Read {
        /// The object.
        key: String,
        /// The bucket's error.
        source: Box<dyn Error>,
    },
    /// The record could not be written.
    #[error("KV write: {0}")]
    Record(Box<dyn Error>),
    /// The record did not serialise.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

fn storing(e: StoreError) -> UpdateError {
    UpdateError::Download(format!("storing the candidate: {e}"))
}

fn download_error(e: impl Error) -> UpdateError {
    UpdateError::Download(e.to_string())
}

fn gzip_error(e: impl Error) -> UpdateError {
    UpdateError::Gzip(e.to_string())
}

/// What a run did: the plan (or why none), the status stored for `/healthz`, and what the
/// adapter logs.
#[derive(Debug)]
pub struct Run {
    /// The plan carried out, or why the run was refused or failed.
    pub result: Result<Plan, UpdateError>,
    /// The status written next to the record.
    pub status: UpdateStatus,
    /// What to log.
    pub notes: Vec<Note>,
}

impl Run {
    /// The cron's log line for the plan.
    pub fn summary(plan: &Plan) -> String {
        match plan {
            Plan::Publish(v) => format!("published {}", v.record.version),
            Plan::Promoted(r) => format!("promoted {} from staging", r.version),
            Plan::Unchanged(v) => format!("unchanged ({v})"),
            Plan::NotModified(v) => format!("not modified ({v})"),
            Plan::Waiting(why) => format!("waiting: {why}"),
        }
    }
}

/// `ms` since the epoch as the runtime's `Date.toISOString()` writes it (milliseconds, `Z`).
#[must_use]
pub fn iso_ms(ms: u64) -> String {
    let s = source::rfc3339(ms);
    format!("{}.{:03}Z", s.trim_end_matches('Z'), ms % 1000)
}

/// What the download and vetting leave behind for the status beside the plan.
#[derive(Default)]
struct Trail {
    origin: Option<Origin>,
    tried: Vec<String>,
    notes: Vec<Note>,
}

/// What the source answered.
enum Fetched {
    /// `304` to the published version's validators.
    NotModified(Origin),
    /// The database, out of its gzip and tar, and where it came from.
    Body(Unpacked, Origin),
}

async fn kv_text<K: Kv>(kv: &K, key: &str) -> Option<String> {
    kv.get_text(key).await.ok().flatten()
}

impl<K: Kv, B: Bucket, F: Fetch, G: Gunzip, T: Timer, C: Clock> Ports<'_, K, B, F, G, T, C> {
    /// The last status and the record, read before the probe (which needs the record).
    pub async fn prior(&self, settings: &IpdbSettings) -> Prior {
        let status = kv_text(self.kv, &update::status_key(&settings.kv_key)).await;
        let record = kv_text(self.kv, &settings.kv_key).await;
        Prior {
            previous: status.and_then(|t| serde_json::from_str(&t).ok()),
            current: record.and_then(|t| IpdbRecord::parse(&t).ok()),
        }
    }

    /// The run: promote or download, then the status (refusals included) written for every
    /// isolate's `/healthz`. A refused or failed run writes no record: the serving version
    /// stays.
    pub async fn run(&self, job: Job<'_>, prior: Prior) -> Run {
        let now = self.clock.now_ms();
        let current = prior.current.as_ref();
        let mut trail = Trail::default();
        let result = match job.mode {
            Mode::Promote(from) => {
                self.promote_from(job.settings, current, from, now, &mut trail)
                    .await
            }
            Mode::Download(source) => match job.serving {
                Err(e) => Err(e),
                Ok(against) => {
                    let (s, c) = (job.settings, current);
                    self.download_and_vet(s, source, &against, c, now, &mut trail)
                        .await
                }
            },
        };
        let at = iso_ms(self.clock.now_ms());
        let mut status = UpdateStatus::of(&result, at).after(prior.previous.as_ref(), job.probe);
        if status.origin.is_none() {
            status.origin = trail.origin;
        }
        status.tried = trail.tried;
        status.next_check_at = next_daily_run(job.cron, now).map(source::rfc3339);
        let key = update::status_key(&job.settings.kv_key);
        let stored = match serde_json::to_string(&status) {
            Ok(text) => self.kv.put_text(&key, text).await.map_err(Box::from),
            Err(e) => Err(Box::from(e)),
        };
        if let Err(e) = stored {
            trail.notes.push(Note::StatusNotStored(e));
        }
        Run {
            result,
            status,
            notes: trail.notes,
        }
    }

    /// Downloads the source, unpacks and vets it, and publishes a passing candidate; an
    /// unchanged one keeps its new validators. Where the candidate came from goes in `trail`.
    async fn download_and_vet(
        &self,
        settings: &IpdbSettings,
        source: &SourceSpec,
        against: &Against<'_>,
        current: Option<&IpdbRecord>,
        now: u64,
        trail: &mut Trail,
    ) -> Result<Plan, UpdateError> {
        let policy = settings.update_policy();
        let timeout = settings.download_timeout_ms;
        let fetched = self
            .download(source, current, &policy, timeout, now, &mut trail.tried)
            .await?;
        let (unpacked, mut origin) = match fetched {
            Fetched::NotModified(origin) => {
                trail.origin = Some(origin);
                let v = current.map(|c| c.version.clone()).unwrap_or_default();
                return Ok(Plan::NotModified(v));
            }
            Fetched::Body(u, origin) => (u, origin),
        };
        origin.release = unpacked
            .member
            .as_deref()
            .and_then(source::release_of_member);
        trail.origin = Some(origin.clone());
        // The npm builds name no source in their metadata; then the serving credit carries over.
        let at = iso_ms(self.clock.now_ms());
        let credit = against.attribution.clone();
        let plan = update::vet(unpacked.bytes, against.db, current, &policy, at, credit)?;
        match plan {
            Plan::Publish(mut v) => {
                v.record.origin = Some(origin);
                self.publish(&settings.kv_key, &v).await.map_err(storing)?;
                trail
                    .notes
                    .extend(self.retire(&v.record, current, now).await);
                Ok(Plan::Publish(v))
            }
            Plan::Unchanged(version) => {
                // The same database: keep its new validators, so the next run asks conditionally.
                if let Some(c) = current.filter(|c| c.origin.as_ref() != Some(&origin)) {
                    let record = IpdbRecord {
                        origin: Some(origin),
                        ..c.clone()
                    };
                    self.put_record(&settings.kv_key, &record)
                        .await
                        .map_err(storing)?;
                }
                Ok(Plan::Unchanged(version))
            }
            other => Ok(other),
        }
    }

    /// Production: staging's version, once the promotion rule allows it; its objects are
    /// copied (each checked against staging's record) before the record is written.
    async fn promote_from(
        &self,
        settings: &IpdbSettings,
        current: Option<&IpdbRecord>,
        from: &str,
        now: u64,
        trail: &mut Trail,
    ) -> Result<Plan, UpdateError> {
        let staging_kv = self.staging_kv.unwrap_or(self.kv);
        let record = kv_text(staging_kv, from).await;
        let status: Option<UpdateStatus> = kv_text(staging_kv, &update::status_key(from))
            .await
            .and_then(|t| serde_json::from_str(&t).ok());
        let probes = status.as_ref().map_or((None, None), |s| {
            (s.probe.as_ref(), s.failed_probe.as_ref())
        });
        let policy = settings.promotion_policy();
        let decision = promote::decide(record.as_deref(), probes, current, now, policy, from)?;
        let record = match decision {
            Promotion::Unchanged(v) => return Ok(Plan::Unchanged(v)),
            Promotion::Wait(why) => return Ok(Plan::Waiting(why)),
            Promotion::Promote(r) => r,
        };
        let from_bucket = self.staging_bucket.unwrap_or(self.bucket);
        for (key, sha) in record.objects() {
            let bytes = from_bucket.get(&key).await.map_err(|e| {
                let source = Box::new(e);
                storing(StoreError::Read {
                    key: key.clone(),
                    source,
                })
            })?;
            promote::verify_object(&key, &sha, bytes.as_deref())?;
            if let (Some(_), Some(bytes)) = (self.staging_bucket, bytes) {
                self.put_object(&key, bytes).await.map_err(storing)?;
            }
        }
        self.put_record(&settings.kv_key, &record)
            .await
            .map_err(storing)?;
        trail.notes.extend(self.retire(&record, current, now).await);
        Ok(Plan::Promoted(record))
    }

    async fn put_object(&self, key: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        self.bucket
            .put(key, bytes)
            .await
            .map_err(|e| StoreError::Write {
                key: key.to_owned(),
                source: Box::new(e),
            })
    }

    async fn put_record(&self, key: &str, record: &IpdbRecord) -> Result<(), StoreError> {
        let text = serde_json::to_string(record)?;
        let put = self.kv.put_text(key, text).await;
        put.map_err(|e| StoreError::Record(Box::new(e)))
    }

    /// The database, its table's directory and pages, then the record that names them: a
    /// reader never sees a record without its objects, and a failed write leaves no record.
    async fn publish(&self, key: &str, v: &update::Vetted) -> Result<(), StoreError> {
        let r = &v.record;
        self.put_object(&r.object_key, v.bytes.clone()).await?;
        let pages = v.table.pages.iter().enumerate();
        let table = pages.map(|(i, p)| (r.table_page_key(i), p));
        for (key, bytes) in std::iter::once((r.table_dir_key(), &v.table.dir)).chain(table) {
            let Some(key) = key else { continue };
            self.put_object(&key, bytes.clone()).await?;
        }
        self.put_record(key, r).await
    }

    /// Deletes what neither `new` nor the version it replaced names
    /// ([`promote::to_delete`]), at most [`MAX_DELETES`] a run. Failures are notes, never
    /// fatal: the publish already happened.
    async fn retire(
        &self,
        new: &IpdbRecord,
        replaced: Option<&IpdbRecord>,
        now: u64,
    ) -> Option<Note> {
        let mut listed = Vec::new();
        let mut cursor = None;
        loop {
            let page = match self.bucket.list("ipdb/", cursor.take()).await {
                Ok(p) => p,
                Err(e) => return Some(Note::ListFailed(Box::new(e))),
            };
            listed.extend(page.objects);
            match page.cursor {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        let keep: Vec<&IpdbRecord> = std::iter::once(new).chain(replaced).collect();
        let mut gone = promote::to_delete(&listed, &keep, now);
        gone.truncate(MAX_DELETES);
        if gone.is_empty() {
            return None;
        }
        let n = gone.len();
        Some(match self.bucket.delete(gone).await {
            Ok(()) => Note::Retired(n),
            Err(e) => Note::DeleteFailed(Box::new(e)),
        })
    }

    /// Tries the source's candidates in order within one deadline (`timeout_ms` for all of
    /// them, decompression included); past it the fetch is aborted.
    async fn download(
        &self,
        source: &SourceSpec,
        current: Option<&IpdbRecord>,
        policy: &UpdatePolicy,
        timeout_ms: u32,
        now: u64,
        tried: &mut Vec<String>,
    ) -> Result<Fetched, UpdateError> {
        // A period older than the published one is never tried (no rollback by a late 404).
        let not_before = current
            .and_then(|c| c.origin.as_ref())
            .filter(|o| o.kind == source.kind() && o.promoted_from.is_none())
            .and_then(|o| o.period.clone());
        let candidates = source.candidates(now, not_before.as_deref());
        let work = pin!(self.try_candidates(source, &candidates, current, policy, tried));
        let timer = pin!(self.timer.sleep(timeout_ms));
        match select(work, timer).await {
            Either::Left((result, _)) => result,
            Either::Right(((), _)) => {
                self.fetch.abort();
                Err(UpdateError::TimedOut(timeout_ms))
            }
        }
    }

    /// Each candidate in turn: a not-published status (`source::not_published`) passes to the
    /// next one, noted in `tried`, unless it is the last; a `304` to the validators sent keeps
    /// the published version.
    async fn try_candidates(
        &self,
        source: &SourceSpec,
        candidates: &[Candidate],
        current: Option<&IpdbRecord>,
        policy: &UpdatePolicy,
        tried: &mut Vec<String>,
    ) -> Result<Fetched, UpdateError> {
        let last = candidates.len().saturating_sub(1);
        for (i, c) in candidates.iter().enumerate() {
            let label = c
                .period
                .as_ref()
                .map_or(String::new(), |p| format!("{p}: "));
            let published = current.and_then(|r| r.origin.as_ref());
            let validators = published.map_or((None, None), |o| o.conditional(&c.url));
            let headers = request_headers(&source.auth, validators);
            let resp = self.fetch.get(&c.url, &headers).await;
            let resp = resp.map_err(download_error)?;
            let origin = Origin {
                kind: source.kind().into(),
                url: c.url.clone(),
                period: c.period.clone(),
                release: None,
                etag: resp.header("etag"),
                last_modified: resp.header("last-modified"),
                promoted_from: None,
            };
            match resp.status {
                304 if validators != (None, None) => {
                    // A 304 need not repeat the validators; the published ones still hold.
                    let kept = published.cloned().unwrap_or(origin);
                    return Ok(Fetched::NotModified(kept));
                }
                200 => {}
                s if i < last && source::not_published(s) => {
                    tried.push(format!("{label}answered {s}"));
                    continue;
                }
                s => return Err(UpdateError::Download(format!("{label}answered {s}"))),
            }
            let unpacked = self.read_body(resp, policy).await?;
            return Ok(Fetched::Body(unpacked, origin));
        }
        Err(UpdateError::Download("no candidate URL".into()))
    }

    /// The body within the download cap (a declared length over it is refused before a byte
    /// is read), then out of its gzip (sniffed) and tar within the database cap.
    async fn read_body(
        &self,
        resp: Response<F::Body>,
        policy: &UpdatePolicy,
    ) -> Result<Unpacked, UpdateError> {
        let declared = resp.header("content-length");
        if let Some(n) = declared.and_then(|n| n.parse::<u64>().ok()) {
            if n > policy.max_download_bytes {
                return Err(UpdateError::TooLarge {
                    what: "download",
                    limit: policy.max_download_bytes,
                });
            }
        }
        let mut buf = CappedBuf::new(policy.max_download_bytes, "download");
        let mut body = pin!(resp.body);
        while let Some(chunk) = body.next().await {
            buf.push(&chunk.map_err(download_error)?)?;
        }
        let bytes = buf.into_inner();
        let mut out = Unpacker::new(policy.max_db_bytes);
        if update::is_gzip(&bytes) {
            let stream = self.gunzip.gunzip(bytes).map_err(gzip_error)?;
            let mut stream = pin!(stream);
            while let Some(chunk) = stream.next().await {
                out.push(&chunk.map_err(gzip_error)?)?;
            }
        } else {
            out.push(&bytes)?;
        }
        Ok(out.finish()?)
    }
}

/// The request's headers: MaxMind's basic auth (the credentials go in this header only: never
/// in the URL, a log or a status) and the validators of the same URL's last download.
fn request_headers(
    auth: &SourceAuth,
    (etag, last_modified): (Option<&str>, Option<&str>),
) -> Vec<(&'static str, String)> {
    let mut headers = Vec::new();
    if let SourceAuth::MaxMind(creds) = auth {
        headers.push(("authorization", creds.header()));
    }
    if let Some(etag) = etag {
        headers.push(("if-none-match", etag.to_owned()));
    }
    if let Some(lm) = last_modified {
        headers.push(("if-modified-since", lm.to_owned()));
    }
    headers
}
