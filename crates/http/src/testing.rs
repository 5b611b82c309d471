//! In-memory ports for the native tests: a scripted Data API (unreachable once its answers run
//! out), assets in a map, hubs that record their pokes and connects, a hand-set clock, a token
//! table, and a configuration from a few variables.

use crate::assets::Assets;
use crate::dispatch::{
    Backends, Background, Badges, Environment, GeoData, IpData, Level, Lines, Now, Ports,
};
use crate::health::{GeoHealth, GeoStatus, IpdbReport};
use crate::pipeline::{Limiter, RateLimiters, UserTokens};
use crate::ApiError;
use egn_core::auth::AuthError;
use egn_core::backend::{HttpClient, HttpRequest, HttpResponse, TransportError};
use egn_core::config::{Config, ConfigError, Vars};
use egn_core::geo::Layers;
use egn_core::ip::serving::{Served, Serving};
use egn_core::ip::IpdbSettings;
use egn_core::notify::batch::{EventQueue, QueueError};
use egn_core::notify::erasure::NoHubs;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::rc::Rc;

/// The Data API: each request takes the next scripted answer and is counted.
#[derive(Clone, Default)]
pub(crate) struct Script(
    pub(crate) Rc<RefCell<Vec<Result<HttpResponse, TransportError>>>>,
    pub(crate) Rc<Cell<usize>>,
);

impl HttpClient for Script {
    async fn send(&self, _req: HttpRequest) -> Result<HttpResponse, TransportError> {
        self.1.set(self.1.get() + 1);
        let mut answers = self.0.borrow_mut();
        if answers.is_empty() {
            // Nothing scripted: the backend cannot be reached.
            return Err(TransportError {
                timed_out: false,
                message: "unreachable".into(),
            });
        }
        answers.remove(0)
    }
}

pub(crate) fn data_api(status: u16, body: &str) -> Result<HttpResponse, TransportError> {
    Ok(HttpResponse {
        status,
        body: body.as_bytes().to_vec(),
        headers: Vec::new(),
    })
}

/// No queue is ever bound here.
pub(crate) enum NoQueue {}

impl EventQueue for NoQueue {
    async fn send_batch(&self, _: &[String], _: u32) -> Result<(), QueueError> {
        match *self {}
    }
}

#[derive(Default)]
pub(crate) struct Mem {
    pub(crate) http: Script,
    pub(crate) assets: RefCell<BTreeMap<String, Vec<u8>>>,
    pub(crate) asset_reads: Cell<usize>,
    /// The assets binding fails (status 500) while set.
    pub(crate) assets_down: Cell<bool>,
    pub(crate) hubs: bool,
    pub(crate) connected: RefCell<Vec<(String, String, Option<f64>)>>,
    pub(crate) poked: RefCell<Vec<String>>,
    pub(crate) after: Cell<usize>,
    pub(crate) served: Cell<usize>,
    pub(crate) geo_ok: bool,
    /// The lines logged.
    pub(crate) lines: RefCell<Vec<String>>,
}

impl Now for Mem {
    fn now_ms(&self) -> f64 {
        1_700_000_000_000.0
    }
}

impl Background for Mem {
    fn after(&self, _work: Pin<Box<dyn Future<Output = Lines>>>) {
        self.after.set(self.after.get() + 1);
    }
    fn log(&self, _level: Level, line: &str) {
        self.lines.borrow_mut().push(line.to_owned());
    }
}

impl Backends for Mem {
    type Http = Script;
    type Queue = NoQueue;
    fn http(&self) -> Script {
        self.http.clone()
    }
    fn queue(&self) -> Option<NoQueue> {
        None
    }
}

impl Badges for Mem {
    type Hubs = NoHubs;
    type Socket = String;
    type Error = std::fmt::Error;
    fn hubs(&self) -> NoHubs {
        NoHubs
    }
    fn poke(&self, owners: Vec<String>) {
        self.poked.borrow_mut().extend(owners);
    }
    async fn connect(
        &self,
        owner: &str,
        protocols: &str,
        deadline_ms: Option<f64>,
    ) -> Option<Result<String, std::fmt::Error>> {
        let call = (owner.to_owned(), protocols.to_owned(), deadline_ms);
        self.connected.borrow_mut().push(call);
        self.hubs.then(|| Ok(format!("socket of {owner}")))
    }
}

impl Assets for Mem {
    async fn read(&self, path: &str) -> Result<Option<Vec<u8>>, crate::assets::AssetError> {
        self.asset_reads.set(self.asset_reads.get() + 1);
        if self.assets_down.get() {
            let path = path.to_owned();
            return Err(crate::assets::AssetError::Status { path, status: 500 });
        }
        Ok(self.assets.borrow().get(path).cloned())
    }
}

pub(crate) fn zero() -> u64 {
    0
}

impl GeoData for Mem {
    type Index = &'static [u8];
    fn layers(&self) -> Rc<Layers<&'static [u8]>> {
        Rc::new(Layers::new(b"not an index", b"", zero))
    }
    fn geo_health(&self) -> GeoHealth {
        if !self.geo_ok {
            return GeoHealth::of(&self.layers());
        }
        GeoHealth {
            status: GeoStatus::Ok,
            error: None,
            index: None,
        }
    }
}

impl IpData for Mem {
    async fn served(&self, _: &IpdbSettings, _: &[IpAddr]) -> Result<Rc<Served>, ApiError> {
        self.served.set(self.served.get() + 1);
        Err(ApiError::asset_unavailable("no database in this test"))
    }
    fn report(&self, stale_after_days: u32) -> IpdbReport {
        let s = Serving::new();
        IpdbReport {
            serving: s.health(),
            freshness: s.freshness(0, stale_after_days),
        }
    }
    #[cfg(feature = "bench")]
    async fn served_all(&self, _: &IpdbSettings, s: Rc<Served>) -> Result<Rc<Served>, ApiError> {
        Ok(s)
    }
}

impl Environment for Mem {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }
}

impl RateLimiters for Mem {
    async fn allows(&self, _: Limiter, _: &str) -> Option<bool> {
        None
    }
}

impl Ports for Mem {
    fn document(&self) -> &'static str {
        "{\"openapi\":\"3.1.0\"}"
    }
}

/// Tokens `good-<sub>` verify as `<sub>`.
pub(crate) struct Tokens;

impl UserTokens for Tokens {
    async fn verify(&self, token: &str, _now_ms: f64) -> Result<String, AuthError> {
        token
            .strip_prefix("good-")
            .map(str::to_owned)
            .ok_or(AuthError::BadSignature)
    }
    fn jwks_fetches(&self) -> u64 {
        7
    }
}

pub(crate) fn config(extra: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let mut vars: BTreeMap<&str, &str> = BTreeMap::from([
        ("ENVIRONMENT", "development"),
        ("DATA_API_URL", "http://127.0.0.1:1"),
        ("DATA_API_KEY", "k"),
    ]);
    vars.extend(extra.iter().copied());
    let get = |n: &str| vars.get(n).map(|v| (*v).to_owned());
    Config::from_vars(&Vars::new(&get))
}
