#!/usr/bin/env bash
# Fuzzes each cargo-fuzz target in fuzz/ for a fixed time and prints executions per target.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET=60] [TARGET...]     (default: every target)
#
# Needs the nightly toolchain; installs cargo-fuzz from crates.io when it is missing (it is not
# part of setup or CI). The working corpus is fuzz/corpus/<target> (git-ignored), seeded from
# fuzz/seeds/<target>, fuzz/regressions/<target> and, for geo_index, the built assets/geo/index.bin.
# A crash, timeout or out-of-memory input is copied to fuzz/regressions/<target>/ — commit it with
# the fix; tests/fuzz_regressions.rs replays it under plain `cargo test` — and the script exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

SECONDS_PER_TARGET="${1:-60}"
shift || true
if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || [ "$SECONDS_PER_TARGET" -eq 0 ]; then
  echo "usage: bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
  exit 2
fi
ALL=$(cd fuzz/fuzz_targets && ls -- *.rs | sed 's/\.rs$//')
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS <<<"$ALL"
fi
for t in "${TARGETS[@]}"; do
  if ! grep -qx -- "$t" <<<"$ALL"; then
    echo "unknown target $t; targets: $(echo $ALL)" >&2
    exit 2
  fi
done

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "cargo fuzz needs the nightly toolchain (rustup toolchain install nightly)" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

# libFuzzer flags: -timeout turns a slow input (e.g. super-linear growth) into a finding;
# -rss_limit_mb an unbounded allocation. Overflow checks and debug assertions stay on
# (cargo fuzz's default build), so arithmetic overflow on crafted input is a finding too.
FLAGS=(-max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1)
LOGS=fuzz/target/logs
mkdir -p "$LOGS"
# Start from the worker's own lock file so the fuzzed dependencies are the versions it ships
# (cargo only adds libfuzzer-sys and its few dependencies); fuzz/Cargo.lock is git-ignored.
cp Cargo.lock fuzz/Cargo.lock
echo "== building fuzz targets (cargo +nightly fuzz build)"
cargo +nightly fuzz build

declare -A EXECS RATE RESULT
failed=0
for t in "${TARGETS[@]}"; do
  corpus="fuzz/corpus/$t"
  artifacts="fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  for d in "fuzz/seeds/$t" "fuzz/regressions/$t"; do
    [ -d "$d" ] && cp -n "$d"/* "$corpus"/ 2>/dev/null || true
  done
  if [ "$t" = geo_index ] && [ -f assets/geo/index.bin ]; then
    cp -n assets/geo/index.bin "$corpus/real-index.bin"
  fi
  before=$(ls "$artifacts")
  echo "== $t: ${SECONDS_PER_TARGET}s"
  set +e
  cargo +nightly fuzz run "$t" "$corpus" -- "${FLAGS[@]}" >"$LOGS/$t.log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$LOGS/$t.log" | tail -1)
  [ -n "$execs" ] || execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$LOGS/$t.log" | tail -1)
  EXECS[$t]="${execs:-?}"
  RATE[$t]=$(sed -n 's/^stat::average_exec_per_sec: *\([0-9]*\).*/\1/p' "$LOGS/$t.log" | tail -1)
  new=$(comm -13 <(echo "$before" | sort) <(ls "$artifacts" | sort))
  if [ $rc -ne 0 ] || [ -n "$new" ]; then
    failed=1
    RESULT[$t]="FAIL (exit $rc)"
    mkdir -p "fuzz/regressions/$t"
    for f in $new; do
      cp "$artifacts/$f" "fuzz/regressions/$t/$f"
      echo "   kept fuzz/regressions/$t/$f"
    done
    grep -E '^(thread .* panicked|==[0-9]+==ERROR|SUMMARY)' "$LOGS/$t.log" | head -5 | sed 's/^/   /' || true
    echo "   log: $LOGS/$t.log"
  else
    RESULT[$t]="ok"
  fi
done

echo
echo "fuzz run $(date -u +%Y-%m-%d), ${SECONDS_PER_TARGET}s per target, $(nproc) cores"
printf '| %-18s | %12s | %9s | %s |\n' target execs execs/s result
printf '|%s|%s|%s|%s|\n' "--------------------" "-------------:" "----------:" "--------"
for t in "${TARGETS[@]}"; do
  printf '| %-18s | %12s | %9s | %s |\n' "$t" "${EXECS[$t]}" "${RATE[$t]:-?}" "${RESULT[$t]}"
done
exit $failed
