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

/// `false` only for addresses that are in no special-purpose range (the common case, decided
/// from the first bytes): callers skip [`special_range`] for them.
#[inline(always)]
pub fn maybe_special(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => V4_MAYBE_SPECIAL[v4.octets()[0] as usize],
        // Every special IPv6 range is outside 2000::/3 but documentation (2001:db8::/32).
        IpAddr::V6(v6) => {
            let o = v6.octets();
            (o[0] & 0xE0) != 0x20 || o[..4] == [0x20, 0x01, 0x0d, 0xb8]
        }
    }
}

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

    /// The fast check may only rule out: every address of every special range says "maybe".
    #[test]
    fn maybe_special_never_misses_a_special_address() {
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let v6_prefixes: [u128; 10] = [
            0,
            0xffff_0000_0000,
            0x0064_ff9b << 96,
            0x0100 << 112,
            0x2001_0db8 << 96,
            0xfc00 << 112,
            0xfe80 << 112,
            0xff00 << 112,
            0x2000 << 112,
            0x4000 << 112,
        ];
        let mut checked = 0;
        for i in 0..400_000u64 {
            let r = next();
            let ip = if i % 2 == 0 {
                // Every first octet, random rest.
                IpAddr::from(((i as u32 / 2 % 256) << 24 | (r as u32 >> 8)).to_be_bytes())
            } else {
                // Random addresses under each special prefix (and two global ones), with only the
                // prefix's leading bits kept.
                let p = v6_prefixes[(r % 10) as usize];
                let keep = [128, 32, 96, 64, 96, 7, 10, 8, 3, 3][(r % 10) as usize];
                let rand = (u128::from(next()) << 64 | u128::from(next())) >> keep.min(127);
                let rand = if keep == 128 { 0 } else { rand };
                IpAddr::from(std::net::Ipv6Addr::from(p | rand))
            };
            if special_range(ip).is_some() {
                assert!(maybe_special(&ip), "{ip} is special but ruled out");
                checked += 1;
            }
        }
        assert!(
            checked > 100_000,
            "too few special addresses drawn: {checked}"
        );
    }
}
