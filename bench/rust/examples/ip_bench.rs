//! IP → country ns/lookup, native, for each database: the plain `maxminddb` reader (anchor),
//! our `IpDb` wrapper, and the compact table built from the same file; same addresses, same
//! process, ratios against the anchor measured in the same run. Prints markdown rows.
//!
//! `cargo run --release -p edge-geo-notify-benches --example ip_bench -- NAME=FILE.mmdb…`

use egn_core::ip::convert::ranges;
use egn_core::ip::table::{build, IpTable};
use egn_core::ip::workload::{addresses, count_countries};
use egn_core::ip::{IpAnswer, IpDb, Layout};
use maxminddb::PathElement;
use std::hint::black_box;
use std::net::IpAddr;
use std::time::Instant;

/// Median over `rounds` of ns per lookup of a whole pass of `n` lookups.
fn time_passes(rounds: usize, n: usize, mut pass: impl FnMut() -> usize) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            black_box(pass());
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median over `rounds` of ns per lookup.
fn time(rounds: usize, ips: &[IpAddr], mut f: impl FnMut(IpAddr) -> bool) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            let mut hits = 0usize;
            for &ip in ips {
                hits += usize::from(f(ip));
            }
            black_box(hits);
            t.elapsed().as_nanos() as f64 / ips.len() as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `--table-ns DIR`: ns/lookup of the table the worker serves (`DIR/dir.bin` + pages), the
/// worker's `/__bench/ip` pass over the same 1 M addresses; median of 3 passes, one number.
fn table_ns(dir: &std::path::Path) {
    let read = |name: &str| std::fs::read(dir.join(name)).expect("built assets");
    let table = IpTable::from_bytes(read("dir.bin")).expect("opens");
    for p in 0..table.page_count() {
        let name = egn_core::ip::table::page_name(p);
        table.insert_page(p, read(&name)).expect("valid page");
    }
    let ips = addresses(1_000_000);
    println!(
        "{:.1}",
        time_passes(3, ips.len(), || count_countries(&table, &ips))
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, dir] = args.as_slice() {
        if flag == "--table-ns" {
            return table_ns(std::path::Path::new(dir));
        }
    }
    let ips = addresses(1_000_000);
    println!("| database | mmdb bytes | table bytes (dir + pages; + in memory, all pages loaded) | convert ms | open dir µs | load all pages µs | plain `maxminddb` ns | ours `IpDb` ns | **table ns** | table / maxminddb |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for arg in std::env::args().skip(1) {
        let (name, path) = arg.split_once('=').expect("NAME=FILE");
        let bytes = std::fs::read(path).expect("readable");
        let size = bytes.len();
        let db = IpDb::from_bytes(bytes).expect("opens");
        let t = Instant::now();
        let table_bytes = build(&ranges(&db).expect("converts"), b"{}");
        let convert_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let table = IpTable::from_bytes(table_bytes.dir.as_slice()).expect("opens");
        let open_us = t.elapsed().as_secs_f64() * 1e6;
        let t = Instant::now();
        for (i, p) in table_bytes.pages.iter().enumerate() {
            table.insert_page(i, p.clone()).expect("valid page");
        }
        let pages_us = t.elapsed().as_secs_f64() * 1e6;
        let path: &[PathElement<'_>] = match db.layout() {
            Layout::Flat => &[PathElement::Key("country_code")],
            Layout::GeoIp2 => &[PathElement::Key("country"), PathElement::Key("iso_code")],
        };
        let reader = db.reader();
        let (mut plain, mut ours, mut tab) = (Vec::new(), Vec::new(), Vec::new());
        // Interleaved rounds, so drift on a shared machine hits every contender alike.
        for _ in 0..5 {
            plain.push(time(3, &ips, |ip| {
                reader
                    .lookup(ip)
                    .ok()
                    .and_then(|r| r.decode_path::<&str>(path).ok().flatten())
                    .is_some()
            }));
            ours.push(time(3, &ips, |ip| {
                matches!(db.lookup(ip), IpAnswer::Country(_))
            }));
            // Exactly the worker's `/__bench/ip` pass (the same function on the same list).
            tab.push(time_passes(3, ips.len(), || count_countries(&table, &ips)));
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (p, o, t) = (med(&mut plain), med(&mut ours), med(&mut tab));
        println!(
            "| {name} | {size} | {} + {}; + {} | {convert_ms:.0} | {open_us:.0} | {pages_us:.0} | {p:.0} | {o:.0} | **{t:.0}** | {:.2}× |",
            table.dir_len(),
            table.pages_len(),
            table.derived_len(),
            t / p
        );
    }
}
