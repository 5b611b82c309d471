//! The notification core over the worker's `fetch` (`egn_http::backends` builds it from the
//! configuration): the routes, the queue consumer and the badge hub all take their store and
//! service from here, so none of them depends on another to get one.

use super::http_client::WorkerHttp;
use super::ApiResult;
use egn_core::config::Config;
use egn_core::notify::{NotificationStore, NotifyService};
use egn_http::backends;

/// The store over the configured Data API.
pub(super) fn store(cfg: &Config) -> ApiResult<NotificationStore<WorkerHttp>> {
    backends::store(WorkerHttp, cfg)
}

/// The service over the configured backends (also used by the queue consumer).
pub(super) fn service(cfg: &Config) -> ApiResult<NotifyService<WorkerHttp>> {
    backends::service(WorkerHttp, cfg)
}
