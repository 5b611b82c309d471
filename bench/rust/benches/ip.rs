//! IP → country, native: our wrapper (`IpDb::lookup`, with reserved-range checks) vs the plain
//! `maxminddb` crate call it wraps, same database, same addresses, same process.
//!
//! `cargo bench --bench ip`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use egn_core::ip::IpDb;
use maxminddb::PathElement;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::net::IpAddr;

fn bench(c: &mut Criterion) {
    // The manifest of this member is bench/rust/Cargo.toml: the assets are two levels up.
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../assets/ip/default.mmdb"
    ))
    .expect("assets built");
    let db = IpDb::from_bytes(bytes).expect("opens");
    let mut rng = SmallRng::seed_from_u64(3);
    let ips: Vec<IpAddr> = (0..100_000)
        .map(|i| {
            if i % 4 == 3 {
                IpAddr::from([
                    0x2a00 | rng.gen_range(0..16u16),
                    rng.gen(),
                    rng.gen(),
                    rng.gen(),
                    0,
                    0,
                    0,
                    1,
                ])
            } else {
                IpAddr::from(rng.gen::<[u8; 4]>())
            }
        })
        .collect();
    let path = [PathElement::Key("country_code")];
    let mut g = c.benchmark_group("ip_lookup");
    let mut i = 0;
    g.bench_function("plain_maxminddb_lookup_decode_path", |b| {
        b.iter(|| {
            i = (i + 1) % ips.len();
            let r = db.reader().lookup(ips[i]).ok();
            black_box(r.and_then(|r| r.decode_path::<&str>(&path).ok().flatten()))
        })
    });
    g.bench_function("ours_ipdb_lookup", |b| {
        b.iter(|| {
            i = (i + 1) % ips.len();
            black_box(db.lookup(ips[i]))
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
