#!/usr/bin/env bash
# Section: how long the two commands take on a clean clone of HEAD (what CI runs): setup, then
# scripts/test.sh by stage. The machine keeps what lives outside the clone (Debian packages, the
# cargo-installed wasm-bindgen/worker-build, cargo's registry cache), as CI's machine does; a
# brand-new machine adds their install to "setup" (see docs/testing.md). Takes ~20 min.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
git clone -q "$ROOT" "$dir/clone" >&2
cd "$dir/clone"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
bash scripts/setup.sh > "$dir/setup.log" 2>&1 || { tail -20 "$dir/setup.log" >&2; exit 1; }
setup_s=$(( $(date +%s) - t0 ))
t0=$(date +%s)
status=passed
bash scripts/test.sh > "$dir/test.log" 2>&1 || status=FAILED
test_s=$(( $(date +%s) - t0 ))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
fmt() { printf '%d min %02d s' $(( $1 / 60 )) $(( $1 % 60 )); }
cat <<MD
## Suite times (clean clone)

\`bash bench/report/95_suite_times.sh\`: a clean clone of HEAD, \`scripts/setup.sh\`, then
\`scripts/test.sh\` ($status), on this machine (load average $load_before before, $load_after
after). Debian packages and the cargo-installed tools were already present, as on CI's machine.

| step | wall time |
|---|---|
| \`scripts/setup.sh\` (npm ci, venv, assets, release wasm build) | $(fmt "$setup_s") |
MD
while IFS=$'\t' read -r name secs; do
  echo "| test.sh: $name | $(fmt "$secs") |"
done < target/suite-times.tsv
echo "| \`scripts/test.sh\` in all | $(fmt "$test_s") |"
