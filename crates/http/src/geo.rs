//! Request parsing and response shapes for `/v1/geo/country`.

use super::error::ApiError;
use crate::ErrorCode;
use egn_core::geo::{Country, LatLon, Layers, TileSource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most points one batch request may carry.
pub const MAX_BATCH_POINTS: usize = 10_000;
/// Largest accepted request body, enforced once when the body is read (10 000 points in JSON
/// fit well under this).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Parses `lat` and `lon` from a query string (`lat=47.1&lon=8.2`).
///
/// # Errors
/// `missing_parameter`, `invalid_number` or `invalid_coordinate` (all 400).
pub fn parse_point_query(query: &str) -> Result<LatLon, ApiError> {
    let lat = super::query::param(query, "lat");
    let lon = super::query::param(query, "lon").or_else(|| super::query::param(query, "lng"));
    let num = |name: &str, v: Option<String>| -> Result<f64, ApiError> {
        let v = v.ok_or_else(|| {
            ApiError::new(
                ErrorCode::MissingParameter,
                format!("query parameter {name} is required"),
            )
        })?;
        // Rust's parser accepts "inf"/"NaN"; they are caught by LatLon::new as not finite.
        v.trim().parse::<f64>().map_err(|_| {
            ApiError::new(
                ErrorCode::InvalidNumber,
                format!("{name}={v:?} is not a number"),
            )
        })
    };
    let (lat, lon) = (num("lat", lat)?, num("lon", lon)?);
    LatLon::new(lat, lon).map_err(|e| ApiError::new(ErrorCode::InvalidCoordinate, e.to_string()))
}

/// What a geo answer carries beyond the country (`fields=` of `GET`/`POST /v1/geo/country`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    /// The IANA time zone (`timeZone`): default on; `fields=country` leaves it out, and then the
    /// zone layer is not read at all.
    pub time_zone: bool,
}

impl Default for Fields {
    fn default() -> Self {
        Self { time_zone: true }
    }
}

/// Parses `fields` (comma-separated `country`, `timeZone`; absent = both).
///
/// # Errors
/// `invalid_parameter` (400) naming an unknown field (an empty list names `""`).
pub fn parse_fields(query: &str) -> Result<Fields, ApiError> {
    let Some(list) = super::query::param(query, "fields") else {
        return Ok(Fields::default());
    };
    let mut fields = Fields { time_zone: false };
    for f in list.split(',').map(str::trim) {
        match f {
            "country" => {}
            "timeZone" => fields.time_zone = true,
            other => {
                return Err(ApiError::new(
                    ErrorCode::InvalidParameter,
                    format!("fields: unknown field {other:?} (country, timeZone)"),
                ))
            }
        }
    }
    Ok(fields)
}

/// `POST /v1/geo/country`: points as `{lat, lon}` objects or `[lat, lon]` pairs.
#[derive(Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "PointsBody"))]
#[serde(deny_unknown_fields)]
pub(crate) struct Batch {
    #[cfg_attr(not(target_arch = "wasm32"), schemars(schema_with = "points"))]
    points: Vec<Value>,
}

/// 400 `invalid_point` for coordinates out of range.
pub fn invalid_point(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(ErrorCode::InvalidPoint, e.to_string())
}

/// Parses a batch body `{"points":[{"lat":…,"lon":…}, …]}` (or `[lat, lon]` pairs).
///
/// # Errors
/// `invalid_json`, `empty_batch`, `batch_too_large`,
/// `invalid_point` (400) naming the first bad index.
pub fn parse_batch(body: &[u8]) -> Result<Vec<LatLon>, ApiError> {
    let batch: Batch = super::from_object(body).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidJson,
            format!("expected {{\"points\": [...]}}: {e}"),
        )
    })?;
    super::check_batch_len(batch.points.len(), MAX_BATCH_POINTS, "points")?;
    batch
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (lat, lon) = match p {
                Value::Object(o) => (
                    o.get("lat").and_then(Value::as_f64),
                    o.get("lon").and_then(Value::as_f64),
                ),
                Value::Array(a) if a.len() == 2 => (a[0].as_f64(), a[1].as_f64()),
                _ => (None, None),
            };
            let bad =
                |m: String| ApiError::new(ErrorCode::InvalidPoint, format!("points[{i}]: {m}"));
            match (lat, lon) {
                (Some(lat), Some(lon)) => LatLon::new(lat, lon).map_err(|e| bad(e.to_string())),
                _ => Err(bad("expected {\"lat\": number, \"lon\": number}".into())),
            }
        })
        .collect()
}

/// A country by its ISO 3166-1 codes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Country"))]
pub struct CountryCodes {
    /// ISO 3166-1 alpha-2.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(regex(pattern = "^[A-Z]{2}$")))]
    pub alpha2: String,
    /// ISO 3166-1 alpha-3.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(regex(pattern = "^[A-Z]{3}$")))]
    pub alpha3: String,
}

impl CountryCodes {
    /// One answer: the country's codes, or `None` at sea.
    #[must_use]
    pub fn of(c: Option<Country<'_>>) -> Option<Self> {
        c.map(|c| Self {
            alpha2: c.alpha2.to_owned(),
            alpha3: c.alpha3.to_owned(),
        })
    }
}

/// `GET /v1/geo/country`: the point and its country.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct PointResult {
    /// Latitude, degrees (WGS 84).
    #[cfg_attr(not(target_arch = "wasm32"), schemars(range(min = -90, max = 90)))]
    pub lat: f64,
    /// Longitude, degrees (WGS 84).
    #[cfg_attr(not(target_arch = "wasm32"), schemars(range(min = -180, max = 180)))]
    pub lon: f64,
    /// null on the open sea
    pub country: Option<CountryCodes>,
    /// IANA time zone (timezone-boundary-builder's full set: one zone per country region);
    /// the open sea answers `Etc/GMT±N` of its 15° band. Left out with `fields=country`.
    #[serde(rename = "timeZone", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(schema_with = "time_zone"))]
    pub time_zone: Option<String>,
}

impl PointResult {
    /// The answer for `p`.
    #[must_use]
    pub fn new(p: LatLon, country: Option<CountryCodes>) -> Self {
        Self {
            lat: p.lat(),
            lon: p.lon(),
            country,
            time_zone: None,
        }
    }

    /// The answer with its time zone.
    #[must_use]
    pub fn with_time_zone(mut self, zone: Option<&str>) -> Self {
        self.time_zone = zone.map(str::to_owned);
        self
    }
}

/// `POST /v1/geo/country`: one country (or null) per point, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct CountryResults {
    /// In request order; null on the open sea.
    pub results: Vec<Option<CountryCodes>>,
    /// The points' IANA time zones in request order (beside `results`, so a client that reads
    /// only `results` is unchanged). Left out with `fields=country`.
    #[serde(rename = "timeZones", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(schema_with = "time_zones"))]
    pub time_zones: Option<Vec<String>>,
}

/// The country and (with `fields.time_zone`) zone of one point (`/v1/geo/me` too).
///
/// # Errors
/// The tile source's error, or `asset_corrupt` (503) for an index or tile that does not verify.
pub async fn point_of<S, T>(
    layers: &Layers<S>,
    src: &T,
    p: LatLon,
    fields: Fields,
) -> Result<PointResult, ApiError>
where
    S: AsRef<[u8]> + Clone,
    T: TileSource<Error: Into<ApiError>>,
{
    if fields.time_zone {
        let (country, zone) = layers.pairs_of(src, &[p]).await?.swap_remove(0);
        return Ok(PointResult::new(p, CountryCodes::of(country)).with_time_zone(zone));
    }
    let country = layers.countries_of(src, &[p]).await?.swap_remove(0);
    Ok(PointResult::new(p, CountryCodes::of(country)))
}

/// `GET /v1/geo/country`: the query is checked before any geo data is opened.
///
/// # Errors
/// As [`parse_point_query`], [`parse_fields`] and [`point_of`].
pub async fn get_country<S, T>(
    layers: &Layers<S>,
    src: &T,
    query: &str,
) -> Result<PointResult, ApiError>
where
    S: AsRef<[u8]> + Clone,
    T: TileSource<Error: Into<ApiError>>,
{
    let p = parse_point_query(query)?;
    let fields = parse_fields(query)?;
    point_of(layers, src, p, fields).await
}

/// `POST /v1/geo/country`: the query and body are checked before any geo data is opened.
///
/// # Errors
/// As [`parse_fields`], [`parse_batch`] and [`point_of`].
pub async fn post_country<S, T>(
    layers: &Layers<S>,
    src: &T,
    query: &str,
    body: &[u8],
) -> Result<CountryResults, ApiError>
where
    S: AsRef<[u8]> + Clone,
    T: TileSource<Error: Into<ApiError>>,
{
    let fields = parse_fields(query)?;
    let points = parse_batch(body)?;
    if fields.time_zone {
        let (results, time_zones) = layers
            .pairs_of(src, &points)
            .await?
            .into_iter()
            .map(|(c, z)| (CountryCodes::of(c), z.unwrap_or_default().to_owned()))
            .unzip();
        return Ok(CountryResults {
            results,
            time_zones: Some(time_zones),
        });
    }
    let countries = layers.countries_of(src, &points).await?;
    Ok(CountryResults {
        results: countries.into_iter().map(CountryCodes::of).collect(),
        time_zones: None,
    })
}

#[cfg(not(target_arch = "wasm32"))]
/// An IANA zone name as the zone layer stores it.
fn time_zone_value() -> serde_json::Value {
    serde_json::json!({ "type": "string", "pattern": "^[A-Za-z0-9/_+-]+$", "examples": ["Europe/Busingen", "Etc/GMT+10"] })
}

#[cfg(not(target_arch = "wasm32"))]
fn time_zone(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::Schema::try_from(time_zone_value()).expect("an object schema")
}

#[cfg(not(target_arch = "wasm32"))]
fn time_zones(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "array", "items": time_zone_value() })
}

#[cfg(not(target_arch = "wasm32"))]
/// `points` of a batch: `{lat, lon}` objects or `[lat, lon]` pairs.
pub(crate) fn points(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let lat = serde_json::json!({ "type": "number", "minimum": -90, "maximum": 90 });
    let lon = serde_json::json!({ "type": "number", "minimum": -180, "maximum": 180 });
    schemars::json_schema!({
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_BATCH_POINTS,
        "items": { "oneOf": [
            { "type": "object", "required": ["lat", "lon"], "properties": { "lat": lat, "lon": lon } },
            { "type": "array", "prefixItems": [lat, lon], "minItems": 2, "maxItems": 2 },
        ] },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    /// A source no test may reach: every case here is decided before a tile is needed.
    struct NoTiles;

    impl TileSource for NoTiles {
        type Error = ApiError;
        async fn fetch(&self, path: &str) -> Result<Vec<u8>, ApiError> {
            panic!("read {path}")
        }
    }

    fn run<F: Future>(f: F) -> F::Output {
        let mut f = pin!(f);
        match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(v) => v,
            Poll::Pending => panic!("pending"),
        }
    }

    fn zero() -> u64 {
        0
    }

    /// Layers whose country index does not verify (the zone index is never reached).
    fn damaged() -> Layers<&'static [u8]> {
        Layers::new(b"not an index", b"", zero)
    }

    #[test]
    fn a_bad_request_is_answered_before_the_geo_data_is_opened() {
        fn code<T>(r: Result<T, ApiError>) -> ErrorCode {
            r.map(|_| ()).unwrap_err().code
        }
        let get = |q: &str| code(run(get_country(&damaged(), &NoTiles, q)));
        assert_eq!(get("lon=1"), ErrorCode::MissingParameter);
        assert_eq!(get("lat=1&lon=2&fields=x"), ErrorCode::InvalidParameter);
        let post = |q: &str, b: &[u8]| code(run(post_country(&damaged(), &NoTiles, q, b)));
        assert_eq!(
            post("fields=x", br#"{"points":[[1, 2]]}"#),
            ErrorCode::InvalidParameter
        );
        assert_eq!(post("", br#"{"points":[]}"#), ErrorCode::EmptyBatch);
        // A good request reaches the data: the damaged index answers, naming the asset.
        let e = run(get_country(&damaged(), &NoTiles, "lat=1&lon=2")).unwrap_err();
        assert_eq!((e.code, e.status()), (ErrorCode::AssetCorrupt, 503));
        assert_eq!(
            e.message,
            "geo/index.bin: asset length does not match its header"
        );
        let e = run(post_country(
            &damaged(),
            &NoTiles,
            "fields=country",
            br#"{"points":[[1, 2]]}"#,
        ));
        assert_eq!(code(e), ErrorCode::AssetCorrupt);
    }

    #[test]
    fn health_reports_a_damaged_index_as_unavailable_with_its_error() {
        use crate::health::{GeoHealth, GeoStatus};
        let h = GeoHealth::of(&damaged());
        assert_eq!(h.status, GeoStatus::Unavailable);
        assert_eq!(h.index, None);
        let error = h.error.unwrap();
        assert_eq!(error["code"], "asset_corrupt");
        assert_eq!(
            error["message"],
            "geo/index.bin: asset length does not match its header"
        );
    }

    #[test]
    fn query_errors_have_stable_codes() {
        let code = |q: &str| parse_point_query(q).unwrap_err().code;
        assert_eq!(code("lon=1"), "missing_parameter");
        assert_eq!(code("lat=abc&lon=1"), "invalid_number");
        assert_eq!(code("lat=NaN&lon=1"), "invalid_coordinate");
        assert_eq!(code("lat=inf&lon=1"), "invalid_coordinate");
        assert_eq!(code("lat=91&lon=1"), "invalid_coordinate");
        let p = parse_point_query("lat=47.5&lon=-8.25&x=1").unwrap();
        assert_eq!((p.lat(), p.lon()), (47.5, -8.25));
    }

    #[test]
    fn fields_default_to_all_and_refuse_unknown_names() {
        assert_eq!(
            parse_fields("lat=1&lon=2").unwrap(),
            Fields { time_zone: true }
        );
        assert_eq!(
            parse_fields("fields=country").unwrap(),
            Fields { time_zone: false }
        );
        assert_eq!(
            parse_fields("fields=country,timeZone").unwrap(),
            Fields { time_zone: true }
        );
        assert_eq!(
            parse_fields("fields=timeZone").unwrap(),
            Fields { time_zone: true }
        );
        let code = |q: &str| parse_fields(q).unwrap_err().code;
        assert_eq!(code("fields=tz"), "invalid_parameter");
        assert_eq!(code("fields="), "invalid_parameter");
        let with = PointResult::new(LatLon::new(47.697, 8.691).unwrap(), None)
            .with_time_zone(Some("Europe/Busingen"));
        let json = serde_json::to_value(&with).unwrap();
        assert_eq!(json["timeZone"], "Europe/Busingen");
        let without = serde_json::to_value(PointResult::new(LatLon::new(0.0, 0.0).unwrap(), None));
        assert!(without.unwrap().get("timeZone").is_none());
    }

    #[test]
    fn batch_errors_have_stable_codes() {
        let code = |b: &str| parse_batch(b.as_bytes()).unwrap_err().code;
        assert_eq!(code("{"), "invalid_json");
        assert_eq!(code("{\"points\":[]}"), "empty_batch");
        assert_eq!(code("{\"points\":[{\"lat\":1}]}"), "invalid_point");
        assert_eq!(code("{\"points\":[[100,0]]}"), "invalid_point");
        let many = format!(
            "{{\"points\":[{}]}}",
            vec!["[0,0]"; MAX_BATCH_POINTS + 1].join(",")
        );
        assert_eq!(code(&many), "batch_too_large");
        let ok = parse_batch(b"{\"points\":[[1,2],{\"lat\":3,\"lon\":4}]}").unwrap();
        assert_eq!(ok.len(), 2);
    }
}
