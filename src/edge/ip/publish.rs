//! The IPDB cron job: probe the version being served, then either download the configured
//! source (a URL, a URL template, MaxMind's endpoint; `egn_core::ip::source`), unpack it
//! (`egn_core::ip::archive`) and vet it (`egn_core::ip::update`), or, in production with
//! `IPDB_PROMOTE_FROM_KEY`, take staging's version once staging has proved it
//! (`egn_core::ip::promote`). Objects go to R2 before the KV record that names them; the outcome
//! goes to KV for every isolate's `/healthz`. This is the source side of hot swap; isolates only
//! follow the record (`egn_core::ip::serving`). The decisions are the core's; this file does I/O.

use super::{ipdb, now_iso, probe_serving, IPDB_BUCKET, IPDB_CONFIG};
use egn_core::config::{Config, IpdbSettings};
use egn_core::ip::archive::{Unpacked, Unpacker};
use egn_core::ip::freshness::next_daily_run;
use egn_core::ip::promote::{self, Promotion};
use egn_core::ip::serving::{Clock, Served};
use egn_core::ip::source::{self, Origin, SourceAuth, SourceSpec};
use egn_core::ip::update::{self, CappedBuf, Plan, UpdateError, UpdatePolicy, UpdateStatus};
use egn_core::ip::IpdbRecord;
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use wasm_bindgen::JsCast;
use worker::kv::KvStore;
use worker::{AbortController, Bucket, Delay, Env, Fetch, Headers, Request, RequestInit};

use super::store::WorkerClock;

/// Production's read of staging's KV namespace (optional: else `IPDB_CONFIG`).
const STAGING_CONFIG: &str = "IPDB_STAGING_CONFIG";
/// Production's read of staging's bucket (optional: else `IPDB_BUCKET`).
const STAGING_BUCKET: &str = "IPDB_STAGING_BUCKET";
/// Old objects deleted per run at most (subrequests are counted); the rest go next run.
const MAX_DELETES: usize = 100;

/// Why the cron's run did not end in `published`, `unchanged` or `waiting`. The texts are the
/// cron's log.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The KV or R2 binding is missing (`KV`, `R2`).
    #[error("{0} binding: {1}")]
    Binding(&'static str, worker::Error),
    /// The candidate was refused or could not be fetched or stored.
    #[error(transparent)]
    Update(#[from] UpdateError),
    /// The record or the status did not serialise.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Why storing failed (it is then reported as a failed update).
#[derive(Debug, thiserror::Error)]
enum StoreError {
    #[error("R2 binding: {0}")]
    Binding(worker::Error),
    /// An object or the record could not be read or written (`R2 write …`, `R2 read …`).
    #[error("{0}: {1}")]
    Io(String, worker::Error),
    #[error("KV write: {0}")]
    Kv(worker::KvError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

fn storing(e: StoreError) -> UpdateError {
    UpdateError::Download(format!("storing the candidate: {e}"))
}

/// Cron job (`cron` is the expression that fired it: the next due run is computed from it).
/// The outcome (refusals included) is kept in KV for every isolate's `/healthz`; a refused or
/// failed run writes no record, so the serving version stays.
///
/// # Errors
/// [`PublishError`] when a binding is missing, or the candidate was refused or not stored.
pub async fn publish_from_source(
    env: &Env,
    cfg: &Config,
    cron: &str,
) -> Result<String, PublishError> {
    let settings = &cfg.ipdb;
    if settings.source.is_none() && settings.promote_from_key.is_none() {
        return Ok("IPDB_SOURCE_URL not set; nothing to publish".into());
    }
    let kv = env
        .kv(IPDB_CONFIG)
        .map_err(|e| PublishError::Binding("KV", e))?;
    let previous: Option<UpdateStatus> = kv_text(&kv, &update::status_key(&settings.kv_key))
        .await
        .and_then(|t| serde_json::from_str(&t).ok());
    let current = kv_text(&kv, &settings.kv_key)
        .await
        .and_then(|t| IpdbRecord::parse(&t).ok());
    // What serves, every page loaded and verified: the probe staging's promotion rule reads,
    // and the database a download is vetted against.
    let (serving, probe) = probe_serving(env, settings, current.as_ref()).await;
    let now = WorkerClock.now_ms();
    let mut origin = None;
    let tried = Rc::new(RefCell::new(Vec::new()));
    let result = if let Some(from) = &settings.promote_from_key {
        promote_from(env, &kv, settings, current.as_ref(), from, now).await
    } else if let Some(source) = &settings.source {
        match serving {
            Err(e) => Err(UpdateError::Serving(e.message)),
            Ok(serving) => {
                let r = download_and_vet(
                    env,
                    &kv,
                    settings,
                    source,
                    &serving,
                    current.as_ref(),
                    &tried,
                    now,
                )
                .await;
                r.map(|(plan, o)| {
                    origin = o;
                    plan
                })
            }
        }
    } else {
        unreachable!("checked above")
    };
    let mut status = UpdateStatus::of(&result, now_iso()).after(previous.as_ref(), probe);
    if status.origin.is_none() {
        status.origin = origin;
    }
    status.tried = tried.take();
    status.next_check_at = next_daily_run(cron, now).map(source::rfc3339);
    ipdb().set_last_update(status.clone());
    let text = serde_json::to_string(&status)?;
    if let Ok(put) = kv.put(&update::status_key(&settings.kv_key), text) {
        if let Err(e) = put.execute().await {
            worker::console_error!("ipdb update status not stored: {e}");
        }
    }
    match result? {
        Plan::Publish(v) => Ok(format!("published {}", v.record.version)),
        Plan::Promoted(r) => Ok(format!("promoted {} from staging", r.version)),
        Plan::Unchanged(v) => Ok(format!("unchanged ({v})")),
        Plan::NotModified(v) => Ok(format!("not modified ({v})")),
        Plan::Waiting(why) => Ok(format!("waiting: {why}")),
    }
}

async fn kv_text(kv: &KvStore, key: &str) -> Option<String> {
    kv.get(key).text().await.ok().flatten()
}

/// Downloads the source (current period, then the previous), unpacks and vets it, and
/// publishes a passing candidate. Returns the plan and where the candidate came from.
#[allow(clippy::too_many_arguments)]
async fn download_and_vet(
    env: &Env,
    kv: &KvStore,
    settings: &IpdbSettings,
    source: &SourceSpec,
    serving: &Served,
    current: Option<&IpdbRecord>,
    tried: &Rc<RefCell<Vec<String>>>,
    now: u64,
) -> Result<(Plan, Option<Origin>), UpdateError> {
    let policy = settings.update_policy();
    let fetched = download(
        source,
        current,
        &policy,
        settings.download_timeout_ms,
        tried,
        now,
    )
    .await?;
    let (unpacked, mut origin) = match fetched {
        Fetched::NotModified(origin) => {
            let v = current.map(|c| c.version.clone()).unwrap_or_default();
            return Ok((Plan::NotModified(v), Some(origin)));
        }
        Fetched::Body(u, origin) => (u, origin),
    };
    origin.release = unpacked
        .member
        .as_deref()
        .and_then(source::release_of_member);
    // The npm builds name no source in their metadata; then the bundled credit carries over.
    let plan = update::vet(
        unpacked.bytes,
        serving.db(),
        current,
        &policy,
        now_iso(),
        serving.attribution().cloned(),
    )?;
    match plan {
        Plan::Publish(mut v) => {
            v.record.origin = Some(origin.clone());
            let bucket = env.bucket(IPDB_BUCKET).map_err(StoreError::Binding);
            let bucket = bucket.map_err(storing)?;
            publish(&bucket, kv, &settings.kv_key, &v)
                .await
                .map_err(storing)?;
            retire(&bucket, &v.record, current, now).await;
            Ok((Plan::Publish(v), Some(origin)))
        }
        Plan::Unchanged(version) => {
            // The same database: keep its new validators, so the next run asks conditionally.
            if let Some(c) = current.filter(|c| c.origin.as_ref() != Some(&origin)) {
                let record = IpdbRecord {
                    origin: Some(origin.clone()),
                    ..c.clone()
                };
                put_record(kv, &settings.kv_key, &record)
                    .await
                    .map_err(storing)?;
            }
            Ok((Plan::Unchanged(version), Some(origin)))
        }
        other => Ok((other, Some(origin))),
    }
}

/// Production: staging's version, once the promotion rule allows it; its objects are copied
/// (each checked against staging's record) before the record is written.
async fn promote_from(
    env: &Env,
    kv: &KvStore,
    settings: &IpdbSettings,
    current: Option<&IpdbRecord>,
    from: &str,
    now: u64,
) -> Result<Plan, UpdateError> {
    let staging_kv = env.kv(STAGING_CONFIG).unwrap_or_else(|_| kv.clone());
    let record = kv_text(&staging_kv, from).await;
    let status: Option<UpdateStatus> = kv_text(&staging_kv, &update::status_key(from))
        .await
        .and_then(|t| serde_json::from_str(&t).ok());
    let policy = settings.promotion_policy();
    let probes = status.as_ref().map_or((None, None), |s| {
        (s.probe.as_ref(), s.failed_probe.as_ref())
    });
    let decision = promote::decide(record.as_deref(), probes, current, now, policy, from)?;
    let record = match decision {
        Promotion::Unchanged(v) => return Ok(Plan::Unchanged(v)),
        Promotion::Wait(why) => return Ok(Plan::Waiting(why)),
        Promotion::Promote(r) => r,
    };
    let bucket = env
        .bucket(IPDB_BUCKET)
        .map_err(|e| storing(StoreError::Binding(e)))?;
    let staging_bucket = env.bucket(STAGING_BUCKET).ok();
    for (key, sha) in record.objects() {
        let from_bucket = staging_bucket.as_ref().unwrap_or(&bucket);
        let bytes = read_object(from_bucket, &key).await.map_err(storing)?;
        promote::verify_object(&key, &sha, bytes.as_deref())?;
        if let (Some(_), Some(bytes)) = (&staging_bucket, bytes) {
            bucket
                .put(&key, bytes)
                .execute()
                .await
                .map_err(|e| storing(StoreError::Io(format!("R2 write {key}"), e)))?;
        }
    }
    put_record(kv, &settings.kv_key, &record)
        .await
        .map_err(storing)?;
    retire(&bucket, &record, current, now).await;
    Ok(Plan::Promoted(record))
}

async fn read_object(bucket: &Bucket, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
    let io = |e| StoreError::Io(format!("R2 read {key}"), e);
    let Some(o) = bucket.get(key).execute().await.map_err(io)? else {
        return Ok(None);
    };
    let Some(body) = o.body() else {
        return Ok(None);
    };
    body.bytes().await.map(Some).map_err(io)
}

async fn put_record(kv: &KvStore, key: &str, record: &IpdbRecord) -> Result<(), StoreError> {
    let text = serde_json::to_string(record)?;
    kv.put(key, text)
        .map_err(StoreError::Kv)?
        .execute()
        .await
        .map_err(StoreError::Kv)
}

async fn publish(
    bucket: &Bucket,
    kv: &KvStore,
    key: &str,
    v: &update::Vetted,
) -> Result<(), StoreError> {
    bucket
        .put(&v.record.object_key, v.bytes.clone())
        .execute()
        .await
        .map_err(|e| StoreError::Io("R2 write".into(), e))?;
    let r = &v.record;
    let table = (0..v.table.pages.len()).map(|i| (r.table_page_key(i), &v.table.pages[i]));
    for (key, bytes) in std::iter::once((r.table_dir_key(), &v.table.dir)).chain(table) {
        let Some(key) = key else { continue };
        bucket
            .put(&key, bytes.clone())
            .execute()
            .await
            .map_err(|e| StoreError::Io(format!("R2 write {key}"), e))?;
    }
    // The objects are written before the record, so a reader never sees a record without them.
    put_record(kv, key, &v.record).await
}

/// Deletes the objects no longer needed (`egn_core::ip::promote::to_delete`): only the new
/// version and the one it replaced are kept. Failures are logged, never fatal: the publish
/// already happened.
async fn retire(bucket: &Bucket, new: &IpdbRecord, replaced: Option<&IpdbRecord>, now: u64) {
    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut list = bucket.list().prefix("ipdb/");
        if let Some(c) = cursor.take() {
            list = list.cursor(c);
        }
        let page = match list.execute().await {
            Ok(p) => p,
            Err(e) => {
                worker::console_error!("ipdb retention: R2 list: {e}");
                return;
            }
        };
        for o in page.objects() {
            listed.push((o.key(), o.uploaded().as_millis()));
        }
        match page.cursor().filter(|_| page.truncated()) {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let keep: Vec<&IpdbRecord> = std::iter::once(new).chain(replaced).collect();
    let mut gone = promote::to_delete(&listed, &keep, now);
    gone.truncate(MAX_DELETES);
    if gone.is_empty() {
        return;
    }
    let n = gone.len();
    match bucket.delete_multiple(gone).await {
        Ok(()) => worker::console_log!("ipdb retention: deleted {n} old objects"),
        Err(e) => worker::console_error!("ipdb retention: R2 delete: {e}"),
    }
}

/// What the source answered.
enum Fetched {
    /// `304` to the published version's validators.
    NotModified(Origin),
    /// The database, out of its gzip and tar, and where it came from.
    Body(Unpacked, Origin),
}

/// Tries the source's candidates in order within one deadline (`timeout_ms` for all of them,
/// decompression included), refusing more than the policy's caps as soon as a stream passes
/// them. Each candidate passed over is noted in `tried`.
async fn download(
    source: &SourceSpec,
    current: Option<&IpdbRecord>,
    policy: &UpdatePolicy,
    timeout_ms: u32,
    tried: &Rc<RefCell<Vec<String>>>,
    now: u64,
) -> Result<Fetched, UpdateError> {
    let not_before = current
        .and_then(|c| c.origin.as_ref())
        .filter(|o| o.kind == source.kind() && o.promoted_from.is_none())
        .and_then(|o| o.period.clone());
    let candidates = source.candidates(now, not_before.as_deref());
    let controller = AbortController::default();
    let signal = controller.signal();
    let work = Box::pin(async move {
        let dl = |e: worker::Error| UpdateError::Download(e.to_string());
        let last = candidates.len().saturating_sub(1);
        for (i, c) in candidates.iter().enumerate() {
            let label = c
                .period
                .as_ref()
                .map_or(String::new(), |p| format!("{p}: "));
            let headers = Headers::new();
            if let SourceAuth::MaxMind(creds) = &source.auth {
                // The credentials go in this header only: never in the URL, a log or a status.
                headers.set("authorization", &creds.header()).map_err(dl)?;
            }
            let validators = current
                .and_then(|r| r.origin.as_ref())
                .map_or((None, None), |o| o.conditional(&c.url));
            if let Some(etag) = validators.0 {
                headers.set("if-none-match", etag).map_err(dl)?;
            }
            if let Some(lm) = validators.1 {
                headers.set("if-modified-since", lm).map_err(dl)?;
            }
            let mut init = RequestInit::new();
            init.with_method(worker::Method::Get).with_headers(headers);
            let request = Request::new_with_init(&c.url, &init).map_err(dl)?;
            let mut resp = Fetch::Request(request)
                .send_with_signal(&signal)
                .await
                .map_err(dl)?;
            let status = resp.status_code();
            let header = |name: &str| resp.headers().get(name).ok().flatten();
            let origin = Origin {
                kind: source.kind().into(),
                url: c.url.clone(),
                period: c.period.clone(),
                release: None,
                etag: header("etag"),
                last_modified: header("last-modified"),
                promoted_from: None,
            };
            match status {
                304 if validators != (None, None) => {
                    // A 304 need not repeat the validators; the published ones still hold.
                    let kept = current.and_then(|r| r.origin.clone()).unwrap_or(origin);
                    return Ok(Fetched::NotModified(kept));
                }
                200 => {}
                s if i < last && source::not_published(s) => {
                    tried.borrow_mut().push(format!("{label}answered {s}"));
                    continue;
                }
                s => return Err(UpdateError::Download(format!("{label}answered {s}"))),
            }
            let declared = header("content-length");
            if let Some(n) = declared.and_then(|n| n.parse::<u64>().ok()) {
                if n > policy.max_download_bytes {
                    return Err(UpdateError::TooLarge {
                        what: "download",
                        limit: policy.max_download_bytes,
                    });
                }
            }
            let mut buf = CappedBuf::new(policy.max_download_bytes, "download");
            let mut body = resp.stream().map_err(dl)?;
            while let Some(chunk) = body.next().await {
                buf.push(&chunk.map_err(dl)?)?;
            }
            let bytes = buf.into_inner();
            let mut out = Unpacker::new(policy.max_db_bytes);
            if update::is_gzip(&bytes) {
                gunzip(&bytes, &mut out).await?;
            } else {
                out.push(&bytes)?;
            }
            return Ok(Fetched::Body(out.finish()?, origin));
        }
        Err(UpdateError::Download("no candidate URL".into()))
    });
    let timer = Box::pin(Delay::from(Duration::from_millis(u64::from(timeout_ms))));
    match select(work, timer).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => {
            controller.abort();
            Err(UpdateError::TimedOut(timeout_ms))
        }
    }
}

/// Decompresses with the runtime's `DecompressionStream` (no inflate code in the wasm),
/// feeding the output chunk by chunk to `out`, so a gzip bomb stops at the cap and a tar
/// archive is never held whole.
async fn gunzip(bytes: &[u8], out: &mut Unpacker) -> Result<(), UpdateError> {
    let js = |e: wasm_bindgen::JsValue| UpdateError::Gzip(format!("{e:?}"));
    let global = js_sys::global();
    let ctor = js_sys::Reflect::get(&global, &"DecompressionStream".into()).map_err(js)?;
    let inflate = js_sys::Reflect::construct(
        ctor.unchecked_ref::<js_sys::Function>(),
        &js_sys::Array::of1(&"gzip".into()),
    )
    .map_err(js)?;
    let input = worker::web_sys::Response::new_with_opt_buffer_source(Some(
        &js_sys::Uint8Array::from(bytes),
    ))
    .map_err(js)?
    .body()
    .ok_or_else(|| UpdateError::Gzip("no input stream".into()))?;
    let pipe_through: js_sys::Function = js_sys::Reflect::get(&input, &"pipeThrough".into())
        .map_err(js)?
        .unchecked_into();
    let output: worker::web_sys::ReadableStream = pipe_through
        .call1(&input, &inflate)
        .map_err(js)?
        .unchecked_into();
    let mut stream = worker::ByteStream::from(output);
    while let Some(chunk) = stream.next().await {
        out.push(&chunk.map_err(|e| UpdateError::Gzip(e.to_string()))?)?;
    }
    Ok(())
}
