//! The notification core over the configured backends, for every caller that needs one (the
//! routes, the queue consumer, the badge hub, `/healthz`'s probe): a missing Data API is the
//! one `not_configured` answer, named here once.

use crate::ApiError;
use egn_core::backend::{DataApiClient, HttpClient, RedisRestClient};
use egn_core::config::Config;
use egn_core::notify::{NotificationStore, NotifyService};

/// The store over the configured Data API.
///
/// # Errors
/// 503 `not_configured` without `DATA_API_URL` and `DATA_API_KEY`.
pub fn store<H: HttpClient>(http: H, cfg: &Config) -> Result<NotificationStore<H>, ApiError> {
    let api = cfg
        .data_api
        .clone()
        .ok_or_else(|| ApiError::not_configured("the Data API (DATA_API_URL, DATA_API_KEY)"))?;
    Ok(NotificationStore::new(
        DataApiClient::new(http, api),
        cfg.notify.clone(),
    ))
}

/// The service over the configured backends (Redis optional).
///
/// # Errors
/// As [`store`].
pub fn service<H: HttpClient + Clone>(http: H, cfg: &Config) -> Result<NotifyService<H>, ApiError> {
    let redis = cfg
        .redis
        .clone()
        .map(|r| RedisRestClient::new(http.clone(), r));
    Ok(NotifyService::new(
        store(http, cfg)?,
        redis,
        cfg.dedup.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use egn_core::backend::{HttpRequest, HttpResponse, TransportError};
    use egn_core::config::{Config, Vars};

    #[derive(Clone)]
    struct Never;

    impl egn_core::backend::HttpClient for Never {
        async fn send(&self, _: HttpRequest) -> Result<HttpResponse, TransportError> {
            unreachable!("nothing is sent while building")
        }
    }

    #[test]
    fn without_a_data_api_the_notification_routes_are_not_configured() {
        let get = |n: &str| (n == "ENVIRONMENT").then(|| "development".to_owned());
        let cfg = Config::from_vars(&Vars::new(&get)).unwrap();
        let e = super::service(Never, &cfg).err().unwrap();
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            (
                "not_configured",
                "the Data API (DATA_API_URL, DATA_API_KEY) is not configured"
            )
        );
        let get = |n: &str| match n {
            "ENVIRONMENT" => Some("development".to_owned()),
            "DATA_API_URL" => Some("http://127.0.0.1:1".to_owned()),
            "DATA_API_KEY" => Some("k".to_owned()),
            _ => None,
        };
        let cfg = Config::from_vars(&Vars::new(&get)).unwrap();
        assert!(super::store(Never, &cfg).is_ok());
    }
}
