//! Address ranges that never belong to a country (RFC 6890 special-purpose registries).

use std::net::{IpAddr, Ipv6Addr};

/// The name of the special-purpose range `ip` falls in, or `None` for a global address.
pub fn special_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4.octets()),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// The special-purpose IPv4 ranges (network, prefix length, name), in the order they are
/// named: the first match wins (the broadcast address lies inside "reserved").
const V4_RANGES: [(u32, u32, &str); 15] = [
    (0x0000_0000, 8, "unspecified"),
    (0x7F00_0000, 8, "loopback"),
    (0x0A00_0000, 8, "private"),
    (0xAC10_0000, 12, "private"),
    (0xC0A8_0000, 16, "private"),
    (0xA9FE_0000, 16, "link_local"),
    (0x6440_0000, 10, "shared_address_space"),
    (0xC000_0200, 24, "documentation"),
    (0xC633_6400, 24, "documentation"),
    (0xCB00_7100, 24, "documentation"),
    (0xC612_0000, 15, "benchmarking"),
    (0xC000_0000, 24, "ietf_protocol_assignment"),
    (0xFFFF_FFFF, 32, "broadcast"),
    (0xE000_0000, 4, "multicast"),
    (0xF000_0000, 4, "reserved"),
];

/// `V4_FIRST` value: no special range under this first octet.
const NONE: u8 = 0xFF;
/// `V4_FIRST` value: some special range under this first octet, but not one covering it all.
const CHECK: u8 = 0xFE;

/// Per first octet: the index in [`V4_RANGES`] of the one range covering that whole /8, or
/// [`NONE`] / [`CHECK`]. Settles all but a few special addresses with one table read.
const V4_FIRST: [u8; 256] = {
    let mut t = [NONE; 256];
    let mut o = 0;
    while o < 256 {
        let (lo, hi) = ((o as u32) << 24, (o as u32) << 24 | 0x00FF_FFFF);
        let mut i = 0;
        while i < V4_RANGES.len() {
            let (net, len, _) = V4_RANGES[i];
            let last = net
                | match u32::MAX.checked_shr(len) {
                    Some(x) => x,
                    None => 0,
                };
            if net <= hi && last >= lo {
                t[o] = if t[o] == NONE && net <= lo && last >= hi {
                    i as u8
                } else {
                    CHECK
                };
            }
            i += 1;
        }
        o += 1;
    }
    t
};

/// `false` only for IPv6 addresses that are in no special-purpose range (the common case,
/// decided from the first bytes): callers skip [`special_range`] for them.
#[inline(always)]
pub fn maybe_special_v6(o: &[u8; 16]) -> bool {
    // Every special IPv6 range is outside 2000::/3 but documentation (2001:db8::/32).
    (o[0] & 0xE0) != 0x20 || o[..4] == [0x20, 0x01, 0x0d, 0xb8]
}

/// Calls `mark` with every IPv4 /16 (its top 16 bits) that holds a special-purpose address.
pub fn special_slash16s(mut mark: impl FnMut(u16)) {
    for (net, len, _) in V4_RANGES {
        let first = net >> 16;
        let count = 1u32 << 16u32.saturating_sub(len);
        (first..first + count).for_each(|s| mark(s as u16));
    }
}

/// The special-purpose range of an IPv4 address given as octets, or `None`.
#[inline(always)]
pub fn special_v4(o: [u8; 4]) -> Option<&'static str> {
    match V4_FIRST[o[0] as usize] {
        NONE => None,
        CHECK => special_v4_listed(u32::from_be_bytes(o)),
        i => Some(V4_RANGES[i as usize].2),
    }
}

#[inline(never)]
fn special_v4_listed(ip: u32) -> Option<&'static str> {
    V4_RANGES
        .iter()
        .find(|&&(net, len, _)| (ip ^ net).checked_shr(32 - len).unwrap_or(0) == 0)
        .map(|r| r.2)
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

    /// The range list against the standard library's predicates (the previous definition).
    fn reference_v4(ip: std::net::Ipv4Addr) -> Option<&'static str> {
        let o = ip.octets();
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

    #[test]
    fn v4_ranges_agree_with_the_std_predicates_and_mark_their_slash16s() {
        let mut marked = vec![false; 1 << 16];
        special_slash16s(|s| marked[s as usize] = true);
        let mut x: u32 = 0x9E37_79B9;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        // Both ends of every /24 (every range boundary is one), and random addresses.
        let ends = (0..1u32 << 24).flat_map(|n| [n << 8, n << 8 | 0xFF]);
        let mut special = 0;
        for ip in ends.chain((0..1 << 22).map(|_| next())) {
            let o = ip.to_be_bytes();
            let want = reference_v4(o.into());
            assert_eq!(special_v4(o), want, "{}", std::net::Ipv4Addr::from(o));
            if want.is_some() {
                special += 1;
                assert!(marked[(ip >> 16) as usize], "{ip:#x}: /16 not marked");
            }
        }
        assert!(special > 1 << 21, "{special}");
        // Not everything is marked: 8.8/16, 100.0/16, 192.1/16 are global throughout.
        assert!(!marked[0x0808] && !marked[0x6400] && !marked[0xC001]);
    }

    /// The fast IPv6 check may only rule out: every address of every special range says
    /// "maybe". (IPv4 is covered by the agreement test above.)
    #[test]
    fn maybe_special_v6_never_misses_a_special_address() {
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
        for _ in 0..200_000u64 {
            let r = next();
            // Random addresses under each special prefix (and two global ones), with only the
            // prefix's leading bits kept.
            let p = v6_prefixes[(r % 10) as usize];
            let keep = [128, 32, 96, 64, 96, 7, 10, 8, 3, 3][(r % 10) as usize];
            let rand = (u128::from(next()) << 64 | u128::from(next())) >> keep.min(127);
            let rand = if keep == 128 { 0 } else { rand };
            let ip = std::net::Ipv6Addr::from(p | rand);
            if special_range(IpAddr::V6(ip)).is_some() {
                assert!(
                    maybe_special_v6(&ip.octets()),
                    "{ip} is special but ruled out"
                );
                checked += 1;
            }
        }
        assert!(
            checked > 100_000,
            "too few special addresses drawn: {checked}"
        );
    }
}
