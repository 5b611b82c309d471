//! [`IpdbStore`] over the worker's bindings: the version record and the update status in KV,
//! published objects in R2, the bundled pages through `ASSETS`.

use super::{IPDB_BUCKET, IPDB_CONFIG};
use crate::edge::assets::Files;
use egn_core::ip::serving::{Clock, IpdbStore};
use egn_core::ip::update;
use egn_http::ipdb::BUNDLED_PAGES;
use egn_http::ApiError;
use worker::{Date, Env};

/// Why a binding could not be read. The texts are what `/healthz` and the log show.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The binding is missing or of the wrong type (`KV`, `R2`).
    #[error("{0} binding: {1}")]
    Binding(&'static str, worker::Error),
    /// A KV read failed.
    #[error("KV read: {0}")]
    Kv(worker::KvError),
    /// An R2 read failed (`R2 read`, `R2 body`).
    #[error("{0}: {1}")]
    Io(&'static str, worker::Error),
    /// R2 answered an object without a body.
    #[error("object has no body")]
    NoBody,
    /// A bundled page could not be fetched: already the 503 it answers.
    #[error("{}", .0.message)]
    Asset(ApiError),
}

/// The bindings, and the record's KV key.
#[derive(Clone)]
pub struct EdgeStore {
    pub env: Env,
    pub kv_key: String,
}

impl EdgeStore {
    async fn kv_text(&self, key: &str) -> Result<Option<String>, StoreError> {
        let kv = self
            .env
            .kv(IPDB_CONFIG)
            .map_err(|e| StoreError::Binding("KV", e))?;
        kv.get(key).text().await.map_err(StoreError::Kv)
    }
}

impl IpdbStore for EdgeStore {
    type Error = StoreError;

    async fn record(&self) -> Result<Option<String>, StoreError> {
        self.kv_text(&self.kv_key).await
    }

    async fn update_status(&self) -> Result<Option<String>, StoreError> {
        self.kv_text(&update::status_key(&self.kv_key)).await
    }

    async fn object(&self, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let bucket = self
            .env
            .bucket(IPDB_BUCKET)
            .map_err(|e| StoreError::Binding("R2", e))?;
        let object = bucket.get(key).execute().await;
        let Some(o) = object.map_err(|e| StoreError::Io("R2 read", e))? else {
            return Ok(None);
        };
        let body = o.body().ok_or(StoreError::NoBody)?;
        body.bytes()
            .await
            .map(Some)
            .map_err(|e| StoreError::Io("R2 body", e))
    }

    async fn bundled_page(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        let path = format!("{BUNDLED_PAGES}/{name}");
        egn_http::assets::required(&Files(&self.env), &path)
            .await
            .map_err(StoreError::Asset)
    }
}

/// The runtime's clock (frozen while the isolate computes, as the platform does).
#[derive(Clone, Copy)]
pub struct WorkerClock;

impl Clock for WorkerClock {
    fn now_ms(&self) -> u64 {
        Date::now().as_millis()
    }
}
