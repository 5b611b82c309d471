#!/usr/bin/env bash
# The node suite (the compiled worker in workerd via Miniflare), as scripts/test.sh and
# scripts/flaky.sh run it: writes the TAP of every file to target/node-tests.tap (or the file
# given) and exits non-zero if any test failed.
#   bash scripts/node-tests.sh [--lane all|heavy|rest|workers|scripted] [--built] [TAP_FILE]
#
# Lanes. `heavy` is the two 10 000-event fault tests (tests/js/notify_queue.test.mjs, whose
# minutes go waiting on the local stack's Python and the queue's retry delays, and
# notify_faults.test.mjs), one after the other; `rest` is every other file, in two lanes at
# once: the files that run the repository's scripts (wrangler builds, deploy.sh, smoke.sh,
# publish-ipdb.sh: they share build/ipdb and the cargo lock, so they go one after another) and
# the files that only start workers (`--lane scripted` and `--lane workers` run one of the two).
# `all` (the default) runs heavy and rest at once. scripts/test.sh starts the heavy lane (it
# waits far more than it computes) and the workers' lane (it needs no cargo) beside the Rust
# compiles, and the scripts' lane, which takes the cargo lock, beside the Rust tests' run. Every file passes with about one core busy beside
# it (scripts/flaky.sh --load checks exactly that); no file shares a port, a stack or a state
# directory with another, and a build beside a running worker changes no file it reads
# (scripts/build-assets.sh replaces only files whose bytes change, by rename).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
lane=all
if [ "${1:-}" = "--lane" ]; then lane="${2:?--lane takes all, heavy, rest, workers or scripted}"; shift 2; fi
# --built: the caller has just built assets/ (scripts/test.sh, right after setup), so the lane
# need not take the cargo lock to check them; build/ is still checked against its stamp, and
# built if stale.
built=0
if [ "${1:-}" = "--built" ]; then built=1; shift; fi
case "$lane" in all|heavy|rest|workers|scripted) ;; *) echo "unknown lane: $lane (all, heavy, rest, workers or scripted)" >&2; exit 2 ;; esac
out="${1:-target/node-tests.tap}"
mkdir -p "$(dirname "$out")"
heavy=(tests/js/notify_queue.test.mjs tests/js/notify_faults.test.mjs)
scripted=() workers=()
for f in tests/js/*.test.mjs; do
  case " ${heavy[*]} " in *" $f "*) continue ;; esac
  if grep -qE 'bash\(|scripts/[a-z-]+\.sh|wrangler' "$f"; then scripted+=("$f"); else workers+=("$f"); fi
done
# build/ up to date before the rest lane starts: the wrangler builds in the scripts' lane are
# then no-ops for build/ (their stamp matches), never a rewrite under a running worker. (The
# heavy lane alone takes build/ as it is: scripts/test.sh starts it right after setup built it,
# beside compiles that hold the cargo lock a build would wait on.)
if [ "$lane" != heavy ] && ! { [ "$built" = 1 ] && bash scripts/build-worker.sh --check > /dev/null; } \
  && ! bash scripts/build-worker.sh > "$out.build" 2>&1; then
  cat "$out.build"; echo "scripts/build-worker.sh failed" >&2; exit 1
fi
rm -f "$out.build"
run_heavy() { node --test --test-concurrency=1 "${heavy[@]}"; }
run_workers() { node --test --test-concurrency=1 "${workers[@]}"; }
run_scripted() { node --test --test-concurrency=1 "${scripted[@]}"; }
# The workers' lane streams to the terminal as it runs; the scripts' lane's TAP follows.
run_rest() {
  run_scripted > "$out.scripted" 2>&1 &
  local scripted_pid=$!
  run_workers 2>&1 | tee "$out.workers"
  local workers_ok=${PIPESTATUS[0]}
  wait "$scripted_pid"
  local scripted_ok=$?
  cat "$out.scripted"
  cat "$out.workers" "$out.scripted" > "$out.rest"
  rm -f "$out.workers" "$out.scripted"
  [ "$workers_ok" = 0 ] && [ "$scripted_ok" = 0 ]
}

case "$lane" in
  heavy) run_heavy > "$out" 2>&1 ;;
  workers) run_workers > "$out" 2>&1 ;;
  scripted) run_scripted > "$out" 2>&1 ;;
  rest) run_rest; ok=$?; mv "$out.rest" "$out"; exit "$ok" ;;
  all)
    run_heavy > "$out.queue" 2>&1 &
    queue_pid=$!
    run_rest
    rest_ok=$?
    wait "$queue_pid"
    queue_ok=$?
    cat "$out.queue"
    cat "$out.rest" "$out.queue" > "$out"
    rm -f "$out.rest" "$out.queue"
    [ "$rest_ok" = 0 ] && [ "$queue_ok" = 0 ]
    ;;
esac
