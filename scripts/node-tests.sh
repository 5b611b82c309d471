#!/usr/bin/env bash
# The node suite (the compiled worker in workerd via Miniflare), as scripts/test.sh and
# scripts/flaky.sh run it: writes the TAP of every file to target/node-tests.tap (or $1) and
# exits non-zero if any test failed.
#
# Two lanes. The two 10 000-event fault tests (tests/js/notify_queue.test.mjs, whose minutes go
# waiting on the local stack's Python, which the GIL holds to one core, and
# notify_faults.test.mjs) run one after the other in the background lane; every other file runs
# in the foreground lane beside them. Those files so run with about one core busy, which they
# have to pass anyway (scripts/flaky.sh --load checks exactly that); no file shares a port, a
# stack or a state directory with another.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
out="${1:-target/node-tests.tap}"
mkdir -p "$(dirname "$out")"
heavy=(tests/js/notify_queue.test.mjs tests/js/notify_faults.test.mjs)
node --test --test-concurrency=1 "${heavy[@]}" > "$out.queue" 2>&1 &
queue_pid=$!
others=()
for f in tests/js/*.test.mjs; do
  case " ${heavy[*]} " in *" $f "*) ;; *) others+=("$f") ;; esac
done
# The foreground lane streams to the terminal as it runs; the background lane's TAP follows.
node --test --test-concurrency=1 "${others[@]}" 2>&1 | tee "$out.rest"
rest_ok=${PIPESTATUS[0]}
wait "$queue_pid"
queue_ok=$?
cat "$out.queue"
cat "$out.rest" "$out.queue" > "$out"
rm -f "$out.rest" "$out.queue"
[ "$rest_ok" = 0 ] && [ "$queue_ok" = 0 ]
