#!/usr/bin/env bash
# The four client libraries' suites (Python, Go, Java, Node) against the built daemon, side by
# side: each builds into a directory of its own under .build and starts its own daemons and
# servers, so they share nothing but the binary. Each suite's output is printed whole once it
# ends, in a fixed order; the script fails if any suite failed, naming it.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
declare -A pids
for client in python go java node; do
    bash "scripts/test-$client-client.sh" > "$logs/$client.log" 2>&1 &
    pids[$client]=$!
done
failed=()
for client in python go java node; do
    if wait "${pids[$client]}"; then status=passed; else status=failed; failed+=("$client"); fi
    echo "### $client client suite: $status"
    cat "$logs/$client.log"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "client suites failed: ${failed[*]}" >&2
    exit 1
fi
