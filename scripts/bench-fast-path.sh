#!/usr/bin/env bash
# What each answer of the event loop's fast path gains (docs/benchmarks.md, "The event loop's
# answers"): the same request answered on the loop and by the router, in the same run, for every
# kind of request the loop answers: a token read, a credential's metadata, a kept page of the
# listing, the health check and the 404 of a path no route has.
#
#   bash scripts/bench-fast-path.sh
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode;
# 2. seeds 1,000 credentials into a fresh vault and starts `tokenvault serve`;
# 3. PAIRS times (default 3), for each request at CONNECTIONS keep-alive connections (default 16,
#    and 1): the request as a caller sends it (answered on the loop), then with
#    `Connection: keep-alive` (`tokenvault-loadgen run --routed`: the loop leaves it to the router);
# 4. prints requests per second and the daemon's CPU per request of each, and the router's cost
#    over the loop's.
#
# Knobs (environment): SCRATCH (build directory, default .build), BUILD (0: use the release
# binaries already in SCRATCH), DURATION and WARMUP (seconds per run, default 5 and 1), PAIRS (3),
# RESULTS (also write the summary to this file). The machine should be otherwise idle.
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
PAIRS=${PAIRS:-3}

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
if [ "${BUILD:-1}" != 0 ]; then release_build tokenvault tokenvault-loadgen >/dev/null; fi
TOKENVAULT="$SCRATCH/release/tokenvault"
LOADGEN="$SCRATCH/release/tokenvault-loadgen"

WORK=$(mktemp -d)
DATA="$WORK/data"
SOCKET="$WORK/tokenvault.sock"
DAEMON_PID=""
cleanup() {
    stop_daemon
    rm -rf "$WORK"
}
trap cleanup EXIT

"$TOKENVAULT" init --data-dir "$DATA" >/dev/null
"$LOADGEN" seed --data-dir "$DATA" --count 1000 >&2
start_daemon
# The listing's page is answered on the loop once it is kept from an earlier read.
curl -sf --unix-socket "$SOCKET" -o /dev/null "http://localhost/v1/credentials?namespace=bench&limit=50"

declare -A PATHS=(
    [token]=/v1/credentials/bench/c7/token
    [show]=/v1/credentials/bench/c7
    [list]="/v1/credentials?namespace=bench&limit=50"
    [health]=/v1/health
    [notfound]=/v1/no-such-route
)
declare -A EXPECT=([token]=200 [show]=200 [list]=200 [health]=200 [notfound]=404)
KINDS=(token show list health notfound)

for pair in $(seq "$PAIRS"); do
    for connections in 16 1; do
        for kind in "${KINDS[@]}"; do
            for way in loop router; do
                flag=()
                [ "$way" = router ] && flag=(--routed)
                measure "$kind-$way-$connections-$pair" "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" \
                    --path "${PATHS[$kind]}" --expect "${EXPECT[$kind]}" --connections "$connections" \
                    --duration "$DURATION" --warmup "$WARMUP" "${flag[@]}"
            done
        done
    done
done

{
    echo "machine: $(nproc) cores, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-9s %5s %4s %10s %10s %14s %14s %8s\n' request conns pair "loop rps" "router rps" "loop us/req" "router us/req" "gain"
    for pair in $(seq "$PAIRS"); do
        for connections in 16 1; do
            for kind in "${KINDS[@]}"; do
                loop=${RESULT[$kind-loop-$connections-$pair]}
                router=${RESULT[$kind-router-$connections-$pair]}
                loop_rps=$(field "$loop" rps) router_rps=$(field "$router" rps)
                loop_us=$(cpu_per_request "${SERVER_CORES[$kind-loop-$connections-$pair]}" "$loop_rps")
                router_us=$(cpu_per_request "${SERVER_CORES[$kind-router-$connections-$pair]}" "$router_rps")
                gain=$(awk -v l="$loop_us" -v r="$router_us" 'BEGIN { printf "%.1fx", (l > 0 ? r / l : 0) }')
                printf '%-9s %5s %4s %10s %10s %14s %14s %8s\n' "$kind" "$connections" "$pair" "$loop_rps" \
                    "$router_rps" "$loop_us" "$router_us" "$gain"
            done
        done
    done
} | tee "${RESULTS:-/dev/null}"
