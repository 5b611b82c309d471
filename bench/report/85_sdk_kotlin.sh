#!/usr/bin/env bash
# Section: the Kotlin SDK (clients/kotlin): store apply time on the JVM, cold start from
# persisted state vs a full reload and create → badge → item-in-store latency against the worker
# in workerd, the conformance vectors and interleaving runs (counted by the suites themselves),
# and the library's jar size.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/env.sh
bash clients/kotlin/build.sh compile >&2
bash clients/kotlin/build.sh jar >&2
K=node_modules/kotlin-compiler/lib
J=/usr/share/java
CP="clients/kotlin/build/classes:$K/kotlin-stdlib.jar:$K/kotlinx-coroutines-core-jvm.jar:$J/okhttp.jar:$J/okio.jar:$J/com.android.json.jar:$J/junit4.jar:$J/hamcrest-core.jar"
jar_bytes=$(stat -c %s clients/kotlin/build/edge-inbox.jar)
cat <<MD
## Kotlin SDK (clients/kotlin)

Written by \`bench/report/85_sdk_kotlin.sh\` on $(date -u +%Y-%m-%d) ($(java -version 2>&1 | head -1),
kotlinc $(cat node_modules/kotlin-compiler/build.txt); load average at start $(cut -d' ' -f1-3 /proc/loadavg): on a
shared 2-core VM the p95 column is mostly other processes).

A change-feed page of 100 entries (80 changed items, 40 of them with a new revision, 10 new,
10 tombstones) applied to a store of 10 000 items, 300 pages, the first 100 as JIT warm-up
(\`Bench store\`), and what persisting each change costs: the whole store rendered as JSON (what
the client wrote on every change until issue 41, then with a hand-written writer; here with
org.json, which now renders only a compaction's snapshot) against the change's own journal lines
(what a change appends now; the file is a snapshot line plus these lines):

MD
java -cp "$CP" dev.edgegeonotify.inbox.Bench store
cat <<MD

Cold start against the compiled worker in workerd with the local stack (\`Bench coldstart\`,
through \`tests/js/kotlin_stack.mjs\`):

MD
node tests/js/kotlin_stack.mjs java -cp "$CP" dev.edgegeonotify.inbox.Bench coldstart 2>/dev/null | grep -v '^{"rid"'
cat <<MD

Create → badge → item in the store, against the same stack (\`Bench latency\`): a started client
(live, socket open); the service posts a create; timed from just before the POST until the
client's state (its StateFlow) first shows the new counts, then the new item:

MD
node tests/js/kotlin_stack.mjs java -cp "$CP" dev.edgegeonotify.inbox.Bench latency 2>/dev/null | grep -v '^{"rid"'
cat <<MD

Correctness, counted from the suites' own runs (\`Bench harness\`: JUnit's result per vector file,
and the seeded interleaving harness's runs with its invariants: at most one request in flight,
every operation applied once and in order on the model server, no spurious rollback, no confirmed
delete shown again, nothing left queued, device items and unread equal to the server's at the end):

MD
java -cp "$CP" dev.edgegeonotify.inbox.Bench harness 2>/dev/null
cat <<MD

Library jar (\`clients/kotlin/build.sh jar\`, classes only, no dependencies): $jar_bytes bytes.
MD
