//! Request parsing and response shapes for `/v1/geo/ip` and `/v1/geo/me`.

use super::error::ApiError;
use crate::ErrorCode;
use egn_core::ip::{parse_ip, IpAnswer, IpParseError};
use serde::Deserialize;
use serde_json::{json, Value};
use std::net::IpAddr;

/// Most addresses one batch request may carry.
pub const MAX_BATCH_IPS: usize = 10_000;

fn ip_error(field: &str, e: &IpParseError) -> ApiError {
    let code = match e {
        IpParseError::ZoneId => ErrorCode::IpZoneNotSupported,
        _ => ErrorCode::InvalidIp,
    };
    ApiError::new(code, format!("{field}: {e}"))
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
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

/// JSON for one answer: `{"ip","country","reason"}`; `reason` says why `country` is null.
pub fn ip_json(ip: IpAddr, a: IpAnswer<'_>) -> Value {
    match a {
        IpAnswer::Country(c) => json!({ "ip": ip.to_string(), "country": c, "reason": null }),
        IpAnswer::NotFound => {
            json!({ "ip": ip.to_string(), "country": null, "reason": "not_found" })
        }
        IpAnswer::Reserved(r) => json!({ "ip": ip.to_string(), "country": null, "reason": r }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
