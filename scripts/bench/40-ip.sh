#!/usr/bin/env bash
# Section: IP -> country ns/lookup for each database (the bundled one and every country mmdb of
# the @ip-location-db npm packages installed), ours vs the plain `maxminddb` crate and npm
# `mmdb-lib`. The IP work (issue 12 part 1) can extend the database list here.
set -euo pipefail
# One row per distinct file (the bundled default is a copy of one of the npm files).
mapfile -t dbs < <(sha256sum assets/ip/*.mmdb node_modules/@ip-location-db/*/*-country.mmdb 2>/dev/null \
  | awk '!seen[$1]++ {print $2}')
cargo build --release --quiet --example ip_report >&2
native=$(./target/release/examples/ip_report "$BENCH_OUT" "${dbs[@]}")
js=$(node scripts/bench/ip_mmdb_lib.mjs "$BENCH_OUT" "${dbs[@]}")
cat <<'MD'
## IP → country

Median ns per lookup over batches of 1 000 addresses (100 000: 75% random IPv4, 25% IPv6 in
2a00::/12), whole passes alternating between ours and the `maxminddb` crate in one process
(`examples/ip_report.rs`); `mmdb-lib` (Node 22, `Reader.get`) in its own run
(`scripts/bench/ip_mmdb_lib.mjs`).

| database | bytes | ours (`IpDb::lookup`) | `maxminddb` crate | `mmdb-lib` (JS) |
|---|---|---|---|---|
MD
while IFS=$'\t' read -r db ours plain; do
  m=$(printf '%s\n' "$js" | awk -F'\t' -v d="$db" '$1 == d {print $2}')
  echo "| \`$db\` | $(wc -c < "$db") | **$ours ns** | $plain ns | ${m:-–} ns |"
done <<< "$native"
