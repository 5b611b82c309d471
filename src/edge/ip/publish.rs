//! The IPDB cron job's bindings: `egn_core::ip::publish` decides (promote or download, the
//! candidates, the caps, the deadline, objects before the record, retention, the status) and
//! `egn_http::ipdb` runs it (the probe, the status kept, the log); this file implements its
//! ports over KV, R2, `fetch` with an `AbortController`, the runtime's `DecompressionStream`
//! and `Delay`.

use super::{ipdb, IPDB_BUCKET, IPDB_CONFIG};
use crate::edge::log_at;
use egn_core::config::Config;
use egn_core::ip::publish::{self, Listing, Response};
use egn_http::ipdb::{PublishError, Publisher};
use futures_util::StreamExt;
use std::cell::RefCell;
use std::time::Duration;
use wasm_bindgen::JsCast;
use worker::kv::{KvError, KvStore};
use worker::{AbortController, ByteStream, Delay, Env, Fetch, Headers, Request, RequestInit};

/// Production's read of staging's KV namespace (optional: else `IPDB_CONFIG`).
const STAGING_CONFIG: &str = "IPDB_STAGING_CONFIG";
/// Production's read of staging's bucket (optional: else `IPDB_BUCKET`).
const STAGING_BUCKET: &str = "IPDB_STAGING_BUCKET";

/// Cron job (`cron` is the expression that fired it): `egn_http::ipdb`'s publish run over the
/// bindings.
///
/// # Errors
/// [`PublishError`] when the KV binding is missing, or the candidate was refused or not stored.
pub async fn publish_from_source(
    env: &Env,
    cfg: &Config,
    cron: &str,
) -> Result<String, PublishError<worker::Error>> {
    let ports = Publisher {
        kv: env.kv(IPDB_CONFIG).map(Kv),
        staging_kv: env.kv(STAGING_CONFIG).ok().map(Kv),
        bucket: R2(env.bucket(IPDB_BUCKET)),
        staging_bucket: env.bucket(STAGING_BUCKET).ok().map(Ok).map(R2),
        fetch: SourceFetch::default(),
        gunzip: RuntimeGunzip,
        timer: WorkerTimer,
    };
    ipdb(env, &cfg.ipdb)
        .publish(&log_at, &cfg.ipdb, cron, ports)
        .await
}

/// Why a KV or R2 operation failed.
#[derive(Debug, thiserror::Error)]
pub enum BindingError {
    /// KV.
    #[error("{0}")]
    Kv(#[from] KvError),
    /// R2, or its binding.
    #[error("{0}")]
    R2(#[from] worker::Error),
}

struct Kv(KvStore);

impl publish::Kv for Kv {
    type Error = BindingError;

    async fn get_text(&self, key: &str) -> Result<Option<String>, BindingError> {
        Ok(self.0.get(key).text().await?)
    }

    async fn put_text(&self, key: &str, text: String) -> Result<(), BindingError> {
        Ok(self.0.put(key, text)?.execute().await?)
    }
}

/// The bucket, or why its binding is missing (reported by the first operation that needs it).
struct R2(worker::Result<worker::Bucket>);

impl R2 {
    fn bucket(&self) -> Result<&worker::Bucket, BindingError> {
        self.0
            .as_ref()
            .map_err(|e| BindingError::R2(worker::Error::RustError(format!("R2 binding: {e}"))))
    }
}

impl publish::Bucket for R2 {
    type Error = BindingError;

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, BindingError> {
        let Some(o) = self.bucket()?.get(key).execute().await? else {
            return Ok(None);
        };
        match o.body() {
            Some(body) => Ok(Some(body.bytes().await?)),
            None => Ok(None),
        }
    }

    async fn put(&self, key: &str, bytes: Vec<u8>) -> Result<(), BindingError> {
        self.bucket()?.put(key, bytes).execute().await?;
        Ok(())
    }

    async fn list(&self, prefix: &str, cursor: Option<String>) -> Result<Listing, BindingError> {
        let mut list = self.bucket()?.list().prefix(prefix);
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        let page = list.execute().await?;
        Ok(Listing {
            objects: (page.objects().iter())
                .map(|o| (o.key(), o.uploaded().as_millis()))
                .collect(),
            cursor: page.cursor().filter(|_| page.truncated()),
        })
    }

    async fn delete(&self, keys: Vec<String>) -> Result<(), BindingError> {
        Ok(self.bucket()?.delete_multiple(keys).await?)
    }
}

/// A response's body, if it has one.
type SourceBody =
    futures_util::stream::Flatten<futures_util::stream::Iter<std::option::IntoIter<ByteStream>>>;

/// `fetch` with one abort signal for the whole run (the core aborts it at the deadline).
struct SourceFetch {
    controller: RefCell<Option<AbortController>>,
    signal: worker::AbortSignal,
}

impl Default for SourceFetch {
    fn default() -> Self {
        let controller = AbortController::default();
        SourceFetch {
            signal: controller.signal(),
            controller: RefCell::new(Some(controller)),
        }
    }
}

impl publish::Fetch for SourceFetch {
    type Error = worker::Error;
    type Body = SourceBody;

    async fn get(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
    ) -> worker::Result<Response<SourceBody>> {
        let h = Headers::new();
        for (name, value) in headers {
            h.set(name, value)?;
        }
        let mut init = RequestInit::new();
        init.with_method(worker::Method::Get).with_headers(h);
        let request = Request::new_with_init(url, &init)?;
        let mut resp = Fetch::Request(request)
            .send_with_signal(&self.signal)
            .await?;
        // A 304 (or a 404) has no body: an empty stream, read only after a 200.
        let body = resp.stream().ok();
        Ok(Response {
            status: resp.status_code(),
            headers: resp.headers().entries().collect(),
            body: futures_util::stream::iter(body).flatten(),
        })
    }

    fn abort(&self) {
        if let Some(c) = self.controller.borrow_mut().take() {
            c.abort();
        }
    }
}

/// Why the runtime's decompression failed (the texts are the status's `gzip: …` reason).
#[derive(Debug, thiserror::Error)]
pub enum GunzipError {
    /// Setting up the stream failed (the JS exception, as its debug text).
    #[error("{0}")]
    Js(String),
    /// The stream failed (corrupt or truncated gzip).
    #[error("{0}")]
    Stream(#[from] worker::Error),
}

/// The runtime's `DecompressionStream` (no inflate code in the wasm).
struct RuntimeGunzip;

/// A `ByteStream` whose errors are [`GunzipError`]s.
type Inflated = futures_util::stream::MapErr<ByteStream, fn(worker::Error) -> GunzipError>;

impl publish::Gunzip for RuntimeGunzip {
    type Error = GunzipError;
    type Output = Inflated;

    fn gunzip(&self, gz: Vec<u8>) -> Result<Inflated, GunzipError> {
        use futures_util::TryStreamExt;
        let js = |e: wasm_bindgen::JsValue| GunzipError::Js(format!("{e:?}"));
        let global = js_sys::global();
        let ctor = js_sys::Reflect::get(&global, &"DecompressionStream".into()).map_err(js)?;
        let inflate = js_sys::Reflect::construct(
            ctor.unchecked_ref::<js_sys::Function>(),
            &js_sys::Array::of1(&"gzip".into()),
        )
        .map_err(js)?;
        let input = worker::web_sys::Response::new_with_opt_buffer_source(Some(
            &js_sys::Uint8Array::from(gz.as_slice()),
        ))
        .map_err(js)?
        .body()
        .ok_or_else(|| GunzipError::Js("no input stream".into()))?;
        let pipe_through: js_sys::Function = js_sys::Reflect::get(&input, &"pipeThrough".into())
            .map_err(js)?
            .unchecked_into();
        let output: worker::web_sys::ReadableStream = pipe_through
            .call1(&input, &inflate)
            .map_err(js)?
            .unchecked_into();
        let stream = ByteStream::from(output);
        Ok(stream.map_err(GunzipError::Stream as fn(worker::Error) -> GunzipError))
    }
}

/// The deadline's timer.
struct WorkerTimer;

impl publish::Timer for WorkerTimer {
    async fn sleep(&self, ms: u32) {
        Delay::from(Duration::from_millis(u64::from(ms))).await;
    }
}
