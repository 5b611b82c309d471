#!/usr/bin/env bash
# The node suite (the compiled worker in workerd via Miniflare), as scripts/test.sh and
# scripts/flaky.sh run it: writes the TAP of every file to target/node-tests.tap (or $1) and
# exits non-zero if any test failed.
#
# Three lanes. The two 10 000-event fault tests each run alone in a background lane from the
# start (tests/js/notify_queue.test.mjs, whose minutes go waiting on the local stack's Python,
# which the GIL holds to one core, and notify_faults.test.mjs); every other file runs in the
# foreground lane, one after the other: some of them rebuild the worker and its assets in place
# (wrangler's build command), which must not happen while another reads them. The lanes share no
# port, stack or state directory; each file so runs beside others keeping the cores busy, which
# it has to pass anyway (scripts/flaky.sh --load checks a busy machine).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out="${1:-target/node-tests.tap}"
mkdir -p "$(dirname "$out")"
node --test --test-concurrency=1 tests/js/notify_queue.test.mjs > "$out.queue" 2>&1 &
queue_pid=$!
node --test --test-concurrency=1 tests/js/notify_faults.test.mjs > "$out.faults" 2>&1 &
faults_pid=$!
others=()
for f in tests/js/*.test.mjs; do
  case "$f" in tests/js/notify_queue.test.mjs | tests/js/notify_faults.test.mjs) ;; *) others+=("$f") ;; esac
done
# The foreground lane streams to the terminal as it runs; the background lanes' TAP follows.
node --test --test-concurrency=1 "${others[@]}" 2>&1 | tee "$out.rest"
rest_ok=${PIPESTATUS[0]}
wait "$queue_pid"
queue_ok=$?
wait "$faults_pid"
faults_ok=$?
cat "$out.queue" "$out.faults"
cat "$out.rest" "$out.queue" "$out.faults" > "$out"
rm -f "$out.rest" "$out.queue" "$out.faults"
[ "$rest_ok" = 0 ] && [ "$queue_ok" = 0 ] && [ "$faults_ok" = 0 ]
