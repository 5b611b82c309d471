//! mmdb → country ranges: every network of the source, read with `maxminddb` itself (the
//! reference reader), as sorted range starts with the country that `IpDb::lookup` would answer
//! there, adjacent ranges of equal country merged.

use super::db::IpDb;
use ipnetwork::IpNetwork;
use maxminddb::WithinOptions;
use std::net::{Ipv4Addr, Ipv6Addr};

pub use super::table::{Code, Ranges};

/// Why a database could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The search tree could not be walked or a record not decoded.
    #[error("walking the database: {0}")]
    Walk(#[from] maxminddb::MaxMindDbError),
}

fn push<T: PartialEq + Copy>(out: &mut Vec<(T, Code)>, start: T, code: Code) {
    if out.last().is_none_or(|&(_, c)| c != code) {
        out.push((start, code));
    }
}

/// Walks every network of `db` (including those without data, so the ranges cover each family
/// completely) and merges equal neighbours.
///
/// # Errors
/// [`ConvertError`] when the tree or a record is malformed.
pub fn ranges<S: AsRef<[u8]>>(db: &IpDb<S>) -> Result<Ranges, ConvertError> {
    let reader = db.reader();
    let opts = || WithinOptions::default().include_networks_without_data();
    let mut out = Ranges::default();
    let code_of = |r: &maxminddb::LookupResult<'_, S>| -> Result<Code, ConvertError> {
        if !r.has_data() {
            return Ok(None);
        }
        // Exactly what `IpDb::lookup` answers: a two-letter code, anything else is no country.
        Ok(match db.country_of(r) {
            Ok(Some(c)) if c.len() == 2 => Some([c.as_bytes()[0], c.as_bytes()[1]]),
            _ => None,
        })
    };
    let v4_all = IpNetwork::V4("0.0.0.0/0".parse().expect("literal"));
    let mut next: u64 = 0;
    for r in reader.within(v4_all, opts())? {
        let r = r?;
        let IpNetwork::V4(net) = r.network()? else {
            continue;
        };
        let start = u32::from(net.network());
        if u64::from(start) > next {
            push(&mut out.v4, next as u32, None);
        }
        push(&mut out.v4, start, code_of(&r)?);
        next = u64::from(start) + (1u64 << (32 - net.prefix()));
    }
    if next < 1 << 32 {
        push(&mut out.v4, next as u32, None);
    }
    if reader.metadata().ip_version == 6 {
        // Aliases included: 6to4 and IPv4-mapped space answer what the tree points them at.
        let v6_all = IpNetwork::V6("::/0".parse().expect("literal"));
        let mut next: u128 = 0;
        let mut done = false;
        for r in reader.within(v6_all, opts().include_aliased_networks())? {
            let r = r?;
            let IpNetwork::V6(net) = r.network()? else {
                continue;
            };
            let start = u128::from(net.network());
            if start > next && !done {
                push(&mut out.v6, next, None);
            }
            push(&mut out.v6, start, code_of(&r)?);
            let size = if net.prefix() == 0 {
                0
            } else {
                1u128 << (128 - net.prefix())
            };
            (next, done) = match start.checked_add(size) {
                Some(n) if size != 0 => (n, false),
                _ => (0, true),
            };
        }
        if !done && out.v6.is_empty() {
            push(&mut out.v6, 0, None);
        } else if !done {
            push(&mut out.v6, next, None);
        }
    } else {
        out.v6.push((0, None));
    }
    Ok(out)
}

/// The compact table for `db` (see [`super::table`]), with `meta` stored in it.
///
/// # Errors
/// [`ConvertError`] when the tree or a record is malformed.
pub fn table<S: AsRef<[u8]>>(
    db: &IpDb<S>,
    meta: &[u8],
) -> Result<super::table::TableFiles, ConvertError> {
    Ok(super::table::build(&ranges(db)?, meta))
}

/// The first address of an IPv4 range start, for messages and tests.
pub fn v4(start: u32) -> Ipv4Addr {
    Ipv4Addr::from(start)
}

/// The first address of an IPv6 range start, for messages and tests.
pub fn v6(start: u128) -> Ipv6Addr {
    Ipv6Addr::from(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_equal_neighbours() {
        let mut v = Vec::new();
        push(&mut v, 0u32, None);
        push(&mut v, 5, Some(*b"US"));
        push(&mut v, 9, Some(*b"US"));
        push(&mut v, 12, None);
        assert_eq!(v, vec![(0, None), (5, Some(*b"US")), (12, None)]);
    }
}
