//! The one place the adapter builds the notification core from the parsed configuration: the
//! routes, the queue consumer and the badge hub all take their store and service from here, so
//! none of them depends on another to get one.

use super::http_client::WorkerHttp;
use super::{not_configured, ApiResult};
use crate::backend::{DataApiClient, RedisRestClient};
use crate::config::Config;
use crate::notify::{NotificationStore, NotifyService};

/// The store over the configured Data API.
pub(super) fn store(cfg: &Config) -> ApiResult<NotificationStore<WorkerHttp>> {
    let api = cfg
        .data_api
        .clone()
        .ok_or_else(|| not_configured("the Data API (DATA_API_URL, DATA_API_KEY)"))?;
    Ok(NotificationStore::new(
        DataApiClient::new(WorkerHttp, api),
        cfg.notify.clone(),
    ))
}

/// The service over the configured backends (also used by the queue consumer).
pub(super) fn service(cfg: &Config) -> ApiResult<NotifyService<WorkerHttp>> {
    let redis = cfg
        .redis
        .clone()
        .map(|r| RedisRestClient::new(WorkerHttp, r));
    Ok(NotifyService::new(store(cfg)?, redis, cfg.dedup.clone()))
}
