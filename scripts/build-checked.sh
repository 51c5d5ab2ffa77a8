#!/usr/bin/env bash
# `swift build` with its arguments, failing when the compiler warns about the project's own code
# (Sources, Tests, Benchmarks, Plugins): the project builds without warnings and stays so.
# Dependencies' warnings are theirs. An incremental build shows only what it compiled again; a
# fresh clone (CI) compiles everything, so every warning is seen there.
set -euo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
"${SWIFT:-swift}" build "$@" 2>&1 | tee "$log" || status=$?
[ "$status" -eq 0 ] || exit "$status"
here=$(pwd)
warnings=$(grep -E "^($here/)?(Sources|Tests|Benchmarks|Plugins)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u || true)
if [ -n "$warnings" ]; then
    echo "error: the build warned about the project's own code ($(echo "$warnings" | wc -l) warnings):" >&2
    echo "$warnings" >&2
    exit 1
fi
