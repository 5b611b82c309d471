//! The compact country table answers exactly what the mmdb answers (through `maxminddb`, the
//! reference reader): on every range boundary of both families (and its neighbours), on random
//! addresses across the whole IPv4 and IPv6 space, reserved ranges and IPv4-mapped IPv6, for
//! each database we ship or accept (DB-IP flat, iptoasn flat, a GeoIP2-layout fixture).

use egn_core::ip::convert::ranges;
use egn_core::ip::table::{build, IpTable, TableError, HEADER};
use egn_core::ip::IpDb;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn npm(file: &str) -> Vec<u8> {
    std::fs::read(root().join("node_modules/@ip-location-db").join(file)).expect("npm ci first")
}

fn geoip2_fixture() -> Vec<u8> {
    let out = std::env::temp_dir().join(format!("ip-table-geoip2-{}.mmdb", std::process::id()));
    let ok = std::process::Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/fixtures/make_geoip2_mmdb.py"))
        .arg(&out)
        .status()
        .expect("venv python");
    assert!(ok.success());
    let b = std::fs::read(&out).unwrap();
    std::fs::remove_file(out).ok();
    b
}

/// Compares the table with the database on every boundary and `n` random addresses.
fn assert_exact(name: &str, mmdb: Vec<u8>, n: usize) -> usize {
    let db = IpDb::from_bytes(mmdb).unwrap();
    let r = ranges(&db).unwrap();
    let files = build(&r, br#"{"source":"test"}"#);
    let t = files.open().unwrap();
    assert_eq!(t.meta(), br#"{"source":"test"}"#);
    let mut checked = 0;
    let mut check = |ip: IpAddr| {
        assert_eq!(t.lookup(ip), db.lookup(ip), "{name}: {ip}");
        checked += 1;
    };
    for &(s, _) in &r.v4 {
        for d in [-1i64, 0, 1] {
            if let Ok(x) = u32::try_from(i64::from(s) + d) {
                check(IpAddr::V4(Ipv4Addr::from(x)));
                check(IpAddr::V6(Ipv4Addr::from(x).to_ipv6_mapped()));
            }
        }
    }
    for &(s, _) in &r.v6 {
        for x in [s.wrapping_sub(1), s, s.wrapping_add(1)] {
            check(IpAddr::V6(Ipv6Addr::from(x)));
        }
    }
    let mut rng = SmallRng::seed_from_u64(0x1b_7ab1e);
    for i in 0..n {
        let ip = match i % 4 {
            0 | 1 => IpAddr::V4(Ipv4Addr::from(rng.gen::<u32>())),
            // Global unicast, where the data is…
            2 => IpAddr::V6(Ipv6Addr::from(
                (0x2000u128 + rng.gen_range(0..0x2000u128)) << 112 | rng.gen::<u128>() >> 16,
            )),
            // …and the whole space: special-purpose ranges, IPv4-mapped and -compatible space.
            _ => IpAddr::V6(Ipv6Addr::from(rng.gen::<u128>() >> rng.gen_range(0..128))),
        };
        check(ip);
    }
    for s in [
        "10.0.0.1",
        "127.0.0.1",
        "::1",
        "::",
        "fe80::1",
        "::ffff:10.1.1.1",
        "::ffff:8.8.8.8",
        "::8.8.8.8",
        "2002:808:808::1",
        "64:ff9b::808:808",
        "2001:db8::1",
        "255.255.255.255",
        "0.0.0.0",
    ] {
        check(s.parse().unwrap());
    }
    checked
}

#[test]
fn dbip_table_is_exact() {
    let n = assert_exact(
        "dbip",
        npm("dbip-country-mmdb/dbip-country.mmdb"),
        1_000_000,
    );
    assert!(n > 3_000_000, "{n}");
}

#[test]
fn iptoasn_table_is_exact() {
    assert_exact(
        "iptoasn",
        npm("iptoasn-country-mmdb/iptoasn-country.mmdb"),
        500_000,
    );
}

#[test]
fn geoip2_layout_and_ipv4_only_tables_are_exact() {
    assert_exact("geoip2 fixture", geoip2_fixture(), 200_000);
    assert_exact(
        "dbip ipv4-only",
        npm("dbip-country-mmdb/dbip-country-ipv4.mmdb"),
        200_000,
    );
}

#[test]
fn unaligned_ipv6_boundaries_use_exceptions() {
    // A synthetic world: boundaries inside one /64, at its end, and right after it.
    let p = |s: &str| u128::from(s.parse::<Ipv6Addr>().unwrap());
    let r = egn_core::ip::convert::Ranges {
        v4: vec![
            (0, None),
            (u32::from(Ipv4Addr::new(8, 8, 8, 0)), Some(*b"US")),
            (u32::from(Ipv4Addr::new(8, 8, 9, 0)), None),
        ],
        v6: vec![
            (0, None),
            (p("2a00:1::"), Some(*b"DE")),
            (p("2a00:1::8000"), Some(*b"FR")),
            (p("2a00:1::9000"), Some(*b"DE")),
            (p("2a00:1:0:1::4"), Some(*b"IT")),
            (p("2a00:1:0:2::"), None),
        ],
    };
    let files = build(&r, b"");
    let t = files.open().unwrap();
    let at = |s: &str| match t.lookup(s.parse().unwrap()) {
        egn_core::ip::IpAnswer::Country(c) => c.to_string(),
        other => format!("{other:?}"),
    };
    assert_eq!(at("2a00:1::7fff"), "DE");
    assert_eq!(at("2a00:1::8000"), "FR");
    assert_eq!(at("2a00:1::8fff"), "FR");
    assert_eq!(at("2a00:1::9000"), "DE");
    assert_eq!(at("2a00:1:0:1::3"), "DE");
    assert_eq!(at("2a00:1:0:1::4"), "IT");
    assert_eq!(at("2a00:1:0:1:ffff:ffff:ffff:ffff"), "IT");
    assert_eq!(at("2a00:1:0:2::"), "NotFound");
    assert_eq!(at("2a00:0:ffff::"), "NotFound");
    assert_eq!(at("8.8.8.8"), "US");
    assert_eq!(at("8.8.9.0"), "NotFound");
}

#[test]
fn damaged_tables_are_refused() {
    let db = IpDb::from_bytes(npm("dbip-country-mmdb/dbip-country.mmdb")).unwrap();
    let good = build(&ranges(&db).unwrap(), b"{}");
    assert!(good.open().is_ok());
    let open = |dir: &[u8]| IpTable::from_bytes(dir.to_vec()).map(|_| ());
    let mut bad = good.dir.clone();
    bad[0] ^= 1;
    assert_eq!(open(&bad).unwrap_err(), TableError::Magic);
    let mut bad = good.dir.clone();
    bad[8] = 9;
    assert!(matches!(
        open(&bad),
        Err(TableError::WrongVersion { actual: 9, .. })
    ));
    assert_eq!(
        open(&good.dir[..good.dir.len() - 1]).unwrap_err(),
        TableError::Truncated
    );
    let mut bad = good.dir.clone();
    bad[HEADER + 3] ^= 1;
    assert_eq!(open(&bad).unwrap_err(), TableError::Checksum("directory"));
    // Pages: a flipped byte, a short page, a page in another slot, a missing page.
    let t = IpTable::from_bytes(good.dir.as_slice()).unwrap();
    let mut page = good.pages[3].clone();
    page[100] ^= 0x40;
    assert_eq!(t.insert_page(3, page), Err(TableError::Checksum("page")));
    let short = good.pages[3][..good.pages[3].len() - 1].to_vec();
    assert_eq!(t.insert_page(3, short), Err(TableError::Truncated));
    assert!(t.insert_page(4, good.pages[3].clone()).is_err());
    assert!(t.insert_page(good.pages.len(), Vec::new()).is_err());
    assert_eq!(t.loaded_len(), 0, "nothing damaged was kept");
    let fewer = good.pages[..good.pages.len() - 1].to_vec();
    assert_eq!(
        IpTable::from_parts(good.dir.as_slice(), fewer).unwrap_err(),
        TableError::Truncated
    );
}

#[test]
fn a_first_answer_needs_the_directory_and_one_page() {
    let db = IpDb::from_bytes(npm("dbip-country-mmdb/dbip-country.mmdb")).unwrap();
    let files = build(&ranges(&db).unwrap(), b"{}");
    let largest = files.pages.iter().map(Vec::len).max().unwrap();
    // docs/ipdb.md: a first answer needs the directory and at most one page.
    assert!(files.dir.len() < 192 << 10, "{}", files.dir.len());
    assert!(files.dir.len() + largest <= 1 << 20, "{largest}");
    let t = IpTable::from_bytes(files.dir.as_slice()).unwrap();
    for ip in ["8.8.8.8", "81.2.69.160", "2a02:2e0::1", "2001:4860::8888"] {
        let ip: IpAddr = ip.parse().unwrap();
        let p = t.missing_page(ip).expect("needs a page");
        assert_eq!(t.try_lookup(ip), Err(p));
        t.insert_page(p, files.pages[p].clone()).unwrap();
        assert_eq!(t.missing_page(ip), None);
        assert_eq!(t.try_lookup(ip), Ok(db.lookup(ip)), "{ip}");
    }
    assert!(t.loaded_pages() <= 4 && t.loaded_len() < files.len() / 4);
    // Most IPv4 /16s hold one range: the directory alone answers them, and right.
    let bare = IpTable::from_bytes(files.dir.as_slice()).unwrap();
    let mut no_page = 0;
    for x in 0..=u16::MAX {
        let [a, b] = x.to_be_bytes();
        for ip in [[a, b, 0, 0], [a, b, 255, 255]].map(IpAddr::from) {
            if bare.missing_page(ip).is_none() {
                assert_eq!(bare.try_lookup(ip), Ok(db.lookup(ip)), "{ip}");
                no_page += 1;
            }
        }
    }
    assert!(no_page > 2 * 65536 * 3 / 4, "{no_page}");
    // Reserved space needs no page.
    assert_eq!(t.missing_page("10.0.0.1".parse().unwrap()), None);
}
