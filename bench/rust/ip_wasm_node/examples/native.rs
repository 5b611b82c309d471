//! The same table and passes as `run.mjs`, native. `native` prints min and median ns/lookup
//! over 15 passes of 1 M addresses; `native icount REPS` runs REPS passes of 200 000 (callgrind).
use ip_wasm_node::table::{page_name, IpTable};
use ip_wasm_node::workload::count_countries;

fn addresses(n: usize) -> Vec<std::net::IpAddr> {
    let family = std::env::var("IP_FAMILY").map_or(0, |f| f.parse().expect("IP_FAMILY: 4 or 6"));
    ip_wasm_node::addresses(n, family)
}
use std::hint::black_box;

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../assets/ip/country");
    let t = IpTable::from_bytes(std::fs::read(dir.join("dir.bin")).expect("built assets")).unwrap();
    for p in 0..t.page_count() {
        t.insert_page(p, std::fs::read(dir.join(page_name(p))).unwrap())
            .unwrap();
    }
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("icount") {
        let ips = addresses(200_000);
        let reps: usize = args[2].parse().unwrap();
        black_box((0..reps).map(|_| count_countries(&t, &ips)).sum::<usize>());
        return;
    }
    let ips = addresses(1_000_000);
    black_box(count_countries(&t, &ips));
    let mut v: Vec<f64> = (0..15)
        .map(|_| {
            let s = std::time::Instant::now();
            black_box((0..3).map(|_| count_countries(&t, &ips)).sum::<usize>());
            s.elapsed().as_nanos() as f64 / 3e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    println!("{:.1} {:.1}", v[0], v[7]);
}
