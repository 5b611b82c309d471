//! Request parsing and response shapes for `/v1/geo/ip` and `/v1/geo/me`.

use super::error::ApiError;
use super::geo::PointResult;
use crate::ErrorCode;
use egn_core::ip::serving::PageError;
use egn_core::ip::table::page_name;
use egn_core::ip::Attribution;
use egn_core::ip::{parse_ip, IpAnswer, IpParseError};
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// Most addresses one batch request may carry.
pub const MAX_BATCH_IPS: usize = 10_000;

fn ip_error(field: &str, e: &IpParseError) -> ApiError {
    let code = match e {
        IpParseError::ZoneId => ErrorCode::IpZoneNotSupported,
        IpParseError::Empty | IpParseError::Malformed => ErrorCode::InvalidIp,
    };
    ApiError::new(code, format!("{field}: {e}"))
}

/// A page of the serving table that could not be loaded, as the 503 (or 500) it answers;
/// `bundled_pages` is the bundled table's asset directory, which a corrupt page is named under.
pub fn page_error<E: std::error::Error>(e: PageError<E>, bundled_pages: &str) -> ApiError {
    match e {
        PageError::Read { source, .. } => ApiError::asset_unavailable(source.to_string()),
        PageError::Refused(e) => ApiError::asset_unavailable(e.to_string()),
        PageError::Corrupt { page, source } => {
            ApiError::asset_corrupt(&format!("{bundled_pages}/{}", page_name(page)), source)
        }
        PageError::NotLoaded(p) => {
            ApiError::internal(format!("page {p} of a loaded table missing"))
        }
    }
}

/// Parses `ip=` from a query string.
///
/// # Errors
/// `missing_parameter`, `invalid_ip` or `ip_zone_not_supported` (400).
pub fn parse_ip_query(query: &str) -> Result<IpAddr, ApiError> {
    let raw = super::query::param(query, "ip").ok_or_else(|| {
        ApiError::new(
            ErrorCode::MissingParameter,
            "query parameter ip is required",
        )
    })?;
    parse_ip(&raw).map_err(|e| ip_error("ip", &e))
}

/// `POST /v1/geo/ip`.
#[derive(Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "IpsBody"))]
#[serde(deny_unknown_fields)]
pub(crate) struct Batch {
    #[cfg_attr(not(target_arch = "wasm32"), schemars(schema_with = "ips"))]
    ips: Vec<String>,
}

/// Parses `{"ips": ["1.2.3.4", …]}`.
///
/// # Errors
/// `invalid_json`, `empty_batch`, `batch_too_large`, `invalid_ip`.
pub fn parse_ip_batch(body: &[u8]) -> Result<Vec<IpAddr>, ApiError> {
    let b: Batch = super::from_object(body).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidJson,
            format!("expected {{\"ips\": [...]}}: {e}"),
        )
    })?;
    super::check_batch_len(b.ips.len(), MAX_BATCH_IPS, "ips")?;
    b.ips
        .iter()
        .enumerate()
        .map(|(i, s)| parse_ip(s).map_err(|e| ip_error(&format!("ips[{i}]"), &e)))
        .collect()
}

/// One address's answer; `reason` says why `country` is null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct IpResult {
    /// The address as parsed.
    pub ip: String,
    /// ISO 3166-1 alpha-2 (or a registry code such as `EU`).
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(regex(pattern = "^[A-Z0-9]{2}$"))
    )]
    pub country: Option<String>,
    /// Why `country` is null: `not_found` or a reserved range (`private`, `loopback`, …); null when it is not
    pub reason: Option<String>,
}

impl IpResult {
    /// The answer `a` for `ip`.
    #[must_use]
    pub fn new(ip: IpAddr, a: IpAnswer<'_>) -> Self {
        let (country, reason) = match a {
            IpAnswer::Country(c) => (Some(c.to_owned()), None),
            IpAnswer::NotFound => (None, Some("not_found".to_owned())),
            IpAnswer::Reserved(r) => (None, Some(r.to_owned())),
        };
        Self {
            ip: ip.to_string(),
            country,
            reason,
        }
    }
}

/// Which database answered, and the credit its licence asks for (the console shows
/// `attribution.text` linked to `attribution.url`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Ipdb {
    /// The database's version.
    pub version: String,
    /// `bundled`, or where a hot-swapped database came from
    pub source: String,
    /// The credit line, when the data's licence asks for one.
    pub attribution: Option<Attribution>,
}

/// `GET /v1/geo/ip`: the address's answer and the database that gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct IpLookup {
    /// The answer.
    #[serde(flatten)]
    pub result: IpResult,
    /// The database.
    pub ipdb: Ipdb,
}

/// `POST /v1/geo/ip`: one answer per address, in order, with the database once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct IpResults {
    /// In request order.
    pub results: Vec<IpResult>,
    /// The database.
    pub ipdb: Ipdb,
}

/// `GET /v1/geo/me`: what each source says about the caller.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Me {
    /// `request.cf.country` (`T1` = Tor)
    pub cf_country: Option<String>,
    /// The IPDB answer for `CF-Connecting-IP`
    pub ip: Option<IpResult>,
    /// The coordinates' country and time zone, when `lat` and `lon` were given.
    pub coordinates: Option<PointResult>,
    /// `request.cf.timezone`: the IANA zone Cloudflare places the connection in.
    pub cf_timezone: Option<String>,
    /// The caller's time zone and where it came from: the coordinates' when given, else the
    /// edge's (`request.cf.timezone`); null when neither answered.
    pub time_zone: Option<TimeZoneAnswer>,
    /// Whether the sources that answered agree (null with fewer than two).
    pub agree: Option<bool>,
    /// How many sources answered.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(range(max = 3)))]
    pub sources: u32,
    /// The database.
    pub ipdb: Ipdb,
}

/// Where the caller's `time_zone` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TimeZoneSource {
    /// The zone index at the given coordinates.
    Coordinates,
    /// `request.cf.timezone`.
    Edge,
}

/// A time zone and its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct TimeZoneAnswer {
    /// IANA name.
    pub name: String,
    /// Which source gave it.
    pub source: TimeZoneSource,
}

impl Me {
    /// Adds the edge's zone and picks the caller's: the coordinates' zone first (the caller said
    /// where it is), else the edge's.
    #[must_use]
    pub fn with_time_zone(mut self, cf_timezone: Option<String>) -> Self {
        let from_coords = self
            .coordinates
            .as_ref()
            .and_then(|c| c.time_zone.clone())
            .map(|name| TimeZoneAnswer {
                name,
                source: TimeZoneSource::Coordinates,
            });
        let from_edge = cf_timezone.clone().map(|name| TimeZoneAnswer {
            name,
            source: TimeZoneSource::Edge,
        });
        self.time_zone = from_coords.or(from_edge);
        self.cf_timezone = cf_timezone;
        self
    }

    /// The body from each source's answer; `agree` and `sources` follow from them.
    #[must_use]
    pub fn new(
        cf_country: Option<String>,
        ip: Option<IpResult>,
        coordinates: Option<PointResult>,
        ipdb: Ipdb,
    ) -> Self {
        let mut answers: Vec<&str> = Vec::new();
        // "T1" is Tor: a real answer, but not a country to compare.
        answers.extend(cf_country.as_deref().filter(|c| *c != "T1"));
        answers.extend(ip.as_ref().and_then(|r| r.country.as_deref()));
        answers.extend(
            coordinates
                .as_ref()
                .and_then(|p| Some(p.country.as_ref()?.alpha2.as_str())),
        );
        let agree = (answers.len() >= 2).then(|| answers.windows(2).all(|w| w[0] == w[1]));
        let sources = u32::try_from(answers.len()).unwrap_or(u32::MAX);
        Self {
            cf_country,
            ip,
            coordinates,
            cf_timezone: None,
            time_zone: None,
            agree,
            sources,
            ipdb,
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
/// An IPv4 or IPv6 address (no zone id).
#[must_use]
pub fn ip() -> serde_json::Value {
    serde_json::json!({ "type": "string", "anyOf": [{ "format": "ipv4" }, { "format": "ipv6" }] })
}

#[cfg(not(target_arch = "wasm32"))]
/// `ips` of a batch.
pub(crate) fn ips(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "array", "minItems": 1, "maxItems": MAX_BATCH_IPS, "items": ip() })
}

#[cfg(test)]
mod tests {
    #[test]
    fn page_errors_answer_503_except_a_missing_loaded_page() {
        use super::{page_error, PageError};
        let read = PageError::Read {
            page: 3,
            source: std::io::Error::other("asset ip/country/p3 answered 500"),
        };
        let e = page_error(read, "ip/country");
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("asset_unavailable", "asset ip/country/p3 answered 500")
        );
        let e = page_error(PageError::<std::io::Error>::NotLoaded(2), "ip/country");
        assert_eq!(
            (e.status(), e.message.as_str()),
            (500, "internal error: page 2 of a loaded table missing")
        );
        let corrupt = PageError::<std::io::Error>::Corrupt {
            page: 1,
            source: egn_core::ip::table::TableError::Magic,
        };
        let e = page_error(corrupt, "ip/country");
        assert_eq!(e.code.as_str(), "asset_corrupt");
        assert!(e.message.starts_with("ip/country/"), "{}", e.message);
    }

    use super::*;

    #[test]
    fn me_prefers_the_coordinates_zone_and_says_so() {
        let ipdb = Ipdb {
            version: "v".into(),
            source: "bundled".into(),
            attribution: None,
        };
        let at = egn_core::geo::LatLon::new(47.697, 8.691).unwrap();
        let coords = PointResult::new(at, None).with_time_zone(Some("Europe/Busingen"));
        let me = Me::new(None, None, Some(coords), ipdb.clone())
            .with_time_zone(Some("Europe/Zurich".into()));
        assert_eq!(me.cf_timezone.as_deref(), Some("Europe/Zurich"));
        let tz = me.time_zone.unwrap();
        assert_eq!(
            (tz.name.as_str(), tz.source),
            ("Europe/Busingen", TimeZoneSource::Coordinates)
        );
        let edge =
            Me::new(None, None, None, ipdb.clone()).with_time_zone(Some("Europe/Zurich".into()));
        let json = serde_json::to_value(&edge).unwrap();
        assert_eq!(
            json["time_zone"],
            serde_json::json!({"name": "Europe/Zurich", "source": "edge"})
        );
        let none = Me::new(None, None, None, ipdb).with_time_zone(None);
        assert!(none.time_zone.is_none());
    }

    #[test]
    fn parses_queries_and_batches() {
        assert_eq!(
            parse_ip_query("ip=2001%3Adb8%3A%3A1").unwrap().to_string(),
            "2001:db8::1"
        );
        assert_eq!(parse_ip_query("x=1").unwrap_err().code, "missing_parameter");
        assert_eq!(
            parse_ip_query("ip=fe80::1%25eth0").unwrap_err().code,
            "ip_zone_not_supported"
        );
        assert_eq!(
            parse_ip_query("ip=999.1.1.1").unwrap_err().code,
            "invalid_ip"
        );
        assert_eq!(
            parse_ip_batch(b"{\"ips\":[]}").unwrap_err().code,
            "empty_batch"
        );
        assert_eq!(
            parse_ip_batch(b"{\"ips\":[\"1.1.1.1\",\"x\"]}")
                .unwrap_err()
                .code,
            "invalid_ip"
        );
        assert_eq!(parse_ip_batch(b"[").unwrap_err().code, "invalid_json");
        assert_eq!(parse_ip_batch(b"{\"ips\":[\"::1\"]}").unwrap().len(), 1);
    }
}
