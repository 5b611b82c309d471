#!/usr/bin/env bash
# The node suite (the compiled worker in workerd via Miniflare), as scripts/test.sh and
# scripts/flaky.sh run it: writes the TAP of every file to target/node-tests.tap (or $1) and
# exits non-zero if any test failed.
#
# The queue fault test (tests/js/notify_queue.test.mjs) spends its minutes waiting on the local
# stack's Python, which the GIL holds to one core, so it runs beside the other files instead of
# after them. The rest of the suite then runs with about one core busy, which it has to pass
# anyway (scripts/flaky.sh --load checks exactly that).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out="${1:-target/node-tests.tap}"
mkdir -p "$(dirname "$out")"
queue_test=tests/js/notify_queue.test.mjs
node --test --test-concurrency=1 "$queue_test" > "$out.queue" 2>&1 &
queue_pid=$!
others=()
for f in tests/js/*.test.mjs; do [ "$f" = "$queue_test" ] || others+=("$f"); done
# The other files stream to the terminal as they run; the queue file's TAP follows them.
node --test --test-concurrency=1 "${others[@]}" 2>&1 | tee "$out.rest"
rest_ok=${PIPESTATUS[0]}
wait "$queue_pid"
queue_ok=$?
cat "$out.queue"
cat "$out.rest" "$out.queue" > "$out"
rm -f "$out.rest" "$out.queue"
[ "$rest_ok" = 0 ] && [ "$queue_ok" = 0 ]
