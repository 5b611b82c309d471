#!/usr/bin/env bash
# Runs the interleaving harness (src/test/.../Interleavings.kt) against the client as it was
# before issue 41 (default: commit 4f720ca), to show what the harness finds there. Not part of
# any suite: the old client has another API, so OldClient.kt adapts it and this script compiles
# the old sources with the harness in a temporary directory.
#   bash clients/kotlin/harness-on-main/run.sh [<commit>]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
REV="${1:-4f720ca}"
K="$ROOT/node_modules/kotlin-compiler"
J=/usr/share/java
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/src" "$TMP/classes"
for f in $(git -C "$ROOT" ls-tree --name-only "$REV" clients/kotlin/src/main/kotlin/dev/edgegeonotify/inbox/); do
  git -C "$ROOT" show "$REV:$f" > "$TMP/src/$(basename "$f")"
done
T="$HERE/../src"
cp "$T/test/kotlin/dev/edgegeonotify/inbox/Sim.kt" "$T/main/kotlin/dev/edgegeonotify/inbox/Clock.kt" "$HERE/OldClient.kt" "$TMP/src/"
# The harness without its adapter of the new client (LaneClient, at the end of the file).
sed '/^\/\*\* The SDK of this tree behind \[HarnessClient\]. \*\//,$d' "$T/test/kotlin/dev/edgegeonotify/inbox/Interleavings.kt" > "$TMP/src/Interleavings.kt"
CP="$J/okhttp.jar:$J/okio.jar:$J/com.android.json.jar:$K/lib/kotlinx-coroutines-core-jvm.jar"
JAVA_OPTS="-Xmx1G -XX:TieredStopAtLevel=1" "$K/bin/kotlinc" -jvm-target 11 -no-reflect -nowarn -cp "$CP" -d "$TMP/classes" "$TMP"/src/*.kt
java -cp "$TMP/classes:$K/lib/kotlin-stdlib.jar:$CP" dev.edgegeonotify.inbox.OldMain
