//! Latency of one dependent random read from buffers of growing size (a pointer chase over a
//! random cyclic permutation of cache lines): what a lookup pays per cache miss on this machine.
//! `cargo run --release -p edge-geo-notify-benches --example mem_latency` prints one `MiB ns` line per size.

use std::time::Instant;

fn main() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for mib in [1usize, 2, 4, 8, 16, 32, 64] {
        let lines = mib * 1024 * 1024 / 64;
        let mut order: Vec<usize> = (0..lines).collect();
        for i in (1..lines).rev() {
            order.swap(i, (rand() % (i as u64 + 1)) as usize);
        }
        // next[line * 8] holds the index of the following line's first word.
        let mut next = vec![0usize; lines * 8];
        for w in 0..lines {
            next[order[w] * 8] = order[(w + 1) % lines] * 8;
        }
        let steps = 4_000_000;
        let mut p = 0;
        for _ in 0..lines.min(steps) {
            p = next[p];
        }
        let t = Instant::now();
        for _ in 0..steps {
            p = next[p];
        }
        let ns = t.elapsed().as_nanos() as f64 / steps as f64;
        println!("{mib} {ns:.1} {}", std::hint::black_box(p) % 2);
    }
}
