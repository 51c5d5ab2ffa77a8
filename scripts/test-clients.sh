#!/usr/bin/env bash
# The four client libraries' suites (Python, Go, Java, Node) against the built daemon, side by
# side: each builds in a place of its own (a directory under .build; Python's package build under
# clients/python) and starts its own daemons and servers on ports of their own, so they share
# nothing but the binary. Each suite's output is printed whole, in a fixed order; the script fails
# if any suite failed, naming it. Interrupted, it stops all four.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=$(mktemp -d)
declare -A pids
stop() {
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
    exit 130
}
trap 'rm -rf "$logs"' EXIT
trap stop INT TERM
# Each suite in a process group of its own, so that stopping it stops what it started.
set -m
for client in python go java node; do
    bash "scripts/test-$client-client.sh" > "$logs/$client.log" 2>&1 &
    pids[$client]=$!
done
set +m
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
