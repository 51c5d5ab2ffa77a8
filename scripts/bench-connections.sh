#!/usr/bin/env bash
# What open connections cost the daemon: its resident memory with IDLE idle connections and
# WATCHES watch streams open at once (docs/benchmarks.md, "Open connections").
#
#   bash scripts/bench-connections.sh
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode;
# 2. creates a vault of CREDENTIALS credentials and starts the daemon with its connection caps
#    raised so that one uid may hold everything (limits.max_connections and
#    max_connections_per_uid 8192, max_streams_per_uid 2000) and idle connections kept for
#    10 minutes, the default configuration otherwise;
# 3. reads every credential's token once, then records the daemon's RSS (the baseline);
# 4. `tokenvault-loadgen hold` opens the connections and streams and keeps them HOLD seconds
#    (one heartbeat round at 15 s): RSS once all are open and at the end, the high-water mark;
# 5. closes them, waits 5 s, records RSS again; prints a table.
#
# Knobs (environment): SCRATCH (.build), IDLE (5000), WATCHES (1000), CREDENTIALS (1000), HOLD (20),
# RESULTS (also write the summary here).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
IDLE=${IDLE:-5000}
WATCHES=${WATCHES:-1000}
CREDENTIALS=${CREDENTIALS:-1000}
HOLD=${HOLD:-20}

log() { printf '\n== %s\n' "$*" >&2; }

log "building release binaries (scratch path $SCRATCH)"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
BIN=$(release_build tokenvault tokenvault-loadgen)
TOKENVAULT="$BIN/tokenvault"
LOADGEN="$BIN/tokenvault-loadgen"

WORK=$(mktemp -d /tmp/tv-connections.XXXXXX)
DATA="$WORK/data"
SOCKET="$WORK/tv.sock"
DAEMON_PID=""
HOLD_PID=""
cleanup() {
    [ -n "$HOLD_PID" ] && kill "$HOLD_PID" 2>/dev/null || true
    stop_daemon
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$TOKENVAULT" init --data-dir "$DATA" >/dev/null
"$LOADGEN" seed --data-dir "$DATA" --count "$CREDENTIALS" >&2
cat >"$WORK/config.json" <<JSON
{"limits": {"max_connections": 8192, "max_connections_per_uid": 8192, "max_streams_per_uid": 2000,
            "idle_timeout_seconds": 600}}
JSON
start_daemon TOKENVAULT_CONFIG="$WORK/config.json"
ulimit -n "$(ulimit -Hn)"

log "reading every credential once"
"$LOADGEN" run --socket "$SOCKET" --connections 1 --duration 60 --warmup 0 --order sequential \
    --requests "$CREDENTIALS" --credentials "$CREDENTIALS" >/dev/null
sleep 1
rss_start=$(status_kb "$DAEMON_PID" VmRSS)

log "holding $IDLE idle connections and $WATCHES watch streams for $HOLD s"
"$LOADGEN" hold --socket "$SOCKET" --idle "$IDLE" --watches "$WATCHES" --credentials "$CREDENTIALS" \
    --seconds "$HOLD" >"$WORK/hold.txt" &
HOLD_PID=$!
for _ in $(seq 600); do
    grep -q '^READY' "$WORK/hold.txt" 2>/dev/null && break
    kill -0 "$HOLD_PID" 2>/dev/null || break
    sleep 0.1
done
ready=$(grep '^READY' "$WORK/hold.txt" || true)
[ -n "$ready" ] || { echo "hold did not get ready:" >&2; cat "$WORK/hold.txt" >&2; exit 1; }
rss_open=$(status_kb "$DAEMON_PID" VmRSS)
threads=$(status_kb "$DAEMON_PID" Threads)
fds=$(ls "/proc/$DAEMON_PID/fd" | wc -l)
cpu_before=$(cpu_seconds "$DAEMON_PID")
sleep "$(awk -v h="$HOLD" 'BEGIN { print h - 1 }')"
rss_held=$(status_kb "$DAEMON_PID" VmRSS)
cpu_held=$(awk -v a="$cpu_before" -v b="$(cpu_seconds "$DAEMON_PID")" 'BEGIN { printf "%.2f", b - a }')
wait "$HOLD_PID"
HOLD_PID=""
result=$(grep '^RESULT' "$WORK/hold.txt")
sleep 5
rss_after=$(status_kb "$DAEMON_PID" VmRSS)
hwm=$(status_kb "$DAEMON_PID" VmHWM)
health=$(curl -s --unix-socket "$SOCKET" http://localhost/v1/health | head -c 200)

summary() {
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Linux $(uname -r)"
    echo "Daemon: default configuration but limits.max_connections and max_connections_per_uid 8192," \
        "max_streams_per_uid 2000, idle_timeout_seconds 600; $CREDENTIALS credentials"
    echo "Hold: $ready"
    echo "      $result (after $HOLD s)"
    echo
    echo "| daemon state | RSS MB |"
    echo "| --- | --- |"
    echo "| started, every credential read once | $(awk -v k="$rss_start" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| $IDLE idle connections + $WATCHES watch streams open | $(awk -v k="$rss_open" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| the same after $HOLD s (a heartbeat round) | $(awk -v k="$rss_held" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| 5 s after they closed | $(awk -v k="$rss_after" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo "| high-water mark (VmHWM) | $(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }') |"
    echo
    echo "Per open connection: $(awk -v a="$rss_start" -v b="$rss_held" -v n="$((IDLE + WATCHES))" \
        'BEGIN { printf "%.1f", (b - a) / n }') KB; the daemon had $fds descriptors and $threads threads" \
        "open, and used $cpu_held s of CPU while holding (heartbeats)"
    echo "Health afterwards: $health"
}
summary
[ -n "${RESULTS:-}" ] && summary >"$RESULTS"
exit 0
