#!/usr/bin/env bash
# Builds and tests the Kotlin SDK without Gradle (no Gradle/Maven repository is reachable here):
# kotlinc from the npm package `kotlin-compiler`, OkHttp 3 + Okio + org.json (Android's own, Debian's
# libandroid-json-java) + JUnit 4 from Debian.
#
#   bash clients/kotlin/build.sh            compile (once), then every JUnit test: conformance
#                                           vectors, contract, and the integration tests against
#                                           the compiled worker in workerd + the local stack
#                                           (started by tests/js/kotlin_stack.mjs)
#   bash clients/kotlin/build.sh unit       compile, then the tests that need no server
#   bash clients/kotlin/build.sh compile    compile only
#   bash clients/kotlin/build.sh jar        the library jar alone (build/edge-inbox.jar)
#
# One kotlinc run compiles main and test sources together (a kotlinc start costs ~10 s of JVM
# warm-up), skipped when a stamp of the sources and the compiler version is unchanged.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
source "$ROOT/scripts/env.sh"
MODE="${1:-all}"

KOTLIN_HOME="$ROOT/node_modules/kotlin-compiler"
[ -x "$KOTLIN_HOME/bin/kotlinc" ] || { echo "no kotlinc in $KOTLIN_HOME: run bash scripts/setup.sh" >&2; exit 1; }
J=/usr/share/java
for jar in okhttp.jar okio.jar com.android.json.jar junit4.jar hamcrest-core.jar; do
  [ -f "$J/$jar" ] || { echo "missing $J/$jar: run bash scripts/setup.sh" >&2; exit 1; }
done
LIB_CP="$J/okhttp.jar:$J/okio.jar:$J/com.android.json.jar:$KOTLIN_HOME/lib/kotlinx-coroutines-core-jvm.jar"
TEST_CP="$J/junit4.jar:$J/hamcrest-core.jar:$KOTLIN_HOME/lib/kotlin-test.jar:$KOTLIN_HOME/lib/kotlin-test-junit.jar"
RUN_CP="$KOTLIN_HOME/lib/kotlin-stdlib.jar:$LIB_CP:$TEST_CP"
OUT="$HERE/build"
KOTLINC_FLAGS=(-jvm-target 11 -no-reflect -Werror -module-name edge-inbox)
# kotlinc's JVM: C1 only and a larger heap. A one-shot compile ends before C2 pays off; measured
# here on this module: 18 s of CPU instead of 52 s with kotlinc's defaults (-Xmx512M, C2).
KOTLINC_JAVA_OPTS="${KOTLINC_JAVA_OPTS:--Xmx1G -Xms256M -XX:+UseParallelGC -XX:TieredStopAtLevel=1}"

if [ "$MODE" = jar ]; then
  rm -rf "$OUT/jar-classes" && mkdir -p "$OUT/jar-classes"
  JAVA_OPTS="$KOTLINC_JAVA_OPTS" "$KOTLIN_HOME/bin/kotlinc" "${KOTLINC_FLAGS[@]}" -cp "$LIB_CP" -d "$OUT/jar-classes" $(find "$HERE/src/main" -name '*.kt' | sort)
  (cd "$OUT/jar-classes" && rm -f "$OUT/edge-inbox.jar" && jar --create --file "$OUT/edge-inbox.jar" --date=2026-01-01T00:00:00Z .)
  echo "$OUT/edge-inbox.jar"
  exit 0
fi

SOURCES=$(find "$HERE/src/main" "$HERE/src/test" -name '*.kt' | sort)
STAMP="$( (cat "$KOTLIN_HOME/build.txt"; echo "${KOTLINC_FLAGS[*]}"; for f in $SOURCES; do echo "$f"; cat "$f"; done) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$OUT/classes.stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "== kotlinc (main + test, $(echo "$SOURCES" | wc -l) files)"
  rm -rf "$OUT/classes" && mkdir -p "$OUT/classes"
  start=$(date +%s)
  JAVA_OPTS="$KOTLINC_JAVA_OPTS" "$KOTLIN_HOME/bin/kotlinc" "${KOTLINC_FLAGS[@]}" -cp "$LIB_CP:$TEST_CP" -d "$OUT/classes" $SOURCES
  echo "kotlinc: $(( $(date +%s) - start )) s"
  echo "$STAMP" > "$OUT/classes.stamp"
fi
[ "$MODE" = compile ] && exit 0

JAVA_CMD=(java -Dinbox.root="$ROOT" -cp "$OUT/classes:$RUN_CP" dev.edgegeonotify.inbox.TestMain)
case "$MODE" in
  unit) INBOX_TESTS=unit "${JAVA_CMD[@]}" ;;
  all) node "$ROOT/tests/js/kotlin_stack.mjs" "${JAVA_CMD[@]}" ;;
  *) echo "unknown mode $MODE" >&2; exit 2 ;;
esac
