#!/usr/bin/env bash
# IP → country benchmark section for BENCHMARKS.md (prints markdown on stdout).
#
#   bash bench/report/40_ip.sh [--no-workerd]
#
# Native: the compact table vs the plain `maxminddb` reader vs our `IpDb` wrapper, same
# addresses, same process (bench/rust/examples/ip_bench.rs); `mmdb-lib` (npm) on the same address mix; for
# DB-IP Lite (default) and iptoasn. Agreement of iptoasn with DB-IP on the fixed probe set
# (`ipdb-check`). In workerd (the bench build, which bench/probes/ip_workerd.mjs builds):
# first IP answer of a fresh isolate with lazy pages against the whole-table load, the bytes
# each reads, and wasm ns/lookup against native on the same addresses and work. Timings vary on
# shared machines: compare the ratios within one run.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/env.sh >/dev/null
D=node_modules/@ip-location-db
DBS=(dbip="$D/dbip-country-mmdb/dbip-country.mmdb" iptoasn="$D/iptoasn-country-mmdb/iptoasn-country.mmdb")
echo "## IP → country"
echo
echo "Machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%d)."
echo
echo "### Native (\`cargo run --release -p edge-geo-notify-benches --example ip_bench\`), 1 M addresses, 75% IPv4"
echo
cargo run -q --release -p edge-geo-notify-benches --example ip_bench -- "${DBS[@]}"
echo
echo "### \`mmdb-lib\` (npm), same address mix"
echo
node bench/probes/ip_mmdb_lib.mjs "${DBS[@]}"
echo
echo "### Agreement of iptoasn with DB-IP on the fixed probe set (4 096 addresses)"
echo
cargo run -q --release --bin ipdb-check -- "$D/iptoasn-country-mmdb/iptoasn-country.mmdb" \
  --against "$D/dbip-country-mmdb/dbip-country.mmdb" --max-disagreement 1 \
  | jq -r '.agreement | "| compared | agree | lost | changed | iptoasn answered |\n|---:|---:|---:|---:|---:|\n| \(.compared) | \(.agree) (\(100*.agree/.compared|floor)%) | \(.lost) | \(.changed) | \(.candidate_answered) |"'
if [ "${1:-}" != "--no-workerd" ]; then
  echo
  echo "### In workerd (\`node bench/probes/ip_workerd.mjs 5\`)"
  echo
  node bench/probes/ip_workerd.mjs 5 2>/dev/null | grep '^|'
fi
