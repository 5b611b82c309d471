#!/usr/bin/env bash
# Repeat runner for hunting flaky tests (not part of .ci/run): runs `cargo test` and the node
# suite N times and prints every test that failed, with how often.
#   bash scripts/flaky.sh N [--load] [--cargo-only | --node-only] [-- CARGO_TEST_ARGS...]
#   bash scripts/flaky.sh 20 --cargo-only -- --test notify_stack
#   bash scripts/flaky.sh 3 --load          # with a CPU hog on one core, as on a busy machine
# Logs of failed runs are kept in target/flaky/. Exits non-zero if any run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
usage() { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] && [[ "$1" =~ ^[0-9]+$ ]] || usage
runs=$1; shift
load=0; cargo_on=1; node_on=1; cargo_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --load) load=1 ;;
    --cargo-only) node_on=0 ;;
    --node-only) cargo_on=0 ;;
    --) shift; cargo_args=("$@"); break ;;
    *) usage ;;
  esac
  shift
done
out=target/flaky; rm -rf "$out"; mkdir -p "$out"
failures="$out/failures.txt"; : > "$failures"

hog=""
stop_hog() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; hog=""; }
trap stop_hog EXIT
if [ "$load" = 1 ]; then
  # One core kept busy for the whole run (a spinning shell, no I/O).
  bash -c 'while :; do :; done' & hog=$!
  echo "[flaky] CPU hog on one core (pid $hog)"
fi

# Build once up front so compile errors are not counted as test failures.
if [ "$cargo_on" = 1 ]; then
  cargo test --no-run -q "${cargo_args[@]}" >/dev/null 2>&1 || { echo "[flaky] cargo test does not build"; exit 1; }
fi
if [ "$node_on" = 1 ]; then bash scripts/build-worker.sh >/dev/null || exit 1; fi

red=0
for i in $(seq 1 "$runs"); do
  if [ "$cargo_on" = 1 ]; then
    log="$out/cargo-$i.log"; t0=$(date +%s)
    if cargo test --no-fail-fast "${cargo_args[@]}" > "$log" 2>&1; then
      echo "[flaky] cargo run $i/$runs: ok ($(( $(date +%s) - t0 )) s)"; rm -f "$log"
    else
      red=$((red + 1))
      # "Running tests/x.rs (…)" names the binary; "test name ... FAILED" the test.
      awk '/^ *Running /{bin=$2} / \.\.\. FAILED$/{print "cargo " bin " " $2}' "$log" | tee -a "$failures" \
        | sed 's/^/[flaky]   failed: /'
      echo "[flaky] cargo run $i/$runs: FAILED (log $log)"
    fi
  fi
  if [ "$node_on" = 1 ]; then
    log="$out/node-$i.tap"; t0=$(date +%s)
    # As scripts/test.sh runs it (the two fault tests each in a lane beside the other files).
    if bash scripts/node-tests.sh "$log" > "$log.out" 2>&1; then rm -f "$log.out"
      echo "[flaky] node run $i/$runs: ok ($(( $(date +%s) - t0 )) s)"; rm -f "$log"
    else
      red=$((red + 1))
      # A top-level "not ok N - name" and the file from its YAML block's `location:`.
      awk '/^not ok [0-9]+ - /{name=$0; sub(/^not ok [0-9]+ - /,"",name); p=1; next}
           p && /^ +location: /{l=$0; sub(/^.*location: \047/,"",l); sub(/:[0-9]+:[0-9]+\047.*$/,"",l);
                                n=split(l,a,"/"); print "node " a[n] " " name; p=0}
           p && /^  \.\.\.$/{print "node ? " name; p=0}' "$log" \
        | tee -a "$failures" | sed 's/^/[flaky]   failed: /'
      echo "[flaky] node run $i/$runs: FAILED (log $log)"
    fi
  fi
done
echo "[flaky] $red red run(s) of $(( runs * (cargo_on + node_on) ))$([ "$load" = 1 ] && echo ', under load')"
if [ -s "$failures" ]; then
  echo "[flaky] failures by test (count, suite, binary/file, test):"
  sort "$failures" | uniq -c | sort -rn
  exit 1
fi
