#!/usr/bin/env bash
# Benchmark of durable writes through the daemon's socket API: PUT /v1/credentials/bench/c<k>
# from 1 and WRITERS concurrent keep-alive connections (docs/benchmarks.md, "Writes").
# Every put is a FULL commit (it may carry a refresh token); the ledger's group commit lets
# concurrent puts share one fsync.
#
#   bash scripts/bench-writes.sh
#   BASELINE=/path/to/older/tokenvault bash scripts/bench-writes.sh   # before/after, same run
#   FSYNC_DELAY_US=1000 BASELINE=... bash scripts/bench-writes.sh      # as on a disk with 1 ms flushes
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode (and, with FSYNC_DELAY_US, the
#    LD_PRELOAD shim Benchmarks/fsync-delay/fsync_delay.c, which makes every fsync/fdatasync of the
#    daemon take at least that long and counts them);
# 2. for each daemon binary (ours; BASELINE's too when given) creates a vault of COUNT credentials;
# 3. PAIRS times, alternately per binary: PUT at 1 connection, then at WRITERS connections, each a
#    WARMUP + DURATION run on a freshly started daemon, recording requests/s, latency, the daemon's
#    CPU per request and (with the shim) flushes per put;
# 4. prints every run, the median per binary and connection count, and ours against BASELINE.
#
# Knobs (environment): SCRATCH (.build), DURATION (10), WARMUP (2), WRITERS (16), COUNT (1000),
# PAIRS (3), BASELINE (a daemon binary to compare with), FSYNC_DELAY_US (none), RESULTS (also
# write the summary here).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
WRITERS=${WRITERS:-16}
COUNT=${COUNT:-1000}
PAIRS=${PAIRS:-3}
BASELINE=${BASELINE:-}
FSYNC_DELAY_US=${FSYNC_DELAY_US:-}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '\n== %s\n' "$*" >&2; }

log "building release binaries (scratch path $SCRATCH)"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
BIN=$(release_build tokenvault tokenvault-loadgen)
OURS="$BIN/tokenvault"
LOADGEN="$BIN/tokenvault-loadgen"

WORK=$(mktemp -d /tmp/tv-writes.XXXXXX)
DAEMON_PID=""
cleanup() {
    stop_daemon
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

SHIM=()
if [ -n "$FSYNC_DELAY_US" ]; then
    gcc -shared -fPIC -O2 -o "$WORK/fsync_delay.so" Benchmarks/fsync-delay/fsync_delay.c -ldl
    SHIM=(LD_PRELOAD="$WORK/fsync_delay.so" FSYNC_DELAY_US="$FSYNC_DELAY_US" FSYNC_COUNT_FILE="$WORK/fsyncs")
fi
# Successful PUTs the daemon has answered (its own counter, warm-up included).
puts_answered() {
    curl -s --unix-socket "$SOCKET" http://localhost/metrics \
        | awk '/^tokenvault_http_requests_total/ && /method="PUT"/ && /code="200"/ { sum += $NF } END { print sum + 0 }'
}
declare -A FLUSHES_PER_PUT

declare -A BINARY=([ours]="$OURS")
[ -n "$BASELINE" ] && BINARY[baseline]="$BASELINE"
NAMES=(ours)
[ -n "$BASELINE" ] && NAMES+=(baseline)

# One vault per binary, seeded through the ledger's bulk import (the same rows for both).
for name in "${NAMES[@]}"; do
    "${BINARY[$name]}" init --data-dir "$WORK/$name" >/dev/null
    "$LOADGEN" seed --data-dir "$WORK/$name" --count "$COUNT" >&2
done

for pair in $(seq "$PAIRS"); do
    for name in "${NAMES[@]}"; do
        TOKENVAULT=${BINARY[$name]} DATA="$WORK/$name" SOCKET="$WORK/$name.sock"
        for writers in 1 "$WRITERS"; do
            key=$name-$writers-$pair
            rm -f "$WORK/fsyncs"
            start_daemon "${SHIM[@]}"
            log "pair $pair/$PAIRS: $name, PUT from $writers connection(s), ${WARMUP} s warm-up + ${DURATION} s"
            measure "$key" "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --writes --expect 200 \
                --connections "$writers" --duration "$DURATION" --warmup "$WARMUP" --credentials "$COUNT"
            SERVER_CPU_US[$key]=$(cpu_per_request "${SERVER_CORES[$key]}" "$(field "${RESULT[$key]}" rps)")
            puts=$(puts_answered)
            stop_daemon
            FLUSHES_PER_PUT[$key]=n/a
            if [ -s "$WORK/fsyncs" ]; then
                FLUSHES_PER_PUT[$key]=$(awk -v f="$(cat "$WORK/fsyncs")" -v p="$puts" 'BEGIN { printf "%.2f", f / p }')
            fi
        done
    done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
median_of() { for pair in $(seq "$PAIRS"); do field "${RESULT[$1-$pair]}" "$2"; done | median; }
median_cpu() { for pair in $(seq "$PAIRS"); do echo "${SERVER_CPU_US[$1-$pair]}"; done | median; }
errors=0
for key in "${!RESULT[@]}"; do errors=$((errors + $(field "${RESULT[$key]}" errors))); done

summary() {
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Linux $(uname -r)," \
        "$(df -h "$WORK" | awk 'NR == 2 { print $1 }') for the vault"
    echo "Load average (1/5/15 min): $LOAD_BEFORE at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "Runs: PUT /v1/credentials/bench/c<k> (k random below $COUNT, a T-ID payload with a refresh token," \
        "expect 200), ${WARMUP} s warm-up + ${DURATION} s each, $PAIRS rounds alternating the binaries"
    echo "Flushes: $([ -n "$FSYNC_DELAY_US" ] && echo "every fsync/fdatasync of the daemon made to take" \
        "at least $FSYNC_DELAY_US us (LD_PRELOAD shim); flushes per put counted over the daemon's life" \
        || echo "the VM's own disk")"
    echo
    echo "| daemon | round | connections | requests/s | p50 us | p99 us | server cores | server CPU us/request | flushes/put |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    for name in "${NAMES[@]}"; do
        for pair in $(seq "$PAIRS"); do
            for writers in 1 "$WRITERS"; do
                local r=${RESULT[$name-$writers-$pair]}
                echo "| $name | $pair | $writers | $(field "$r" rps) | $(field "$r" p50_us) | $(field "$r" p99_us)" \
                    "| ${SERVER_CORES[$name-$writers-$pair]} | ${SERVER_CPU_US[$name-$writers-$pair]}" \
                    "| ${FLUSHES_PER_PUT[$name-$writers-$pair]} |"
            done
        done
    done
    echo
    echo "| daemon | connections | median requests/s | median p99 us | median server CPU us/request |"
    echo "| --- | --- | --- | --- | --- |"
    for name in "${NAMES[@]}"; do
        for writers in 1 "$WRITERS"; do
            echo "| $name | $writers | $(median_of "$name-$writers" rps) | $(median_of "$name-$writers" p99_us)" \
                "| $(median_cpu "$name-$writers") |"
        done
    done
    echo
    local ours_n
    ours_n=$(median_of "ours-$WRITERS" rps)
    echo "ours at $WRITERS connections / ours at 1: $(awk -v a="$ours_n" -v b="$(median_of ours-1 rps)" \
        'BEGIN { printf "%.1fx", a / b }')"
    if [ -n "$BASELINE" ]; then
        local base_n ratio
        base_n=$(median_of "baseline-$WRITERS" rps)
        ratio=$(awk -v a="$ours_n" -v b="$base_n" 'BEGIN { printf "%.1f", a / b }')
        echo "ours at $WRITERS connections / baseline at $WRITERS: ${ratio}x" \
            "(goal >= 5x the one-fsync-per-put rate: $(awk "BEGIN { exit !($ratio >= 5) }" && echo met || echo missed))"
    fi
    echo "Errors (unexpected status or broken connection): $errors"
}
log "summary"
if [ -n "${RESULTS:-}" ]; then summary | tee "$RESULTS"; else summary; fi
