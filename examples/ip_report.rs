//! IP → country, native, for `BENCHMARKS.md` (`scripts/bench/40-ip.sh`): ns per lookup of ours
//! (`IpDb::lookup`, with reserved-range checks) against the plain `maxminddb` crate call it
//! wraps, for each database given, in alternating whole passes over the same addresses (75%
//! IPv4, 25% IPv6 in 2a00::/12, seed 3 as in `benches/ip.rs`). Writes the addresses to
//! `OUT_DIR/ips.txt` for the `mmdb-lib` run. Prints `database<TAB>ours<TAB>maxminddb` lines.
//!
//! `cargo run --release --example ip_report -- OUT_DIR DB.mmdb...`

use edge_geo_notify::ip::IpDb;
use maxminddb::PathElement;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::net::IpAddr;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (out, dbs) = args.split_first().expect("OUT_DIR DB.mmdb...");
    let mut rng = SmallRng::seed_from_u64(3);
    let ips: Vec<IpAddr> = (0..100_000)
        .map(|i| {
            if i % 4 == 3 {
                let mut s = [0u16; 8];
                s[0] = 0x2a00 | rng.gen_range(0..16u16);
                s[1..4].iter_mut().for_each(|v| *v = rng.gen());
                s[7] = 1;
                IpAddr::from(s)
            } else {
                IpAddr::from(rng.gen::<[u8; 4]>())
            }
        })
        .collect();
    let text: Vec<String> = ips.iter().map(IpAddr::to_string).collect();
    std::fs::write(format!("{out}/ips.txt"), text.join("\n") + "\n").expect("write");
    for path in dbs {
        let db = IpDb::from_bytes(std::fs::read(path).expect("database")).expect("opens");
        // Flat records (`country_code`) as the npm builds have; GeoLite2-style ones nest it.
        let flat = [PathElement::Key("country_code")];
        let nested = [PathElement::Key("country"), PathElement::Key("iso_code")];
        let (mut ours, mut plain) = (Vec::new(), Vec::new());
        for round in 0..=3 {
            for k in 0..2 {
                for chunk in ips.chunks(1000) {
                    let s = Instant::now();
                    for &ip in chunk {
                        if k == 0 {
                            black_box(db.lookup(ip));
                        } else {
                            let r = db.reader().lookup(ip).ok();
                            black_box(r.and_then(|r| {
                                r.decode_path::<&str>(&flat)
                                    .ok()
                                    .flatten()
                                    .or_else(|| r.decode_path::<&str>(&nested).ok().flatten())
                            }));
                        }
                    }
                    if round > 0 {
                        let ns = s.elapsed().as_nanos() as f64 / chunk.len() as f64;
                        if k == 0 {
                            ours.push(ns)
                        } else {
                            plain.push(ns)
                        }
                    }
                }
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!("{path}\t{:.0}\t{:.0}", med(&mut ours), med(&mut plain));
    }
}
