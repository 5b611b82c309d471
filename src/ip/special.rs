//! Address ranges that never belong to a country (RFC 6890 special-purpose registries).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The name of the special-purpose range `ip` falls in, or `None` for a global address.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// First octets under which some special-purpose IPv4 range lies; every other address is
/// global, which settles ~90% of lookups with one table read.
const V4_MAYBE_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let firsts = [0u8, 10, 100, 127, 169, 172, 192, 198, 203];
    let mut i = 0;
    while i < firsts.len() {
        t[firsts[i] as usize] = true;
        i += 1;
    }
    let mut o = 224;
    while o < 256 {
        t[o] = true;
        o += 1;
    }
    t
};

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if !V4_MAYBE_SPECIAL[o[0] as usize] {
        return None;
    }
    Some(match () {
        _ if ip.is_unspecified() || o[0] == 0 => "unspecified",
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_private() => "private",
        _ if ip.is_link_local() => "link_local",
        _ if o[0] == 100 && (o[1] & 0xC0) == 64 => "shared_address_space",
        _ if ip.is_documentation() => "documentation",
        _ if o[0] == 198 && (o[1] & 0xFE) == 18 => "benchmarking",
        _ if o[0] == 192 && o[1] == 0 && o[2] == 0 => "ietf_protocol_assignment",
        _ if ip.is_broadcast() => "broadcast",
        _ if ip.is_multicast() => "multicast",
        _ if o[0] >= 240 => "reserved",
        _ => return None,
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    Some(match () {
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_multicast() => "multicast",
        _ if ip.is_unique_local() => "unique_local",
        _ if ip.is_unicast_link_local() => "link_local",
        _ if s[0] == 0x2001 && s[1] == 0x0db8 => "documentation",
        _ if s[0] == 0x0064 && s[1] == 0xff9b => "nat64",
        _ if s[0] == 0x0100 && s[1..4] == [0, 0, 0] => "discard",
        // Everything outside 2000::/3 is unassigned or special.
        _ if (s[0] & 0xE000) != 0x2000 => "reserved",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_special_ranges() {
        let r = |s: &str| special_range(s.parse().unwrap());
        assert_eq!(r("10.1.2.3"), Some("private"));
        assert_eq!(r("192.168.0.1"), Some("private"));
        assert_eq!(r("127.0.0.1"), Some("loopback"));
        assert_eq!(r("100.64.0.1"), Some("shared_address_space"));
        assert_eq!(r("169.254.1.1"), Some("link_local"));
        assert_eq!(r("203.0.113.9"), Some("documentation"));
        assert_eq!(r("255.255.255.255"), Some("broadcast"));
        assert_eq!(r("::1"), Some("loopback"));
        assert_eq!(r("fe80::1"), Some("link_local"));
        assert_eq!(r("fd00::1"), Some("unique_local"));
        assert_eq!(r("2001:db8::1"), Some("documentation"));
        assert_eq!(r("8.8.8.8"), None);
        assert_eq!(r("2606:4700::1111"), None);
    }
}
