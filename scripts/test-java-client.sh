#!/usr/bin/env bash
# The Java client's tests against the daemon `make test` built (clients/java): compiles the client
# with `javac --release 17 -Xlint:all -Werror` into .build/java-client, packs it as a jar as
# `mvn package` would, compiles its JUnit 5 tests against Debian's junit5 jars (installed by
# scripts/install-deps.sh --test) and runs them with JUnit's console launcher. Maven is not used:
# it would download its plugins. The tests start the daemon themselves (TOKENVAULT_BIN picks
# another binary than .build/debug/tokenvault).
set -euo pipefail
cd "$(dirname "$0")/.."
repository=$PWD
export TOKENVAULT_BIN=${TOKENVAULT_BIN:-$repository/.build/debug/tokenvault}
# Debian's openjdk-17-jdk-headless (javac, jar) and junit5, whose console launcher holds the JUnit
# Platform, Jupiter's API and engine, and opentest4j.
command -v java >/dev/null && command -v javac >/dev/null && command -v jar >/dev/null ||
    { echo "no java, javac or jar: apt-get install openjdk-17-jdk-headless" >&2; exit 1; }
# `javac -version` prints "javac 17.0.15" (an old JDK "javac 1.8.0_392", on standard error).
javac_version=$(javac -version 2>&1 | sed -n 's/^javac \([0-9][0-9]*\).*/\1/p' | head -n 1)
if [ -z "$javac_version" ] || [ "$javac_version" -lt 17 ]; then
    echo "javac is $(javac -version 2>&1 | head -n 1), the Java client needs 17 or newer:" \
        "apt-get install openjdk-17-jdk-headless (or put a JDK 17+ first on PATH)" >&2
    exit 1
fi
junit=/usr/share/java/junit-platform-console-standalone.jar
[ -r "$junit" ] || { echo "no $junit: apt-get install junit5" >&2; exit 1; }
out=.build/java-client
rm -rf "$out"
mkdir -p "$out/classes" "$out/test-classes"
find clients/java/src/main/java -name '*.java' | sort >"$out/main-sources"
find clients/java/src/test/java -name '*.java' | sort >"$out/test-sources"
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d "$out/classes" "@$out/main-sources"
jar --create --file "$out/tokenvault-client.jar" -C "$out/classes" .
javac --release 17 -Xlint:all -Werror -encoding UTF-8 -d "$out/test-classes" \
    --class-path "$out/tokenvault-client.jar:$junit" "@$out/test-sources"
# The summary's counts become the plain closing line CI reads ("N passed, N failed"); aborted
# tests (an assumption that did not hold, such as needing root) count as skipped.
set +e
java -Dtokenvault.repository="$repository" -jar "$junit" \
    --class-path "$out/test-classes:$out/tokenvault-client.jar" --select-package dev.tokenvault.client \
    --exclude-engine junit-vintage --disable-banner --disable-ansi-colors --details tree --fail-if-no-tests \
    --reports-dir "$out/reports" 2>&1 | tee "$out/junit.log"
status=${PIPESTATUS[0]}
set -e
count() { sed -n "s/^\[ *\([0-9][0-9]*\) tests $1 *\]\$/\1/p" "$out/junit.log" | tail -n 1; }
succeeded=$(count successful) failed=$(count failed) skipped=$(count skipped) aborted=$(count aborted)
echo "java: ${succeeded:-0} passed, ${failed:-0} failed, $(( ${skipped:-0} + ${aborted:-0} )) skipped"
exit "$status"
