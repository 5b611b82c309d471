//! The IPDB cron job: download the configured database, vet it against the serving one (the
//! decisions are in `crate::ip::update`), store it in R2 and point the KV record at it. This is
//! the source side of hot swap; isolates only follow the record (`crate::ip::serving`).

use super::{cold_start, ipdb, now_iso, ready_all, store, IPDB_BUCKET, IPDB_CONFIG};
use crate::api::ApiError;
use crate::config::Config;
use crate::ip::update::{self, CappedBuf, Plan, UpdateError, UpdatePolicy, UpdateStatus};
use crate::ip::IpdbRecord;
use futures_util::future::{select, Either};
use futures_util::StreamExt;
use std::time::Duration;
use wasm_bindgen::JsCast;
use worker::{AbortController, Delay, Env, Fetch, Request};

/// Why the cron's run did not end in `published` or `unchanged`. The texts are the cron's log.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The KV or R2 binding is missing (`KV`, `R2`).
    #[error("{0} binding: {1}")]
    Binding(&'static str, worker::Error),
    /// The serving database (the candidate is vetted against it) could not be loaded.
    #[error(transparent)]
    Serving(ApiError),
    /// The candidate was refused or could not be fetched or stored.
    #[error(transparent)]
    Update(#[from] UpdateError),
    /// The record or the status did not serialise.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Why storing a vetted candidate failed (it is then reported as a failed update).
#[derive(Debug, thiserror::Error)]
enum StoreError {
    #[error("R2 binding: {0}")]
    Binding(worker::Error),
    /// An object or the record could not be written (`R2 write …`, `KV write`).
    #[error("{0}: {1}")]
    Write(String, worker::Error),
    #[error("KV write: {0}")]
    Kv(worker::KvError),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Cron job: download the configured IPDB (`.mmdb`, or `.mmdb.gz` decompressed here), vet it
/// against the serving database, store it in R2 and point the KV record at it. Readers pick it
/// up on their next check; nothing is redeployed. The outcome (refusals included) is kept in
/// KV for every isolate's `/healthz`.
///
/// # Errors
/// [`PublishError`] when a binding is missing, the serving database cannot be loaded, or the
/// candidate was refused or not stored.
pub async fn publish_from_source(env: &Env, cfg: &Config) -> Result<String, PublishError> {
    let settings = &cfg.ipdb;
    let Some(url) = &settings.source_url else {
        return Ok("IPDB_SOURCE_URL not set; nothing to publish".into());
    };
    let kv = env
        .kv(IPDB_CONFIG)
        .map_err(|e| PublishError::Binding("KV", e))?;
    let serving = cold_start(&ipdb(), &store(env, settings), &[])
        .await
        .map_err(PublishError::Serving)?;
    let serving = ready_all(env, settings, serving)
        .await
        .map_err(PublishError::Serving)?;
    let current = match kv.get(&settings.kv_key).text().await {
        Ok(Some(text)) => IpdbRecord::parse(&text).ok(),
        _ => None,
    };
    let policy = settings.update_policy();
    let result = match download(url, &policy, settings.download_timeout_ms).await {
        // The npm builds name no source in their metadata; then the bundled credit carries over.
        Ok(bytes) => update::vet(
            bytes,
            serving.db(),
            current.as_ref(),
            &policy,
            now_iso(),
            serving.attribution().cloned(),
        ),
        Err(e) => Err(e),
    };
    let written = match &result {
        Ok(Plan::Publish(v)) => publish(env, &kv, &settings.kv_key, v).await,
        _ => Ok(()),
    };
    let result = match written {
        Ok(()) => result,
        Err(e) => Err(UpdateError::Download(format!("storing the candidate: {e}"))),
    };
    let status = UpdateStatus::of(&result, now_iso());
    ipdb().set_last_update(status.clone());
    let text = serde_json::to_string(&status)?;
    if let Ok(put) = kv.put(&update::status_key(&settings.kv_key), text) {
        if let Err(e) = put.execute().await {
            worker::console_error!("ipdb update status not stored: {e}");
        }
    }
    match result? {
        Plan::Publish(v) => Ok(format!("published {}", v.record.version)),
        Plan::Unchanged(v) => Ok(format!("unchanged ({v})")),
    }
}

async fn publish(
    env: &Env,
    kv: &worker::kv::KvStore,
    key: &str,
    v: &update::Vetted,
) -> Result<(), StoreError> {
    let bucket = env.bucket(IPDB_BUCKET).map_err(StoreError::Binding)?;
    bucket
        .put(&v.record.object_key, v.bytes.clone())
        .execute()
        .await
        .map_err(|e| StoreError::Write("R2 write".into(), e))?;
    let r = &v.record;
    let table = (0..v.table.pages.len()).map(|i| (r.table_page_key(i), &v.table.pages[i]));
    for (key, bytes) in std::iter::once((r.table_dir_key(), &v.table.dir)).chain(table) {
        let Some(key) = key else { continue };
        bucket
            .put(&key, bytes.clone())
            .execute()
            .await
            .map_err(|e| StoreError::Write(format!("R2 write {key}"), e))?;
    }
    let text = serde_json::to_string(&v.record)?;
    // The objects are written before the record, so a reader never sees a record without them.
    kv.put(key, text)
        .map_err(StoreError::Kv)?
        .execute()
        .await
        .map_err(StoreError::Kv)
}

/// Downloads `url` within `timeout_ms`, refusing more than the policy's compressed and
/// decompressed caps as soon as a stream passes them; gzip is sniffed from the bytes.
async fn download(
    url: &str,
    policy: &UpdatePolicy,
    timeout_ms: u32,
) -> Result<Vec<u8>, UpdateError> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let work = Box::pin(async move {
        let dl = |e: worker::Error| UpdateError::Download(e.to_string());
        let request = Request::new(url, worker::Method::Get).map_err(dl)?;
        let mut resp = Fetch::Request(request)
            .send_with_signal(&signal)
            .await
            .map_err(dl)?;
        if resp.status_code() != 200 {
            return Err(UpdateError::Download(format!(
                "answered {}",
                resp.status_code()
            )));
        }
        let mut buf = CappedBuf::new(policy.max_download_bytes, "download");
        let declared = resp.headers().get("content-length").ok().flatten();
        if let Some(n) = declared.and_then(|n| n.parse::<u64>().ok()) {
            if n > policy.max_download_bytes {
                return Err(UpdateError::TooLarge {
                    what: "download",
                    limit: policy.max_download_bytes,
                });
            }
        }
        let mut body = resp.stream().map_err(dl)?;
        while let Some(chunk) = body.next().await {
            buf.push(&chunk.map_err(dl)?)?;
        }
        let bytes = buf.into_inner();
        if !update::is_gzip(&bytes) {
            return Ok(bytes);
        }
        gunzip(&bytes, policy.max_db_bytes).await
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
/// reading the output stream chunk by chunk so a gzip bomb stops at the cap.
async fn gunzip(bytes: &[u8], limit: u64) -> Result<Vec<u8>, UpdateError> {
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
    let mut buf = CappedBuf::new(limit, "decompressed database");
    while let Some(chunk) = stream.next().await {
        buf.push(&chunk.map_err(|e| UpdateError::Gzip(e.to_string()))?)?;
    }
    Ok(buf.into_inner())
}
