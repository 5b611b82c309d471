//! Deployment configuration that the worker, the tests and the operating scripts share.
//!
//! [`SECRETS`] is the one list of secrets the worker reads. `secrets.example.json` (the format of
//! `wrangler secret bulk`) is checked against it by a test, and `/healthz` reports the names of
//! the ones a deployment lacks, so a forgotten secret shows before the first real request.

pub mod secrets;

/// A secret the worker reads: set per environment with `wrangler secret bulk`, never in
/// `wrangler.toml`; locally in `.dev.vars`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Secret {
    /// Binding name.
    pub name: &'static str,
    /// What it is for (shown in docs and in `secrets.example.json`).
    pub purpose: &'static str,
    /// Optional secrets are not reported missing (another setting can replace them).
    pub optional: bool,
}

/// Every secret the worker reads.
pub const SECRETS: &[Secret] = &[
    Secret {
        name: "DATA_API_URL",
        purpose: "Data API base URL, up to /action/…",
        optional: false,
    },
    Secret {
        name: "DATA_API_KEY",
        purpose: "Data API key (apiKey header, bearer token or Basic password)",
        optional: false,
    },
    Secret {
        name: "REDIS_REST_URL",
        purpose: "Upstash-style Redis REST endpoint",
        optional: false,
    },
    Secret {
        name: "REDIS_REST_TOKEN",
        purpose: "bearer token of the Redis REST endpoint",
        optional: false,
    },
    Secret {
        name: "SERVICE_TOKEN",
        purpose: "legacy service key with every scope (create, retract, admin)",
        optional: false,
    },
    Secret {
        name: "AUTH_HS256_SECRET",
        purpose: "HS256 secret of self-minted user tokens (with AUTH_ISSUER, AUTH_AUDIENCE)",
        optional: true,
    },
    Secret {
        name: "MAXMIND_ACCOUNT_ID",
        purpose: "MaxMind account id: the basic-auth user of the IPDB download with IPDB_SOURCE_AUTH=maxmind",
        optional: true,
    },
    Secret {
        name: "MAXMIND_LICENSE_KEY",
        purpose: "MaxMind licence key: the basic-auth password of that download (never in IPDB_SOURCE_URL)",
        optional: true,
    },
];

/// Names of the secrets for which `is_set` is false, in [`SECRETS`] order. Only names: the
/// values never leave the binding.
pub fn missing_secrets(is_set: impl Fn(&str) -> bool) -> Vec<&'static str> {
    SECRETS
        .iter()
        .filter(|s| !s.optional)
        .map(|s| s.name)
        .filter(|n| !is_set(n))
        .collect()
}

/// How a setting reaches the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A plain variable: `[vars]` (per environment: `[env.NAME.vars]`) in `wrangler.toml`.
    Var,
    /// A secret whose name has a part chosen by the operator (the fixed names are [`SECRETS`]).
    SecretPattern,
    /// A binding declared in `wrangler.toml`, of the kind named here.
    Binding(&'static str),
}

/// One row of the configuration reference (`docs/configuration.md` is generated from
/// [`VARIABLES`] and [`SECRETS`] by [`reference_markdown`], and `tests/docs.rs` checks the file,
/// the names [`Config::from_vars`] reads and the defaults against it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Name of the variable, secret or binding.
    pub name: &'static str,
    /// Variable, secret pattern or binding.
    pub kind: Kind,
    /// What the value is (for a variable: how it is parsed).
    pub ty: &'static str,
    /// The value used when it is unset or empty, exactly as it would be written; `None` when
    /// unset means "off" or another setting supplies it (said in `meaning`).
    pub default: Option<&'static str>,
    /// One line of meaning.
    pub meaning: &'static str,
}

const fn var(
    name: &'static str,
    ty: &'static str,
    default: Option<&'static str>,
    meaning: &'static str,
) -> Setting {
    Setting {
        name,
        kind: Kind::Var,
        ty,
        default,
        meaning,
    }
}

const fn binding(name: &'static str, kind: &'static str, meaning: &'static str) -> Setting {
    Setting {
        name,
        kind: Kind::Binding(kind),
        ty: "binding",
        default: None,
        meaning,
    }
}

/// Every variable and binding the worker reads, besides the fixed-name [`SECRETS`]: the one
/// table behind the configuration reference.
pub const VARIABLES: &[Setting] = &[
    // Where it runs.
    var("ENVIRONMENT", "text", None, "`development` marks local development (`.dev.vars`, `scripts/dev.sh`, the tests), where the published example secrets are accepted; anything else, or unset, is a deployment, which refuses public, placeholder and weak secrets with `503 config_invalid`"),
    // Backends.
    var("DATA_API_AUTH", "`apiKey` \\| `bearer` \\| `basic`", Some("apiKey"), "how the Data API key is sent: `apiKey` header (Atlas), bearer token, or HTTP Basic (FerretDB) with user `DATA_API_USER`"),
    var("DATA_API_USER", "text", Some("api"), "Basic-auth user name when `DATA_API_AUTH=basic`"),
    var("DATA_SOURCE", "text", Some("local"), "Data API `dataSource` (the Atlas cluster name)"),
    var("DATABASE", "text", Some("app"), "Data API `database`"),
    var("NOTIFY_COLLECTION", "text", Some("notifications"), "collection of the inbox items; dead letters go to `{NOTIFY_COLLECTION}_dead`, preferences to `{NOTIFY_COLLECTION}_preferences`, erasure jobs and fences to `{NOTIFY_COLLECTION}_erasures`, the senders' reverse index to `{NOTIFY_COLLECTION}_senders` (the gateway must serve all: `check-config --collections`)"),
    var("BACKEND_TIMEOUT_MS", "integer, ms, > 0", Some("5000"), "deadline of one Data API, Redis or JWKS call"),
    // Notifications.
    var("NOTIFY_ORIGINS_CAP", "integer, ≥ 1", Some("100"), "origins kept per merged item (`originsCount` counts every sender: exactly with Redis, see `originsCountExact`)"),
    var("NOTIFY_MAX_PER_OWNER", "integer", Some("100"), "items kept per owner by the cron trim"),
    var("NOTIFY_RETRACTED_CAP", "integer", Some("20"), "retracted senders remembered per item (so a late create cannot bring one back)"),
    var("NOTIFY_ROSTER_IDLE_MINUTES", "integer, minutes", Some("1440"), "how long Redis keeps the sender roster of an item with at most `NOTIFY_ORIGINS_CAP` senders after its last change (it is rebuilt from the document when the item's next event comes; 0 keeps every roster as long as its item)"),
    var("NOTIFY_SYNC_SETTLE_MS", "integer, ms", Some("2000"), "how far behind now a change-feed position is held, so a late write is delivered again, never missed"),
    var("NOTIFY_TOMBSTONE_TTL_HOURS", "integer, hours", Some("168"), "how long a deletion stays visible to the change feed"),
    var("NOTIFY_QUEUE_RETRY_SECONDS", "integer, s", Some("2"), "first redelivery delay of a failed queue message (doubles per attempt)"),
    var("NOTIFY_QUEUE_RETRY_MAX_SECONDS", "integer, s", Some("60"), "cap of that delay"),
    var("HOUSEKEEPING_SUBREQUESTS", "integer", Some("40"), "Data API calls one cron run may spend on trim, expiry and the senders' index entries of items that are gone (the free plan allows 50 subrequests in all)"),
    // Dedup.
    var("DEDUP_WINDOW_MS", "integer, ms", Some("600000"), "event-time window of the dedup hashes"),
    var("DEDUP_EXPECTED_PER_WINDOW", "integer", Some("3600000"), "expected event ids per window (sizes the sub-buckets so they stay compact)"),
    var("DEDUP_LEASE_MS", "integer, ms", Some("10000"), "how long a reservation holds an event id before another request may take it"),
    var("NOTIFY_HOT_EVENTS", "integer", Some("4"), "with the queue bound, single creates one item takes per `NOTIFY_HOT_WINDOW_MS` before it is hot and its creates are queued and coalesced (needs Redis; 0 queues every single create)"),
    var("NOTIFY_HOT_WINDOW_MS", "integer, ms, > 0", Some("1000"), "the window those creates are counted in"),
    var("NOTIFY_HOT_COOLDOWN_MS", "integer, ms, > 0", Some("10000"), "how long a hot item stays hot after its last create"),
    // Callers.
    var("SERVICE_KEYS", "list `name:scope[:scope]`, comma-separated", None, "named service keys and their scopes (`notify:write`, `admin`, `privacy`: erase and export a person, which `admin` also may); each value is secret `SERVICE_KEY_<NAME>`; unset = only `SERVICE_TOKEN`"),
    Setting {
        name: "SERVICE_KEY_<NAME>",
        kind: Kind::SecretPattern,
        ty: "text",
        default: None,
        meaning: "the value of the service key `<name>` declared in `SERVICE_KEYS` (upper-cased); removing it revokes the key",
    },
    var("AUTH_ISSUER", "text", None, "`iss` of self-minted HS256 user tokens (required with `AUTH_HS256_SECRET`)"),
    var("AUTH_AUDIENCE", "list, comma-separated", None, "accepted `aud` values of those tokens (required with `AUTH_HS256_SECRET`)"),
    var("AUTH_JWKS_URL", "URL", None, "JWKS of an identity provider (Firebase, Auth0, Cognito, Supabase); unset = no JWKS issuer"),
    var("AUTH_JWKS_ISSUER", "text", None, "`iss` of the provider's tokens; unset = `AUTH_ISSUER`"),
    var("AUTH_JWKS_AUDIENCE", "list, comma-separated", None, "accepted `aud` of the provider's tokens; unset = `AUTH_AUDIENCE`"),
    var("AUTH_JWKS_ALGS", "list of `RS256`, `ES256`", Some("RS256"), "algorithms accepted from the JWKS issuer (pinned: no `none`, no HS256)"),
    var("AUTH_LEEWAY_SECONDS", "integer, s", Some("60"), "clock skew allowed on `exp` and `nbf`"),
    var("AUTH_JWKS_COOLDOWN_SECONDS", "integer, s", Some("30"), "least time between two JWKS refetches for an unknown `kid`"),
    var("CORS_ALLOWED_ORIGINS", "list, comma-separated", None, "origins that get CORS headers and preflights (`*` = any); unset = none"),
    var("ENABLE_BENCH", "`true` \\| `false`", Some("false"), "serves `/__bench/*` in the bench build only (`scripts/build-worker.sh --bench`); a deployed build has no such routes"),
    // IP database.
    var("IPDB_KV_KEY", "text", Some("ipdb/current"), "KV key of the IPDB version record in `IPDB_CONFIG`"),
    var("IPDB_CHECK_INTERVAL_SECONDS", "integer, s", Some("60"), "how often an isolate re-reads the record (after responding)"),
    var("IPDB_SOURCE_URL", "URL or URL template", None, "where the daily cron downloads a new `.mmdb`, `.mmdb.gz` or MaxMind `.tar.gz`; `{YYYY}`, `{MM}`, `{YYYYMMDD}` are the current period, then the previous one (docs/ipdb.md); unset = no scheduled update"),
    var("IPDB_SOURCE_AUTH", "`none` \\| `maxmind`", Some("none"), "`maxmind`: HTTP basic auth with the secrets `MAXMIND_ACCOUNT_ID` and `MAXMIND_LICENSE_KEY` (sent over https only, or plain http to a loopback host for tests)"),
    var("IPDB_STALE_AFTER_DAYS", "integer, days", Some("45"), "`/healthz` flags the served database as stale (`ipdb.freshness.stale`) when it was built longer ago"),
    var("IPDB_PROMOTE_FROM_KEY", "text", None, "production: take the IPDB from staging's record under this KV key (in `IPDB_STAGING_CONFIG`, else `IPDB_CONFIG`) instead of downloading; unset = download from `IPDB_SOURCE_URL`"),
    var("IPDB_PROMOTE_AFTER_HOURS", "integer, hours", Some("24"), "how long staging must have served a version, probed by its cron with no failed probe, before production takes it"),
    var("IPDB_MAX_DOWNLOAD_BYTES", "integer, bytes", Some("33554432"), "largest compressed download the cron accepts"),
    var("IPDB_MAX_DB_BYTES", "integer, bytes", Some("50331648"), "largest decompressed database the cron accepts"),
    var("IPDB_DOWNLOAD_TIMEOUT_MS", "integer, ms", Some("60000"), "one deadline for the download and its decompression"),
    var("IPDB_MAX_DISAGREEMENT", "share, 0 to 1", Some("0.2"), "the cron refuses a database that disagrees with the serving one on more of the probe set"),
    var("IPDB_MIN_COUNTRIES", "integer", Some("50"), "the cron refuses a database answering fewer distinct countries on the probe set"),
    // Bindings.
    binding("ASSETS", "assets", "country index tiles, the IP table's pages, the bundled IPDB and the console (`./assets`)"),
    binding("IPDB_CONFIG", "KV namespace", "the IPDB version record and the cron's last outcome"),
    binding("IPDB_BUCKET", "R2 bucket", "published IP databases and their tables"),
    binding("IPDB_STAGING_CONFIG", "KV namespace (optional)", "production with `IPDB_PROMOTE_FROM_KEY`: staging's `IPDB_CONFIG` namespace, read only; unset = `IPDB_CONFIG`"),
    binding("IPDB_STAGING_BUCKET", "R2 bucket (optional)", "production with `IPDB_PROMOTE_FROM_KEY`: staging's `IPDB_BUCKET`, read only (objects are copied); unset = `IPDB_BUCKET`"),
    binding("NOTIFY_QUEUE", "queue producer", "creates are enqueued (`202 queued`); without it they are written synchronously"),
    binding("INBOX_HUB", "Durable Object", "live badge sockets, one object per owner; without it the stream answers `503`"),
    binding("GEO_RATE_LIMITER", "rate limit", "public geo routes, per client IP; without it, no limit"),
    binding("USER_RATE_LIMITER", "rate limit", "user routes, per user; without it, no limit"),
];

/// The configuration reference as a Markdown table: every secret of [`SECRETS`], then every
/// row of [`VARIABLES`]. `docs/configuration.md` holds exactly this between its markers.
#[must_use]
pub fn reference_markdown() -> String {
    let mut out =
        String::from("| name | kind | type | default | meaning |\n|---|---|---|---|---|\n");
    let row = |out: &mut String, name: &str, kind: &str, ty: &str, default: &str, meaning: &str| {
        out.push_str(&format!(
            "| `{name}` | {kind} | {ty} | {default} | {meaning} |\n"
        ));
    };
    for s in SECRETS {
        let kind = if s.optional {
            "secret (optional)"
        } else {
            "secret"
        };
        row(&mut out, s.name, kind, "text", "", s.purpose);
    }
    for v in VARIABLES {
        let kind = match v.kind {
            Kind::Var => "var".to_owned(),
            Kind::SecretPattern => "secret".to_owned(),
            Kind::Binding(b) => format!("binding: {b}"),
        };
        let default = v.default.map(|d| format!("`{d}`")).unwrap_or_default();
        row(&mut out, v.name, &kind, v.ty, &default, v.meaning);
    }
    out
}

/// A variable with a value the worker cannot use. Configuration is parsed once per isolate; a bad
/// value is reported by name (in `/healthz` and as `503 config_invalid`), never replaced by a
/// default behind the operator's back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{var}: {reason}")]
pub struct ConfigError {
    /// The variable.
    pub var: String,
    /// What is wrong (never the value of a secret).
    pub reason: String,
}

fn bad(var: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        var: var.to_owned(),
        reason: reason.into(),
    }
}

/// Reads variables and secrets by name; empty counts as unset.
pub struct Vars<'a> {
    get: &'a dyn Fn(&str) -> Option<String>,
}

impl<'a> Vars<'a> {
    /// Wraps a lookup (the worker's `Env`, a map in tests).
    pub fn new(get: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Vars { get }
    }

    /// The value, trimmed; `None` when unset or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.get)(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn text(&self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or_else(|| default.to_owned())
    }

    fn num<T: std::str::FromStr>(&self, name: &str, default: T) -> Result<T, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| bad(name, format!("expected a non-negative number, got {v:?}"))),
        }
    }

    fn flag(&self, name: &str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref() {
            None | Some("false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(v) => Err(bad(name, format!("expected true or false, got {v:?}"))),
        }
    }

    fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A share in `[0, 1]`.
fn share(v: &Vars<'_>, name: &str, default: f64) -> Result<f64, ConfigError> {
    let x: f64 = v.num(name, default)?;
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(bad(
            name,
            format!("expected a share between 0 and 1, got {x}"),
        ))
    }
}

/// The scheduled update's source; the MaxMind secrets are read whatever the auth (so the
/// configuration reference's check sees them read), used only with `IPDB_SOURCE_AUTH=maxmind`.
fn ipdb_source(v: &Vars<'_>) -> Result<Option<crate::ip::source::SourceSpec>, ConfigError> {
    use crate::ip::source::{SourceError, SourceSpec};
    let (account, key) = (v.get("MAXMIND_ACCOUNT_ID"), v.get("MAXMIND_LICENSE_KEY"));
    let auth = v.get("IPDB_SOURCE_AUTH");
    let Some(url) = v.get("IPDB_SOURCE_URL") else {
        return match auth.as_deref() {
            None | Some("none" | "maxmind") => Ok(None),
            Some(other) => Err(bad(
                "IPDB_SOURCE_AUTH",
                format!("expected none or maxmind, got {other:?}"),
            )),
        };
    };
    let missing = if account.is_none() {
        "MAXMIND_ACCOUNT_ID"
    } else {
        "MAXMIND_LICENSE_KEY"
    };
    SourceSpec::parse(&url, auth.as_deref(), account, key)
        .map(Some)
        .map_err(|e| match e {
            SourceError::MissingSecret => bad(missing, e.to_string()),
            e => bad(e.var(), e.to_string()),
        })
}

/// Everything the worker reads from its environment, parsed once per isolate.
#[derive(Clone, Debug)]
pub struct Config {
    /// Data API connection; `None` when its secrets are unset (notification routes answer 503).
    pub data_api: Option<crate::backend::DataApiConfig>,
    /// Redis REST connection; `None` when unset (dedup and Idempotency-Key run unguarded).
    pub redis: Option<crate::backend::RedisRestConfig>,
    /// Notification rules.
    pub notify: crate::notify::NotifyConfig,
    /// Items kept per owner by the cron trim.
    pub max_per_owner: u32,
    /// Dedup windows and lease.
    pub dedup: crate::dedup::DedupConfig,
    /// User authentication; `None` when no issuer is configured (user routes answer 503).
    pub auth: Option<crate::auth::AuthConfig>,
    /// Declared service keys (active or not).
    pub declared_keys: Vec<crate::auth::service_keys::Declared>,
    /// Active service keys.
    pub service_keys: crate::auth::ServiceKeys,
    /// Origins allowed by CORS (`*` = any).
    pub cors_origins: Vec<String>,
    /// `/__bench/*` served, in a build with the cargo feature `bench` (a second lock: other
    /// builds have no bench routes, whatever this says).
    pub bench: bool,
    /// Subrequests one cron invocation may spend on housekeeping (the free plan allows 50 in all).
    pub housekeeping_subrequests: u32,
    /// IPDB settings.
    pub ipdb: crate::ip::IpdbSettings,
    /// Redelivery backoff of the events queue: first delay and cap (seconds).
    pub queue_retry: (u32, u32),
}

/// The simple HS256 setup: exactly these three variables.
pub const HS256_VARS: [&str; 3] = ["AUTH_HS256_SECRET", "AUTH_ISSUER", "AUTH_AUDIENCE"];

fn auth_config(
    v: &Vars<'_>,
    timeout_ms: u32,
) -> Result<Option<crate::auth::AuthConfig>, ConfigError> {
    use crate::auth::{Alg, AuthConfig, Issuer, KeySource};
    let mut issuers = Vec::new();
    let audiences = |name: &str| -> Result<Vec<String>, ConfigError> {
        let a = v.list(name);
        if a.is_empty() {
            return Err(bad(
                name,
                "required: the token audience(s), comma-separated",
            ));
        }
        Ok(a)
    };
    if let Some(secret) = v.get("AUTH_HS256_SECRET") {
        if secret.len() < 32 {
            return Err(bad("AUTH_HS256_SECRET", "at least 32 characters"));
        }
        issuers.push(Issuer {
            issuer: v
                .get("AUTH_ISSUER")
                .ok_or_else(|| bad("AUTH_ISSUER", "required with AUTH_HS256_SECRET"))?,
            audiences: audiences("AUTH_AUDIENCE")?,
            algs: vec![Alg::HS256],
            keys: KeySource::Secret(secret.into_bytes()),
        });
    }
    if let Some(url) = v.get("AUTH_JWKS_URL") {
        if !url.starts_with("https://") && !url.starts_with("http://") {
            return Err(bad("AUTH_JWKS_URL", "expected an http(s) URL"));
        }
        let algs = match v.get("AUTH_JWKS_ALGS") {
            None => vec![Alg::RS256],
            Some(list) => list
                .split(',')
                .map(|a| {
                    Alg::parse(a.trim())
                        .filter(|a| *a != Alg::HS256)
                        .ok_or_else(|| {
                            bad("AUTH_JWKS_ALGS", format!("{a:?} is not RS256 or ES256"))
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        let iss_var = if v.get("AUTH_JWKS_ISSUER").is_some() {
            "AUTH_JWKS_ISSUER"
        } else {
            "AUTH_ISSUER"
        };
        let aud_var = if v.get("AUTH_JWKS_AUDIENCE").is_some() {
            "AUTH_JWKS_AUDIENCE"
        } else {
            "AUTH_AUDIENCE"
        };
        issuers.push(Issuer {
            issuer: v.get(iss_var).ok_or_else(|| {
                bad(
                    "AUTH_JWKS_ISSUER",
                    "required with AUTH_JWKS_URL (or AUTH_ISSUER)",
                )
            })?,
            audiences: audiences(aud_var)?,
            algs,
            keys: KeySource::Jwks(url),
        });
    }
    if issuers.is_empty() {
        return Ok(None);
    }
    let mut policy = crate::auth::jwks::CachePolicy::default();
    policy.unknown_kid_cooldown_s =
        v.num("AUTH_JWKS_COOLDOWN_SECONDS", policy.unknown_kid_cooldown_s)?;
    Ok(Some(AuthConfig {
        issuers,
        leeway_s: v.num("AUTH_LEEWAY_SECONDS", 60)?,
        policy,
        fetch_timeout_ms: timeout_ms,
    }))
}

impl Config {
    /// Parses every setting.
    ///
    /// # Errors
    /// The first variable with an unusable value, by name; in a deployed worker first of all a
    /// secret refused by [`secrets::refused`].
    pub fn from_vars(v: &Vars<'_>) -> Result<Config, ConfigError> {
        use crate::backend::{DataApiAuth, DataApiConfig, RedisRestConfig};
        // A deployed worker never runs on a public, placeholder or weak secret.
        if let Some(r) = secrets::refused(v.get).into_iter().next() {
            return Err(bad(&r.var, r.weakness.to_string()));
        }
        let timeout_ms = v.num("BACKEND_TIMEOUT_MS", 5_000u32)?;
        if timeout_ms == 0 {
            return Err(bad("BACKEND_TIMEOUT_MS", "must be above 0"));
        }
        let auth = match v.text("DATA_API_AUTH", "apiKey").as_str() {
            "apiKey" => DataApiAuth::ApiKey,
            "bearer" => DataApiAuth::Bearer,
            "basic" => DataApiAuth::Basic {
                username: v.text("DATA_API_USER", "api"),
            },
            other => {
                return Err(bad(
                    "DATA_API_AUTH",
                    format!("expected apiKey, bearer or basic, got {other:?}"),
                ))
            }
        };
        let data_api = match (v.get("DATA_API_URL"), v.get("DATA_API_KEY")) {
            (Some(base_url), Some(api_key)) => Some(DataApiConfig {
                base_url,
                api_key,
                data_source: v.text("DATA_SOURCE", "local"),
                database: v.text("DATABASE", "app"),
                auth,
                timeout_ms,
            }),
            _ => None,
        };
        let redis = match (v.get("REDIS_REST_URL"), v.get("REDIS_REST_TOKEN")) {
            (Some(base_url), Some(token)) => Some(RedisRestConfig {
                base_url,
                token,
                timeout_ms,
            }),
            _ => None,
        };
        let mut notify = crate::notify::NotifyConfig {
            collection: v.text("NOTIFY_COLLECTION", "notifications"),
            ..Default::default()
        };
        notify.origins_cap = v.num("NOTIFY_ORIGINS_CAP", notify.origins_cap)?;
        if notify.origins_cap == 0 {
            return Err(bad("NOTIFY_ORIGINS_CAP", "must be at least 1"));
        }
        notify.retracted_cap = v.num("NOTIFY_RETRACTED_CAP", notify.retracted_cap)?;
        notify.roster_idle_ms =
            i64::from(v.num::<u32>("NOTIFY_ROSTER_IDLE_MINUTES", 1_440)?) * 60_000;
        notify.sync_settle_ms = i64::from(v.num::<u32>("NOTIFY_SYNC_SETTLE_MS", 2_000)?);
        notify.tombstone_ttl_ms =
            i64::from(v.num::<u32>("NOTIFY_TOMBSTONE_TTL_HOURS", 168)?) * 3_600_000;
        // The summary templates are code, but checking them here turns a bad one into
        // `config_invalid` on /healthz rather than a wrong text on some request.
        crate::notify::check_templates().map_err(|e| bad("templates", e.to_string()))?;
        let mut dedup = crate::dedup::DedupConfig::for_rate(
            v.num("DEDUP_EXPECTED_PER_WINDOW", 3_600_000)?,
            v.num("DEDUP_WINDOW_MS", 600_000)?,
        );
        dedup.lease_ms = v.num("DEDUP_LEASE_MS", 10_000)?;
        dedup.hot.limit = v.num("NOTIFY_HOT_EVENTS", dedup.hot.limit)?;
        dedup.hot.window_ms = v.num("NOTIFY_HOT_WINDOW_MS", dedup.hot.window_ms)?;
        dedup.hot.cooldown_ms = v.num("NOTIFY_HOT_COOLDOWN_MS", dedup.hot.cooldown_ms)?;
        for (name, ms) in [
            ("NOTIFY_HOT_WINDOW_MS", dedup.hot.window_ms),
            ("NOTIFY_HOT_COOLDOWN_MS", dedup.hot.cooldown_ms),
        ] {
            if ms == 0 {
                return Err(bad(name, "must be > 0"));
            }
        }
        let declared_keys =
            crate::auth::service_keys::parse_declarations(&v.text("SERVICE_KEYS", ""))
                .map_err(|e| bad("SERVICE_KEYS", e))?;
        let service_keys =
            crate::auth::ServiceKeys::new(&declared_keys, |n| v.get(n), v.get("SERVICE_TOKEN"));
        Ok(Config {
            data_api,
            redis,
            notify,
            max_per_owner: v.num("NOTIFY_MAX_PER_OWNER", 100)?,
            dedup,
            auth: auth_config(v, timeout_ms)?,
            declared_keys,
            service_keys,
            cors_origins: v.list("CORS_ALLOWED_ORIGINS"),
            bench: v.flag("ENABLE_BENCH")?,
            housekeeping_subrequests: v.num("HOUSEKEEPING_SUBREQUESTS", 40)?,
            queue_retry: (
                v.num("NOTIFY_QUEUE_RETRY_SECONDS", 2)?,
                v.num("NOTIFY_QUEUE_RETRY_MAX_SECONDS", 60)?,
            ),
            ipdb: crate::ip::IpdbSettings {
                kv_key: v.text("IPDB_KV_KEY", "ipdb/current"),
                check_interval_s: v.num("IPDB_CHECK_INTERVAL_SECONDS", 60)?,
                source: ipdb_source(v)?,
                stale_after_days: v.num("IPDB_STALE_AFTER_DAYS", 45)?,
                promote_from_key: v.get("IPDB_PROMOTE_FROM_KEY"),
                promote_after_hours: v.num("IPDB_PROMOTE_AFTER_HOURS", 24)?,
                // DB-IP's country .mmdb.gz is ~4 MB and the mmdb ~8 MB; an isolate has 128 MB
                // and holds the serving database, the download and the candidate at once.
                max_download_bytes: v.num("IPDB_MAX_DOWNLOAD_BYTES", 32 * 1024 * 1024)?,
                max_db_bytes: v.num("IPDB_MAX_DB_BYTES", 48 * 1024 * 1024)?,
                download_timeout_ms: v.num("IPDB_DOWNLOAD_TIMEOUT_MS", 60_000)?,
                max_disagreement: share(v, "IPDB_MAX_DISAGREEMENT", 0.2)?,
                // DB-IP answers ~105 distinct countries on the 4,096 probes, GeoLite2 about as many.
                min_countries: v.num("IPDB_MIN_COUNTRIES", 50)?,
            },
        })
    }

    /// Whether the CORS allowlist admits `origin`.
    #[must_use]
    pub fn cors_allows(&self, origin: &str) -> bool {
        self.cors_origins.iter().any(|o| o == "*" || o == origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn reports_missing_names_in_order() {
        assert!(missing_secrets(|_| true).is_empty());
        assert_eq!(
            missing_secrets(|n| n.starts_with("DATA_")),
            ["REDIS_REST_URL", "REDIS_REST_TOKEN", "SERVICE_TOKEN"]
        );
        assert_eq!(
            missing_secrets(|_| false).len(),
            SECRETS.iter().filter(|s| !s.optional).count()
        );
    }

    #[test]
    fn example_bulk_file_lists_exactly_the_secrets() {
        let example: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(include_str!("../../../secrets.example.json"))
                .expect("secrets.example.json is a flat JSON object (wrangler secret bulk)");
        let listed: BTreeSet<&str> = example.keys().map(String::as_str).collect();
        let wanted: BTreeSet<&str> = SECRETS.iter().map(|s| s.name).collect();
        assert_eq!(listed, wanted, "secrets.example.json vs config::SECRETS");
        assert!(
            example
                .values()
                .all(|v| v.as_str().is_some_and(|s| !s.is_empty())),
            "every value is a non-empty placeholder string"
        );
    }

    #[test]
    fn dev_vars_example_sets_every_secret() {
        let text = include_str!("../../../.dev.vars.example");
        let set: BTreeSet<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
            .collect();
        assert!(missing_secrets(|n| set.contains(n)).is_empty(), "{set:?}");
    }

    /// Parses `pairs` as local development (the secret rules are tested in `secrets`).
    fn parse(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut all = vec![("ENVIRONMENT", "development")];
        all.extend_from_slice(pairs);
        parse_deployed(&all)
    }

    fn parse_deployed(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let get = move |n: &str| map.get(n).cloned();
        Config::from_vars(&Vars::new(&get))
    }

    #[test]
    fn a_deployed_worker_refuses_the_example_secrets_by_name() {
        let example: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(include_str!("../../../secrets.example.json")).unwrap();
        let pairs: Vec<(&str, &str)> = example
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str().unwrap()))
            .chain([("AUTH_ISSUER", "me"), ("AUTH_AUDIENCE", "app")])
            .collect();
        let e = parse_deployed(&pairs).unwrap_err();
        assert_eq!(e.var, "AUTH_HS256_SECRET", "{e}");
        assert!(!e.reason.contains("replace-with"), "{e}");
        // The same values are accepted for local development.
        let mut dev = pairs.clone();
        dev.push(("ENVIRONMENT", "development"));
        assert!(parse_deployed(&dev).is_ok());
    }

    #[test]
    fn dev_vars_example_marks_development() {
        let text = include_str!("../../../.dev.vars.example");
        assert!(
            text.lines()
                .any(|l| l.trim() == "ENVIRONMENT=\"development\""),
            ".dev.vars.example sets ENVIRONMENT=\"development\""
        );
    }

    #[test]
    fn defaults_need_nothing() {
        let c = parse(&[]).unwrap();
        assert!(c.data_api.is_none() && c.redis.is_none() && c.auth.is_none());
        assert!(c.service_keys.is_empty() && !c.bench);
        assert_eq!(c.notify.origins_cap, 100);
    }

    #[test]
    fn a_bad_value_names_its_variable() {
        for (pairs, var) in [
            (vec![("DATA_API_AUTH", "bearr")], "DATA_API_AUTH"),
            (vec![("BACKEND_TIMEOUT_MS", "5s")], "BACKEND_TIMEOUT_MS"),
            (vec![("NOTIFY_ORIGINS_CAP", "-1")], "NOTIFY_ORIGINS_CAP"),
            (vec![("NOTIFY_HOT_WINDOW_MS", "0")], "NOTIFY_HOT_WINDOW_MS"),
            (
                vec![("NOTIFY_HOT_COOLDOWN_MS", "0")],
                "NOTIFY_HOT_COOLDOWN_MS",
            ),
            (vec![("NOTIFY_HOT_EVENTS", "-1")], "NOTIFY_HOT_EVENTS"),
            (vec![("ENABLE_BENCH", "yes")], "ENABLE_BENCH"),
            (
                vec![("IPDB_SOURCE_URL", "https://h/{MONTH}.mmdb")],
                "IPDB_SOURCE_URL",
            ),
            (
                vec![("IPDB_SOURCE_URL", "https://h/x?license_key=k")],
                "IPDB_SOURCE_URL",
            ),
            (vec![("IPDB_SOURCE_AUTH", "basic")], "IPDB_SOURCE_AUTH"),
            (
                vec![
                    ("IPDB_SOURCE_URL", "https://h/x"),
                    ("IPDB_SOURCE_AUTH", "maxmind"),
                ],
                "MAXMIND_ACCOUNT_ID",
            ),
            (
                vec![
                    ("IPDB_SOURCE_URL", "https://h/x"),
                    ("IPDB_SOURCE_AUTH", "maxmind"),
                    ("MAXMIND_ACCOUNT_ID", "1"),
                ],
                "MAXMIND_LICENSE_KEY",
            ),
            (vec![("SERVICE_KEYS", "ingest:write")], "SERVICE_KEYS"),
            (vec![("AUTH_HS256_SECRET", "short")], "AUTH_HS256_SECRET"),
            (
                vec![
                    ("AUTH_HS256_SECRET", &"s".repeat(32)),
                    ("AUTH_AUDIENCE", "app"),
                ],
                "AUTH_ISSUER",
            ),
            (
                vec![
                    ("AUTH_HS256_SECRET", &"s".repeat(32)),
                    ("AUTH_ISSUER", "me"),
                ],
                "AUTH_AUDIENCE",
            ),
            (
                vec![
                    ("AUTH_JWKS_URL", "ftp://x"),
                    ("AUTH_ISSUER", "i"),
                    ("AUTH_AUDIENCE", "a"),
                ],
                "AUTH_JWKS_URL",
            ),
            (
                vec![
                    ("AUTH_JWKS_URL", "https://x"),
                    ("AUTH_JWKS_ALGS", "HS256"),
                    ("AUTH_ISSUER", "i"),
                    ("AUTH_AUDIENCE", "a"),
                ],
                "AUTH_JWKS_ALGS",
            ),
        ] {
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, &**v)).collect();
            let e = parse(&pairs).unwrap_err();
            assert_eq!(e.var, var, "{e}");
        }
    }

    #[test]
    fn hs256_is_three_variables_and_jwks_can_sit_beside_it() {
        let secret = "s".repeat(32);
        let c = parse(&[
            ("AUTH_HS256_SECRET", &secret),
            ("AUTH_ISSUER", "me"),
            ("AUTH_AUDIENCE", "app"),
        ])
        .unwrap();
        let a = c.auth.unwrap();
        assert_eq!(a.issuers.len(), 1);
        assert_eq!(a.issuers[0].algs, [crate::auth::Alg::HS256]);
        let c = parse(&[
            ("AUTH_HS256_SECRET", &secret),
            ("AUTH_ISSUER", "me"),
            ("AUTH_AUDIENCE", "app"),
            ("AUTH_JWKS_URL", "https://www.googleapis.com/service_accounts/v1/jwk/securetoken@system.gserviceaccount.com"),
            ("AUTH_JWKS_ISSUER", "https://securetoken.google.com/proj"),
            ("AUTH_JWKS_AUDIENCE", "proj"),
        ])
        .unwrap();
        let a = c.auth.unwrap();
        assert_eq!(a.issuers[1].audiences, ["proj"]);
        assert_eq!(a.issuers[1].algs, [crate::auth::Alg::RS256]);
    }
}
