//! `GET /healthz` as a type and its assembly: the adapter hands over each part's own report and
//! the environment by name ([`assemble`]), and the document's `Health` schema is generated from
//! it. 200 when it is `ok`, 503 with the same body when `degraded`.

use crate::ApiError;
use egn_core::backend::data_api::{probe_problem, ProbeProblem};
use egn_core::backend::HttpClient;
use egn_core::config::{Config, ConfigError};
use egn_core::geo::Layers;
use egn_core::ip::freshness::Freshness;
use egn_core::ip::serving::Health as IpdbHealth;
use egn_core::notify::NotificationStore;
use serde::Serialize;
use serde_json::Value;
use std::cell::Cell;

/// Overall state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    // Every part works.
    Ok,
    // A part does not: the answer is a 503.
    Degraded,
}

/// The health body.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Health {
    /// `ok`, or `degraded` (then the status is 503).
    pub status: HealthStatus,
    /// The worker's release (CHANGELOG.md); equals `info.version` of this document
    pub version: &'static str,
    /// The configuration's first problem, when it does not parse.
    pub config: Option<ConfigProblem>,
    /// The geo index.
    pub geo: GeoHealth,
    /// The IP database serving in this isolate, and how fresh it is.
    pub ipdb: IpdbReport,
    /// One probe `find` per isolate until it succeeds. `error` is `data_api_not_found` when DATA_API_URL answers 404 (the base URL must end just before `/action`), `data_api_unauthorized` when the key is refused, `data_api_unavailable` when it cannot be reached; the status is then `degraded`.
    pub data_api: Option<DataApiProbe>,
    /// Secrets, by name only.
    pub secrets: Secrets,
    /// The token verifier's key fetches (when one is configured).
    pub auth: Option<AuthHealth>,
    /// Where the bundled assets came from (their build manifest).
    pub assets: Assets,
}

/// The IP database serving in this isolate, and how fresh it is.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct IpdbReport {
    /// What serves.
    #[serde(flatten)]
    pub serving: IpdbHealth,
    /// How fresh the served database is: `stale` when built more than `stale_after_days` ago (IPDB_STALE_AFTER_DAYS)
    pub freshness: Freshness,
}

/// A configuration that does not parse: the variable and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ConfigProblem {
    /// What is wrong.
    pub error: String,
    /// The variable.
    pub var: String,
}

/// The geo index's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum GeoStatus {
    // It opened.
    Ok,
    // It did not: see `error`.
    Unavailable,
}

/// The geo index: its sizes when it opened, the error when it did not.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct GeoHealth {
    /// `ok` or `unavailable`.
    pub status: GeoStatus,
    /// Why it did not open (an Error's `error` object).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "Value"))]
    pub error: Option<Value>,
    /// Its sizes, when it opened.
    #[serde(flatten)]
    pub index: Option<GeoIndexHealth>,
}

/// An open geo index's sizes and loads.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct GeoIndexHealth {
    /// The index format.
    pub format_version: u32,
    /// Countries in the index.
    pub countries: usize,
    /// Bytes of the top-level index.
    pub index_bytes: usize,
    /// Where the index comes from (`embedded`).
    pub index_source: &'static str,
    /// Time to open (validate) the index in this isolate, ms.
    pub index_open_ms: f64,
    /// Tiles loaded so far.
    pub tiles_loaded: usize,
    /// Bytes of the tiles loaded so far.
    pub tile_bytes_loaded: usize,
}

impl GeoHealth {
    /// The country layer's state (opening its index on first use; the index is embedded in
    /// the worker, hence `index_source`).
    pub fn of<S: AsRef<[u8]> + Clone>(layers: &Layers<S>) -> Self {
        match layers.stats() {
            Ok(s) => GeoHealth {
                status: GeoStatus::Ok,
                error: None,
                index: Some(GeoIndexHealth {
                    format_version: egn_core::geo::format::FORMAT_VERSION,
                    countries: s.countries,
                    index_bytes: s.index_bytes,
                    index_source: "embedded",
                    index_open_ms: s.index_open_ms,
                    tiles_loaded: s.tiles_loaded,
                    tile_bytes_loaded: s.tile_bytes_loaded,
                }),
            },
            Err(r) => GeoHealth {
                status: GeoStatus::Unavailable,
                error: Some(ApiError::from(r).body()["error"].clone()),
                index: None,
            },
        }
    }
}

/// The state of the Data API probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProbeState {
    // It answered.
    Ok,
    // It did not: see `error`.
    Failed,
    // No DATA_API_URL.
    NotConfigured,
}

/// Why the Data API probe failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProbeError {
    // DATA_API_URL answers 404.
    DataApiNotFound,
    // The key is refused.
    DataApiUnauthorized,
    // It cannot be reached.
    DataApiUnavailable,
}

impl From<ProbeProblem> for ProbeError {
    fn from(p: ProbeProblem) -> Self {
        match p {
            ProbeProblem::NotFound => Self::DataApiNotFound,
            ProbeProblem::Unauthorized => Self::DataApiUnauthorized,
            ProbeProblem::Unavailable => Self::DataApiUnavailable,
        }
    }
}

/// One Data API probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct DataApiProbe {
    /// What it found.
    pub probe: ProbeState,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "ProbeError"))]
    pub error: Option<ProbeError>,
    /// The failure, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub message: Option<String>,
}

impl DataApiProbe {
    /// A probe that found `probe` and no problem.
    #[must_use]
    pub fn state(probe: ProbeState) -> Self {
        Self {
            probe,
            error: None,
            message: None,
        }
    }
}

/// A refused secret or setting, by name and reason, never by value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct RefusedSecret {
    /// The variable.
    pub var: String,
    /// Why.
    pub reason: String,
}

/// Secrets, by name only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Secrets {
    /// Secrets that are not set.
    pub missing: Vec<String>,
    /// Deployed workers (ENVIRONMENT is not `development`): every secret or setting refused because it is published in the repository, a placeholder, shorter than 32 bytes or under ~128 bits of estimated entropy. By name and reason, never by value; the worker answers 503 `config_invalid` until they are fixed.
    pub refused: Vec<RefusedSecret>,
}

/// The token verifier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct AuthHealth {
    /// JWKS fetches by this isolate.
    pub jwks_fetches: u64,
}

/// The bundled assets' sources, from their build manifest.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Assets {
    /// The geo data's source.
    pub geo_source: Value,
    /// The IP data's source.
    pub ip_source: Value,
    /// The asset format.
    pub format_version: Value,
}

/// What `/healthz` is assembled from: the configuration (or why it did not parse) and each
/// part's own report.
pub struct Parts<'a> {
    /// The parsed configuration, or its first problem.
    pub config: &'a Result<Config, ConfigError>,
    /// The geo index.
    pub geo: GeoHealth,
    /// The IP database.
    pub ipdb: IpdbReport,
    /// The Data API probe (`None` when the configuration did not parse).
    pub data_api: Option<DataApiProbe>,
    /// JWKS fetches of the verifier, when one is configured.
    pub jwks_fetches: Option<u64>,
    /// The asset manifest (`Null` when it could not be read).
    pub manifest: &'a Value,
}

/// How many days the served IP database stays fresh: `IPDB_STALE_AFTER_DAYS`, or its default
/// when the configuration did not parse.
#[must_use]
pub fn stale_after_days(config: &Result<Config, ConfigError>) -> u32 {
    config.as_ref().map_or(45, |c| c.ipdb.stale_after_days)
}

/// The health body and its status: `ok` (200) when the geo index opened, the configuration
/// parsed and the Data API probe did not fail, else `degraded` (503). `lookup` reads a secret
/// or variable by name (empty counting as unset); only names are reported, never values.
#[must_use]
pub fn assemble(parts: Parts<'_>, lookup: &dyn Fn(&str) -> Option<String>) -> (u16, Health) {
    let (config, declared) = match parts.config {
        Ok(c) => (None, c.declared_keys.as_slice()),
        Err(e) => (
            Some(ConfigProblem {
                error: e.to_string(),
                var: e.var.clone(),
            }),
            &[][..],
        ),
    };
    // Names only: a missing secret shows here instead of as a 503 on the first real request.
    let mut missing: Vec<String> = egn_core::config::missing_secrets(|n| lookup(n).is_some())
        .into_iter()
        .map(String::from)
        .collect();
    missing.extend(
        declared
            .iter()
            .filter(|d| lookup(&d.secret).is_none())
            .map(|d| d.secret.clone()),
    );
    // Refused secrets and placeholders (deployed workers only), all of them, by name only.
    let refused = egn_core::config::secrets::refused(lookup)
        .into_iter()
        .map(|r| RefusedSecret {
            var: r.var,
            reason: r.weakness.to_string(),
        })
        .collect();
    let ok = parts.geo.status == GeoStatus::Ok
        && parts.config.is_ok()
        && parts.data_api.as_ref().is_none_or(|p| p.error.is_none());
    let manifest = parts.manifest;
    let body = Health {
        status: if ok {
            HealthStatus::Ok
        } else {
            HealthStatus::Degraded
        },
        version: env!("CARGO_PKG_VERSION"),
        config,
        geo: parts.geo,
        ipdb: parts.ipdb,
        data_api: parts.data_api,
        secrets: Secrets { missing, refused },
        auth: parts
            .jwks_fetches
            .map(|jwks_fetches| AuthHealth { jwks_fetches }),
        assets: Assets {
            geo_source: manifest["geo"]["source"].clone(),
            ip_source: manifest["ip"]["source"].clone(),
            format_version: manifest["format_version"].clone(),
        },
    };
    (if ok { 200 } else { 503 }, body)
}

/// The Data API probe: one `find` (until one succeeds; `probed` remembers that for the
/// isolate), so a base URL that leads nowhere shows in `/healthz` as `data_api_not_found`
/// instead of as 404s on every call. `store` is `None` without a Data API.
pub async fn probe_data_api<H: HttpClient>(
    store: Option<&NotificationStore<H>>,
    probed: &Cell<bool>,
) -> DataApiProbe {
    let Some(store) = store else {
        return DataApiProbe::state(ProbeState::NotConfigured);
    };
    if probed.get() {
        return DataApiProbe::state(ProbeState::Ok);
    }
    match probe_problem(&store.probe().await) {
        None => {
            probed.set(true);
            DataApiProbe::state(ProbeState::Ok)
        }
        Some((problem, message)) => DataApiProbe {
            probe: ProbeState::Failed,
            error: Some(ProbeError::from(problem)),
            message: Some(message),
        },
    }
}

#[cfg(test)]
mod tests;
