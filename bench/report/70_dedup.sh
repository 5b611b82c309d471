#!/usr/bin/env bash
# Section: dedup memory per id on a real redis-server for the three layouts (bench/rust/examples/dedup_memory.rs).
set -euo pipefail
cargo build --release --quiet -p edge-geo-notify-benches --example dedup_memory >&2
cat <<'MD'
## Dedup memory on redis-server

`cargo run --release -p edge-geo-notify-benches --example dedup_memory -- --ids 3600000` (3.6 M ids = the seed's 6 k/s ×
10 min; a private redis-server on loopback; `used_memory` per id, and reserve throughput as a
ratio of `SET NX` in the same run, for the bare reserve and for the admission a create sends:
the reserve with the owner's muted-set check and the item's roster join in the same `EVALSHA`):

```text
MD
"${CARGO_TARGET_DIR:-target}"/release/examples/dedup_memory --ids 3600000
echo '```'
