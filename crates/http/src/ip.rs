//! Request parsing and response shapes for `/v1/geo/ip` and `/v1/geo/me`.

use super::error::ApiError;
use super::geo::{self as geo_api, PointResult};
use crate::ErrorCode;
use egn_core::geo::{Layers, TileSource};
use egn_core::ip::serving::{PageError, Served};
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

impl Ipdb {
    /// Which database `s` is, and its credit.
    #[must_use]
    pub fn of(s: &Served) -> Self {
        Self {
            version: s.version().to_owned(),
            // `Source` serializes as its lower-case name.
            source: serde_json::to_value(s.source())
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            attribution: s.attribution().cloned(),
        }
    }
}

/// `GET /v1/geo/ip`'s answer from `s`, whose page for `ip` is loaded.
#[must_use]
pub fn lookup(s: &Served, ip: IpAddr) -> IpLookup {
    IpLookup {
        result: IpResult::new(ip, s.db().lookup(ip)),
        ipdb: Ipdb::of(s),
    }
}

/// `POST /v1/geo/ip`'s answer from `s`, whose pages for `ips` are loaded.
#[must_use]
pub fn lookups(s: &Served, ips: &[IpAddr]) -> IpResults {
    IpResults {
        results: ips
            .iter()
            .map(|&ip| IpResult::new(ip, s.db().lookup(ip)))
            .collect(),
        ipdb: Ipdb::of(s),
    }
}

/// What the edge says about a caller (`request.cf` and `CF-Connecting-IP`), as `/v1/geo/me`
/// reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Edge {
    /// `request.cf.country`; `XX` (Cloudflare's "unknown") is no answer.
    pub country: Option<String>,
    /// `CF-Connecting-IP`, when it parses (a value that does not is no answer, not an error).
    pub ip: Option<IpAddr>,
    /// `request.cf.timezone`; empty is no answer.
    pub timezone: Option<String>,
}

impl Edge {
    /// The edge's raw values.
    #[must_use]
    pub fn new(country: Option<String>, ip: Option<&str>, timezone: Option<String>) -> Self {
        Self {
            country: country.filter(|c| c != "XX"),
            ip: ip.and_then(|v| parse_ip(v).ok()),
            timezone: timezone.filter(|tz| !tz.is_empty()),
        }
    }
}

/// `GET /v1/geo/me` from the database serving the caller's address (its page loaded): the
/// coordinates are looked up only when `lat` or `lon` is given.
///
/// # Errors
/// The point query's (400), or the geo lookup's.
pub async fn me<S, T>(
    s: &Served,
    layers: &Layers<S>,
    tiles: &T,
    edge: Edge,
    query: &str,
) -> Result<Me, ApiError>
where
    S: AsRef<[u8]> + Clone,
    T: TileSource<Error: Into<ApiError>>,
{
    let ip = edge.ip.map(|ip| IpResult::new(ip, s.db().lookup(ip)));
    let has_coords = super::query::pairs(query).any(|(k, _)| k == "lat" || k == "lon");
    let coords = if has_coords {
        let p = geo_api::parse_point_query(query)?;
        Some(geo_api::point_of(layers, tiles, p, geo_api::Fields::default()).await?)
    } else {
        None
    };
    Ok(Me::new(edge.country, ip, coords, Ipdb::of(s)).with_time_zone(edge.timezone))
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
    use super::{lookups, me, Edge, Ipdb};
    use crate::{ApiError, ErrorCode};
    use egn_core::geo::{Layers, TileSource};
    use egn_core::ip::serving::{Clock, Served};
    use egn_core::ip::table::{build, Ranges};
    use egn_core::ip::update::table_meta;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    struct Zero;
    impl Clock for Zero {
        fn now_ms(&self) -> u64 {
            0
        }
    }

    /// A bundled table with no country anywhere (every /16 answers from the directory).
    fn served() -> Served {
        let ranges = Ranges {
            v4: vec![(0, None)],
            v6: vec![(0, None)],
        };
        Served::bundled(build(&ranges, &table_meta("test", 7, None)).dir, &Zero).unwrap()
    }

    /// A source no test may reach.
    struct NoTiles;
    impl TileSource for NoTiles {
        type Error = ApiError;
        async fn fetch(&self, path: &str) -> Result<Vec<u8>, ApiError> {
            panic!("read {path}")
        }
    }

    fn zero() -> u64 {
        0
    }

    /// Geo layers whose index does not verify.
    fn damaged() -> Layers<&'static [u8]> {
        Layers::new(b"not an index", b"", zero)
    }

    fn run<F: Future>(f: F) -> F::Output {
        match pin!(f)
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("pending"),
        }
    }

    #[test]
    fn the_edge_facts_drop_what_is_no_answer() {
        let e = Edge::new(Some("XX".into()), Some("not an ip"), Some(String::new()));
        assert_eq!(e, Edge::default());
        let e = Edge::new(
            Some("T1".into()),
            Some("2001:db8::1"),
            Some("Europe/Zurich".into()),
        );
        assert_eq!(e.country.as_deref(), Some("T1"));
        assert_eq!(e.ip, Some("2001:db8::1".parse().unwrap()));
        assert_eq!(e.timezone.as_deref(), Some("Europe/Zurich"));
    }

    #[test]
    fn answers_name_the_database_that_gave_them() {
        let s = served();
        let ipdb = Ipdb::of(&s);
        assert_eq!(
            (ipdb.source.as_str(), &ipdb.attribution),
            ("bundled", &None)
        );
        assert_eq!(ipdb.version, s.version());
        let ips = ["10.0.0.1".parse().unwrap(), "8.8.8.8".parse().unwrap()];
        let r = lookups(&s, &ips);
        let reasons: Vec<_> = r.results.iter().map(|r| r.reason.as_deref()).collect();
        assert_eq!(reasons, [Some("private"), Some("not_found")]);
        assert_eq!(r.ipdb, ipdb);
    }

    #[test]
    fn me_reads_the_coordinates_only_when_given() {
        let s = served();
        let edge = Edge::new(
            Some("CH".into()),
            Some("8.8.8.8"),
            Some("Europe/Zurich".into()),
        );
        // No lat/lon: the geo data is not opened (it is damaged here, and answers nothing).
        let m = run(me(&s, &damaged(), &NoTiles, edge.clone(), "x=1")).unwrap();
        assert_eq!(m.coordinates, None);
        assert_eq!(m.ip.as_ref().map(|r| r.ip.as_str()), Some("8.8.8.8"));
        assert_eq!((m.sources, m.agree), (1, None));
        assert_eq!(
            m.time_zone.map(|t| t.name).as_deref(),
            Some("Europe/Zurich")
        );
        // One of them: the query is refused before the geo data is opened.
        let e = run(me(&s, &damaged(), &NoTiles, edge.clone(), "lat=1")).unwrap_err();
        assert_eq!(e.code, ErrorCode::MissingParameter);
        // Both: the geo data answers (here, its damaged index).
        let e = run(me(&s, &damaged(), &NoTiles, edge, "lat=1&lon=2")).unwrap_err();
        assert_eq!(e.code, ErrorCode::AssetCorrupt);
    }

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
