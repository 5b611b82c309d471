//! The ports of `egn_http::dispatch` over the worker's bindings: the request, the clock,
//! `waitUntil` and the console, the backends, the badge hubs, the assets, the geo layers, the IP
//! database, the environment and the rate limiters; and the cron's (`egn_http::cron`).

use super::http_client::WorkerHttp;
use super::{assets, geo, hub, ip, log_at, queue, state, Edge};
use egn_core::config::Config;
use egn_core::geo::Layers;
use egn_core::ip::serving::Served;
use egn_core::ip::IpdbSettings;
use egn_http::assets::{AssetError, Assets};
use egn_http::cron::CronPorts;
use egn_http::dispatch::{
    Backends, Background, Badges, Environment, GeoData, Incoming, IpData, Level, Lines, Now, Ports,
};
use egn_http::health::IpdbReport;
use egn_http::pipeline::{Limiter, RateLimiters, RequestBody, RequestHeaders};
use egn_http::ApiError;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;
use worker::{Date, Env, Request, Response};

/// The request, for the pipeline and the handlers.
pub struct Req(pub Request);

impl RequestHeaders for Req {
    fn header(&self, name: &str) -> Option<String> {
        self.0.headers().get(name).ok().flatten()
    }
}

impl RequestBody for Req {
    type Error = worker::Error;
    async fn bytes(&mut self) -> worker::Result<Vec<u8>> {
        self.0.bytes().await
    }
}

impl Incoming for Req {
    fn cf_country(&self) -> Option<String> {
        self.0.cf().and_then(|cf| cf.country())
    }

    /// Read from the raw `cf` object: worker's `Cf::timezone_name` panics when the field is
    /// absent (local runs, some test clients).
    fn cf_timezone(&self) -> Option<String> {
        let cf = js_sys::Reflect::get(self.0.inner(), &"cf".into()).ok()?;
        js_sys::Reflect::get(&cf, &"timezone".into())
            .ok()?
            .as_string()
    }
}

impl Now for Edge<'_> {
    fn now_ms(&self) -> f64 {
        Date::now().as_millis() as f64
    }
}

impl Background for Edge<'_> {
    fn after(&self, work: Pin<Box<dyn Future<Output = Lines>>>) {
        self.ctx.wait_until(async move {
            for (level, line) in work.await {
                log_at(level, &line);
            }
        });
    }

    fn log(&self, level: Level, line: &str) {
        log_at(level, line);
    }
}

impl Backends for Edge<'_> {
    type Http = WorkerHttp;
    type Queue = queue::WorkerQueue;
    fn http(&self) -> WorkerHttp {
        WorkerHttp
    }
    fn queue(&self) -> Option<queue::WorkerQueue> {
        queue::binding(self.env)
    }
}

impl<'a> Badges for Edge<'a> {
    type Hubs = hub::Hubs<'a>;
    type Socket = Response;
    type Error = worker::Error;
    fn hubs(&self) -> hub::Hubs<'a> {
        hub::Hubs(self.env)
    }
    fn poke(&self, owners: Vec<String>) {
        hub::poke(self.env, self.ctx, owners);
    }
    async fn connect(
        &self,
        owner: &str,
        protocols: &str,
        deadline_ms: Option<f64>,
    ) -> Option<worker::Result<Response>> {
        hub::connect(self.env, owner, protocols, deadline_ms).await
    }
}

impl Assets for Edge<'_> {
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, AssetError> {
        assets::read(self.env, path).await
    }
}

impl GeoData for Edge<'_> {
    type Index = &'static [u8];
    fn layers(&self) -> Rc<Layers<&'static [u8]>> {
        geo::layers()
    }
}

impl IpData for Edge<'_> {
    async fn served(&self, cfg: &IpdbSettings, ips: &[IpAddr]) -> Result<Rc<Served>, ApiError> {
        ip::ip_state(self, cfg, ips).await
    }
    fn report(&self, stale_after_days: u32) -> IpdbReport {
        ip::health(stale_after_days)
    }
    #[cfg(feature = "bench")]
    async fn served_all(&self, cfg: &IpdbSettings, s: Rc<Served>) -> Result<Rc<Served>, ApiError> {
        ip::served_all(self.env, cfg, s).await
    }
}

impl Environment for Edge<'_> {
    fn var(&self, name: &str) -> Option<String> {
        state::lookup(self.env, name)
    }
}

/// The `[[ratelimits]]` bindings (wrangler.toml). Absent binding = not limited.
impl RateLimiters for Edge<'_> {
    async fn allows(&self, limiter: Limiter, key: &str) -> Option<bool> {
        let binding = match limiter {
            Limiter::Geo => "GEO_RATE_LIMITER",
            Limiter::User => "USER_RATE_LIMITER",
        };
        let limiter = self.env.rate_limiter(binding).ok()?;
        limiter.limit(key.to_owned()).await.ok().map(|o| o.success)
    }
}

impl Ports for Edge<'_> {
    /// `src/openapi.json`, rendered natively from `egn_http::openapi::document()` and kept in
    /// step by `tests/docs.rs` (`UPDATE_DOCS=1 cargo test --test docs` rewrites it). A committed
    /// file, not a build script: the build script compiled egn-core and egn-http a second time
    /// (for the host) in every build of the worker, native and wasm.
    fn document(&self) -> &'static str {
        include_str!("../openapi.json")
    }
}

/// The cron's bindings (it has no request and no `waitUntil`).
pub struct Cron<'a>(pub &'a Env);

impl CronPorts for Cron<'_> {
    type Http = WorkerHttp;
    type Error = egn_http::ipdb::PublishError<worker::Error>;
    fn http(&self) -> WorkerHttp {
        WorkerHttp
    }
    fn now_ms(&self) -> i64 {
        Date::now().as_millis() as i64
    }
    async fn publish_ipdb(&self, cfg: &Config, cron: &str) -> Result<String, Self::Error> {
        ip::publish_from_source(self.0, cfg, cron).await
    }
    async fn poke(&self, owners: Vec<String>) {
        hub::poke_now(self.0, owners).await;
    }
}
