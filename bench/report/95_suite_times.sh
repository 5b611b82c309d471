#!/usr/bin/env bash
# Section: how long the two commands take on a clean clone of HEAD (what CI runs): setup, then
# scripts/test.sh by stage. The machine keeps what lives outside the clone (Debian packages, the
# cargo-installed wasm-bindgen/worker-build, cargo's registry cache), as CI's machine does; a
# brand-new machine adds their install to "setup" (see docs/testing.md). Takes ~20 min.
# SUITE_CLONE=DIR reports a run made the same way by hand instead (a clean clone in DIR, setup,
# then test.sh): DIR/target/suite-times.tsv and DIR/suite-run.env (setup_s, test_s, status,
# load_before, load_after, commit). The logs of a run stay in DIR/*.log either way.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
if [ -n "${SUITE_CLONE:-}" ]; then
  cd "$SUITE_CLONE"
  # shellcheck disable=SC1091 # written by hand or by the run below
  source suite-run.env
else
  dir="$(mktemp -d)"
  # The clone's builds go at the end (gigabytes); its logs stay.
  trap 'rm -rf "$dir/clone/target" "$dir/clone/node_modules" "$dir/clone/.venv"' EXIT
  git clone -q "$ROOT" "$dir/clone" >&2
  cd "$dir/clone"
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  t0=$(date +%s)
  bash scripts/setup.sh > setup.log 2>&1 || { tail -20 setup.log >&2; exit 1; }
  setup_s=$(( $(date +%s) - t0 ))
  t0=$(date +%s)
  status=passed
  bash scripts/test.sh > test.log 2>&1 || status=FAILED
  test_s=$(( $(date +%s) - t0 ))
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  commit=$(git rev-parse --short HEAD)
  printf 'setup_s=%s\ntest_s=%s\nstatus=%s\nload_before="%s"\nload_after="%s"\ncommit=%s\n' \
    "$setup_s" "$test_s" "$status" "$load_before" "$load_after" "$commit" > suite-run.env
  echo "the run's logs: $dir/clone/setup.log, $dir/clone/test.log" >&2
fi
fmt() { printf '%d min %02d s' $(( $1 / 60 )) $(( $1 % 60 )); }
cat <<MD
## Suite times (clean clone)

\`bash bench/report/95_suite_times.sh\`${SUITE_CLONE:+ (with \`SUITE_CLONE\`: a run made by hand the same way)}: a clean clone of HEAD ($commit), \`scripts/setup.sh\`, then
\`scripts/test.sh\` ($status), on this machine (load average $load_before before, $load_after
after). Debian packages and the cargo-installed tools were already present, as on CI's machine.

| step | wall time | cores idle |
|---|---|---|
| \`scripts/setup.sh\` (npm ci, venv, assets, release wasm build) | $(fmt "$setup_s") | |
MD
# The third column (the share of the two cores left idle during the stage) is in runs from
# test.sh's that record it.
while IFS=$'\t' read -r name secs idle; do
  echo "| test.sh: $name | $(fmt "$secs") | ${idle:+$idle %} |"
done < target/suite-times.tsv
echo "| \`scripts/test.sh\` in all | $(fmt "$test_s") | |"

# A bare machine: recorded by bench/bare-setup.sh (it has to remove what setup installs, so it
# is not run from here); its file says on which commit, when and under which load.
bare="$ROOT/bench/results/bare-setup.tsv"
if [ -f "$bare" ]; then
  meta() { awk -F'\t' -v k="# $1" '$1==k {print $2}' "$bare"; }
  # How the machine was made bare: really (nothing of the project installed), or simulated.
  how() {
    if [ "$(meta mode)" = simulated ]; then
      echo "\`bash bench/bare-setup.sh --simulate --yes\` (removes what setup installs: its Debian packages
but jq, the JDK and python3-venv, which the reference image has; the cargo-installed tools, the
wasm target, cargo's and npm's caches),"
    else
      echo "\`bash bench/bare-setup.sh\` on a machine where nothing of the project was installed (no Debian
package setup adds, no cargo-installed tool, no wasm target, empty cargo and npm caches),"
    fi
  }
  row() { awk -F'\t' -v k="$1" '$1==k {printf "%.0f", $3 - $2}' "$bare"; }
  cat <<MD

### A bare machine

$(how)
then a clean clone of
$(meta commit) and \`scripts/dev.sh\` until \`/healthz\` answers; then \`dev.sh\` again. Recorded
$(meta date) on $(meta cores) cores, load average $(meta "load before") before, $(meta "load after") after.

| step | wall time |
|---|---|
| \`scripts/dev.sh\` on a bare machine, until it serves | $(fmt "$(row "first dev.sh until it serves")") |
| \`scripts/dev.sh\` again, nothing changed, until it serves | $(fmt "$(row "second dev.sh (nothing changed) until it serves")") |

Inside the first run, \`scripts/setup.sh\`'s steps (seconds since setup began; the background
ones overlap):

| setup step | start | end | wall time |
|---|---:|---:|---|
MD
  grep -v '^#' "$bare" | grep -v 'dev.sh' | sort -t$'\t' -k2,2n |
    while IFS=$'\t' read -r name start end; do
      printf '| %s | %.0f s | %.0f s | %s |\n' "$name" "$start" "$end" "$(fmt "$(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.0f", b-a}')")"
    done
fi
