//! Strict parsing of client-supplied addresses.

use std::net::IpAddr;

/// Why an address string was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpParseError {
    #[error("ip is empty")]
    /// Empty string.
    Empty,
    #[error("IPv6 zone ids (%…) are not supported")]
    /// IPv6 zone ids (`fe80::1%eth0`) name a local interface and have no country.
    ZoneId,
    #[error("not an IPv4 or IPv6 address")]
    /// Not an IPv4 or IPv6 address.
    Malformed,
}

/// Parses an IPv4 or IPv6 address (brackets around IPv6 allowed, no port, no zone id).
///
/// # Errors
/// [`IpParseError`] naming what is wrong.
pub fn parse_ip(s: &str) -> Result<IpAddr, IpParseError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(IpParseError::Empty);
    }
    if s.contains('%') {
        return Err(IpParseError::ZoneId);
    }
    let s = s
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(s);
    s.parse().map_err(|_| IpParseError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert!(parse_ip("1.2.3.4").is_ok());
        assert!(parse_ip("[2001:db8::1]").is_ok());
        assert!(parse_ip("::ffff:8.8.8.8").is_ok());
        assert_eq!(parse_ip(""), Err(IpParseError::Empty));
        assert_eq!(parse_ip("fe80::1%eth0"), Err(IpParseError::ZoneId));
        assert_eq!(parse_ip("1.2.3"), Err(IpParseError::Malformed));
        assert_eq!(parse_ip("1.2.3.4:80"), Err(IpParseError::Malformed));
        assert_eq!(parse_ip("01.2.3.4"), Err(IpParseError::Malformed));
    }
}
