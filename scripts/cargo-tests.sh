#!/usr/bin/env bash
# Runs the workspace's test binaries, what `cargo test` runs, several at once: cargo runs them one
# after another, and most of them spend their time waiting on a local stack or building an index
# on one thread, so one of the two cores stays idle (measured: the sum of the binaries' times is
# the stage's time). The binaries start their own stacks on free ports and name their temporary
# files by process id, so they can share the machine; each one still runs its tests with two
# threads, as under `cargo test`.
#   bash scripts/cargo-tests.sh [JOBS]      (default 3; needs `cargo test --no-run` done)
# Longest first, by the times of the last run (target/cargo-tests/times.tsv), so the slowest file
# never starts last. Each binary's output goes to target/cargo-tests/NAME.log and is printed, in
# name order, when all are done; the exit status is non-zero if any failed (their names follow).
# The doc tests run after them (`cargo test --doc`). Plain `cargo test` still runs the same tests.
set -uo pipefail
cd "$(dirname "$0")/.."
jobs="${1:-3}"
dir=target/cargo-tests
mkdir -p "$dir"
rm -f "$dir"/*.log "$dir"/*.status
# One line per test binary: name, executable, package directory (cargo runs each binary there).
cargo test --no-run --message-format=json 2>/dev/null \
  | jq -r 'select(.reason == "compiler-artifact" and .executable != null and .profile.test)
           | [(.target.kind[0] + "-" + .target.name), .executable, (.manifest_path | sub("/Cargo.toml$"; ""))]
           | @tsv' > "$dir/binaries.tsv" || { echo "cargo test --no-run failed" >&2; exit 1; }
[ -s "$dir/binaries.tsv" ] || { echo "no test binaries found" >&2; exit 1; }
# Order: last run's seconds, descending; binaries not timed yet go first (they may be slow).
# A clean clone has no last run: it takes the times committed in scripts/cargo-tests.times
# (a run on the reference machine; only the order matters).
[ -s "$dir/times.tsv" ] || cp scripts/cargo-tests.times "$dir/times.tsv"
awk -F'\t' 'FILENAME == ARGV[1] { t[$1] = $2; next } { print (($1 in t) ? t[$1] : 1e9) "\t" $0 }' \
  "$dir/times.tsv" "$dir/binaries.tsv" | sort -t$'\t' -k1,1gr | cut -f2- > "$dir/order.tsv"

run_one() {
  local name="$1" exe="$2" pkg="$3" start ok=0
  start=$(date +%s%N)
  (cd "$pkg" && CARGO_MANIFEST_DIR="$pkg" "$exe" --test-threads=2) > "$dir/$name.log" 2>&1 || ok=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  printf '%s\t%d.%d\n' "$ok" "$((ms / 1000))" "$((ms % 1000 / 100))" > "$dir/$name.status"
}
export -f run_one
export dir
tr '\t' '\n' < "$dir/order.tsv" | xargs -d '\n' -n 3 -P "$jobs" bash -c 'run_one "$@"' _

failed=()
: > "$dir/times.new"
while IFS=$'\t' read -r name exe _; do
  if [ ! -f "$dir/$name.status" ]; then failed+=("$name (did not run)"); continue; fi
  IFS=$'\t' read -r ok secs < "$dir/$name.status"
  printf '%s\t%s\n' "$name" "$secs" >> "$dir/times.new"
  echo "     Running $name (${exe#"$PWD"/}): ${secs} s"
  cat "$dir/$name.log"
  [ "$ok" = 0 ] || failed+=("$name (exit $ok)")
done < <(sort "$dir/binaries.tsv")
mv "$dir/times.new" "$dir/times.tsv"
echo "     Doc-tests"
cargo test --doc 2>&1 || failed+=("doc tests")
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed test binaries: ${failed[*]} (their output is above and in $dir/)"
  exit 1
fi
