#!/usr/bin/env bash
# Benchmark of the daemon's local API over its Unix socket, with Redis on a Unix socket as the
# reference line (docs/benchmarks.md, "Local API over the Unix socket"; issue 3).
#
#   bash scripts/bench-api.sh
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode;
# 2. installs redis-server and redis-tools with apt-get when missing (a benchmark script, not CI);
# 3. seeds 10,000 credentials into a fresh vault, starts `tokenvault serve`, and measures
#    GET /v1/credentials/bench/c<k>/token at 1 and 16 keep-alive connections;
# 4. starts redis-server on a Unix socket only, stores 10,000 keys, and runs
#    `redis-benchmark -t get` at 1 and 16 clients;
# 5. grows the vault to 100,000 credentials, restarts the daemon, requests every credential's
#    token, and reads the daemon's resident memory;
# 6. prints a table comparing both with the goals.
#
# Everything runs on Unix sockets; everything started here is stopped on exit. About 2 minutes
# after the build. Knobs (environment): SCRATCH (build directory, default .build), DURATION and
# WARMUP (seconds per load run, default 10 and 2), CONNECTIONS (default 16), SEED_COUNT (10000),
# RSS_COUNT (100000), RESULTS (also write the summary to this file).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNECTIONS=${CONNECTIONS:-16}
SEED_COUNT=${SEED_COUNT:-10000}
RSS_COUNT=${RSS_COUNT:-100000}
REDIS_REQUESTS_1=${REDIS_REQUESTS_1:-200000}
REDIS_REQUESTS_N=${REDIS_REQUESTS_N:-1500000}

log() { printf '\n== %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------------------------
log "building release binaries (scratch path $SCRATCH)"
swift build -c release --scratch-path "$SCRATCH" --product tokenvault
swift build -c release --scratch-path "$SCRATCH" --product tokenvault-loadgen
BIN=$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)
TOKENVAULT="$BIN/tokenvault"
LOADGEN="$BIN/tokenvault-loadgen"

# --- redis -----------------------------------------------------------------------------------
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    log "installing redis-server and redis-tools"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
    # The Debian package starts a system redis on 127.0.0.1:6379; this script never uses it.
fi

# --- scratch space and clean-up --------------------------------------------------------------
WORK=$(mktemp -d /tmp/tv-bench.XXXXXX)
DATA="$WORK/data"
SOCKET="$WORK/tv.sock"
REDIS_SOCKET="$WORK/redis.sock"
DAEMON_PID=""
REDIS_PID=""

stop_daemon() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID"
        for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$DAEMON_PID" 2>/dev/null && kill -KILL "$DAEMON_PID"
        wait "$DAEMON_PID" 2>/dev/null || true
    fi
    DAEMON_PID=""
}
cleanup() {
    stop_daemon
    if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
        kill -TERM "$REDIS_PID"
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_daemon() {
    TOKENVAULT_LOG_LEVEL=warning "$TOKENVAULT" serve --data-dir "$DATA" --socket "$SOCKET" \
        >"$WORK/daemon.out" 2>"$WORK/daemon.err" &
    DAEMON_PID=$!
    for _ in $(seq 300); do
        grep -q "listening on" "$WORK/daemon.out" 2>/dev/null && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "the daemon did not start:" >&2
    cat "$WORK/daemon.err" >&2
    exit 1
}

# Process CPU time (user + system) in seconds, from /proc/PID/stat.
cpu_seconds() {
    awk -v ticks="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / ticks }' "/proc/$1/stat"
}
status_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

# --- our daemon ------------------------------------------------------------------------------
log "vault with $SEED_COUNT credentials in $DATA"
"$TOKENVAULT" init --data-dir "$DATA" >/dev/null
"$LOADGEN" seed --data-dir "$DATA" --count "$SEED_COUNT" >&2
start_daemon

declare -A OURS SERVER_CORES
for connections in 1 "$CONNECTIONS"; do
    log "tokenvault: $connections connection(s), ${WARMUP} s warm-up + ${DURATION} s"
    cpu_before=$(cpu_seconds "$DAEMON_PID")
    "$LOADGEN" run --socket "$SOCKET" --connections "$connections" --duration "$DURATION" --warmup "$WARMUP" \
        --credentials "$SEED_COUNT" | tee "$WORK/ours-$connections.txt" >&2
    cpu_after=$(cpu_seconds "$DAEMON_PID")
    OURS[$connections]=$(grep '^RESULT ' "$WORK/ours-$connections.txt")
    SERVER_CORES[$connections]=$(awk -v a="$cpu_before" -v b="$cpu_after" -v d="$DURATION" -v w="$WARMUP" \
        'BEGIN { printf "%.2f", (b - a) / (d + w) }')
done
OURS_RSS_10K=$(status_kb "$DAEMON_PID" VmRSS)
stop_daemon

# --- redis -----------------------------------------------------------------------------------
log "redis-server on $REDIS_SOCKET (no TCP port, no persistence)"
redis-server --port 0 --unixsocket "$REDIS_SOCKET" --unixsocketperm 700 --save '' --appendonly no \
    --daemonize no --logfile "$WORK/redis.log" &
REDIS_PID=$!
for _ in $(seq 100); do
    redis-cli -s "$REDIS_SOCKET" ping >/dev/null 2>&1 && break
    sleep 0.1
done
# 10,000 keys of 120 bytes (the size of a typical access token), the keys redis-benchmark -r picks.
VALUE=$(head -c 90 /dev/urandom | base64 -w0 | tr '+/' '-_')
seq 0 $((SEED_COUNT - 1)) | awk -v v="$VALUE" '{ printf "SET key:%012d t.%s\r\n", $1, v }' \
    | redis-cli -s "$REDIS_SOCKET" --pipe >/dev/null
redis-cli -s "$REDIS_SOCKET" dbsize >&2

declare -A REDIS REDIS_CORES
for connections in 1 "$CONNECTIONS"; do
    requests=$REDIS_REQUESTS_N
    [ "$connections" -eq 1 ] && requests=$REDIS_REQUESTS_1
    log "redis-benchmark -t get -c $connections -n $requests -r $SEED_COUNT"
    cpu_before=$(cpu_seconds "$REDIS_PID")
    started=$(date +%s.%N)
    # CSV: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    line=$(redis-benchmark -s "$REDIS_SOCKET" -t get -c "$connections" -n "$requests" -r "$SEED_COUNT" --csv \
        | grep '^"GET"' | tr -d '"')
    finished=$(date +%s.%N)
    cpu_after=$(cpu_seconds "$REDIS_PID")
    echo "$line" >&2
    REDIS[$connections]=$line
    REDIS_CORES[$connections]=$(awk -v a="$cpu_before" -v b="$cpu_after" -v s="$started" -v f="$finished" \
        'BEGIN { printf "%.2f", (b - a) / (f - s) }')
done
REDIS_RSS=$(status_kb "$REDIS_PID" VmRSS)
kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null || true
REDIS_PID=""

# --- memory with RSS_COUNT credentials -------------------------------------------------------
log "growing the vault to $RSS_COUNT credentials"
"$LOADGEN" seed --data-dir "$DATA" --start "$SEED_COUNT" --count $((RSS_COUNT - SEED_COUNT)) >&2
start_daemon
RSS_IDLE=$(status_kb "$DAEMON_PID" VmRSS)
log "tokenvault: reading every one of the $RSS_COUNT tokens, then VmRSS"
"$LOADGEN" run --socket "$SOCKET" --connections "$CONNECTIONS" --duration 6 --warmup 0 \
    --credentials "$RSS_COUNT" --order sequential | tee "$WORK/ours-rss.txt" >&2
OURS_RSS_SWEEP=$(grep '^RESULT ' "$WORK/ours-rss.txt")
RSS_AFTER=$(status_kb "$DAEMON_PID" VmRSS)
RSS_PEAK=$(status_kb "$DAEMON_PID" VmHWM)
stop_daemon

# --- summary ---------------------------------------------------------------------------------
ours_rps_1=$(field "${OURS[1]}" rps)
ours_p50_1=$(field "${OURS[1]}" p50_us)
ours_rps_n=$(field "${OURS[$CONNECTIONS]}" rps)
ours_p99_n=$(field "${OURS[$CONNECTIONS]}" p99_us)
redis_col() { cut -d, -f"$2" <<<"${REDIS[$1]}"; }
ms_to_us() { awk -v ms="$1" 'BEGIN { printf "%.0f", ms * 1000 }'; }
verdict() { awk "BEGIN { exit !($1) }" && echo met || echo missed; }
share=$(awk -v a="$ours_rps_n" -v b="$(redis_col "$CONNECTIONS" 2)" 'BEGIN { printf "%.1f", 100 * a / b }')
rss_mb=$(awk -v kb="$RSS_AFTER" -v peak="$RSS_PEAK" 'BEGIN { printf "%.1f", (kb > peak ? kb : peak) / 1024 }')
errors=$(($(field "${OURS[1]}" errors) + $(field "${OURS[$CONNECTIONS]}" errors) + $(field "$OURS_RSS_SWEEP" errors)))

summary() {
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Linux $(uname -r)"
    echo "Runs: ${WARMUP} s warm-up + ${DURATION} s per tokenvault run; redis-benchmark -n $REDIS_REQUESTS_1 (1 client), -n $REDIS_REQUESTS_N ($CONNECTIONS clients)"
    echo
    echo "| server | connections | requests/s | p50 us | p99 us | p99.9 us | max us | server CPU (cores) |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    for c in 1 "$CONNECTIONS"; do
        echo "| tokenvault GET .../token | $c | $(field "${OURS[$c]}" rps) | $(field "${OURS[$c]}" p50_us) | $(field "${OURS[$c]}" p99_us) | $(field "${OURS[$c]}" p999_us) | $(field "${OURS[$c]}" max_us) | ${SERVER_CORES[$c]} |"
    done
    for c in 1 "$CONNECTIONS"; do
        echo "| redis GET (redis-benchmark) | $c | $(redis_col "$c" 2 | cut -d. -f1) | $(ms_to_us "$(redis_col "$c" 5)") | $(ms_to_us "$(redis_col "$c" 7)") | n/a | $(ms_to_us "$(redis_col "$c" 8)") | ${REDIS_CORES[$c]} |"
    done
    echo
    echo "Load generator CPU: $(field "${OURS[1]}" client_cores) cores at 1 connection, $(field "${OURS[$CONNECTIONS]}" client_cores) at $CONNECTIONS."
    echo "Errors (non-200 or broken connections) in all tokenvault runs: $errors"
    echo "Daemon VmRSS: $((OURS_RSS_10K / 1024)) MB after the $SEED_COUNT-credential runs;" \
        "with $RSS_COUNT credentials $((RSS_IDLE / 1024)) MB at start, $((RSS_AFTER / 1024)) MB after reading all" \
        "$RSS_COUNT tokens ($(field "$OURS_RSS_SWEEP" requests) requests), peak (VmHWM) $((RSS_PEAK / 1024)) MB." \
        "redis-server with $SEED_COUNT keys: $((REDIS_RSS / 1024)) MB."
    echo
    echo "| goal | target | measured | |"
    echo "| --- | --- | --- | --- |"
    echo "| throughput at $CONNECTIONS connections vs redis GET | >= 35% | ${share}% | $(verdict "$share >= 35") |"
    echo "| p99 at $CONNECTIONS connections | < 1000 us | ${ours_p99_n} us | $(verdict "$ours_p99_n < 1000") |"
    echo "| p50 at 1 connection | < 100 us | ${ours_p50_1} us | $(verdict "$ours_p50_1 < 100") |"
    echo "| daemon RSS, $RSS_COUNT credentials | < 64 MB | ${rss_mb} MB | $(verdict "$rss_mb < 64") |"
    echo "| errors | 0 | $errors | $(verdict "$errors == 0") |"
    echo
    echo "1 connection: tokenvault ${ours_rps_1} req/s vs redis $(redis_col 1 2 | cut -d. -f1) req/s."
}
log "summary"
if [ -n "${RESULTS:-}" ]; then summary | tee "$RESULTS"; else summary; fi
