//! The benchmark address mix, shared by the native bench (`bench/rust/examples/ip_bench.rs`) and
//! the worker's `/__bench/ip`, so both time the same addresses and the same work per lookup.

use super::answer::{CountryLookup, IpAnswer};
use std::net::{IpAddr, Ipv6Addr};

/// `n` addresses: 75% uniform IPv4, 25% IPv6 in the dense allocations; same `n`, same list.
pub fn addresses(n: usize) -> Vec<IpAddr> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            if i % 4 == 3 {
                let hi =
                    [0x2001u128, 0x2400, 0x2600, 0x2a00, 0x2a02, 0x2c0f][(next() % 6) as usize];
                IpAddr::from(Ipv6Addr::from((hi << 112) | (u128::from(next()) << 48)))
            } else {
                IpAddr::from(((next() >> 32) as u32).to_be_bytes())
            }
        })
        .collect()
}

/// The timed work: one lookup per address, counting countries (so nothing is optimised away).
// Never inlined: in wasm a function runs the code it was entered with (V8 has no on-stack
// replacement for wasm), and inlined into the worker's request handler this loop ran in the
// baseline tier; as its own function it is optimised once, then every pass uses that code.
#[inline(never)]
pub fn count_countries<D: CountryLookup + ?Sized>(db: &D, ips: &[IpAddr]) -> usize {
    ips.iter()
        .filter(|&&ip| matches!(db.country(ip), IpAnswer::Country(_)))
        .count()
}
