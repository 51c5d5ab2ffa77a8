# Shell helpers the benchmark scripts share (scripts/bench-*.sh): the release build, starting and
# stopping the daemon, CPU time from /proc, a measurement, a throwaway PostgreSQL. Sourced, not
# run. The daemon's helpers expect TOKENVAULT (the daemon binary), DATA, SOCKET and WORK to be set
# by the caller; start_daemon sets DAEMON_PID, stop_daemon clears it.

stop_daemon() {
    if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
        kill -TERM "$DAEMON_PID"
        for _ in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$DAEMON_PID" 2>/dev/null && kill -KILL "$DAEMON_PID"
        wait "$DAEMON_PID" 2>/dev/null || true
    fi
    DAEMON_PID=""
}

# start_daemon [VAR=value ...]: extra environment for the daemon (e.g. TOKENVAULT_EVENT_LOOPS=2).
# DAEMON_TAG (optional) names its output files, for several daemons side by side.
start_daemon() {
    local out="$WORK/daemon${DAEMON_TAG:-}.out" err="$WORK/daemon${DAEMON_TAG:-}.err"
    env "$@" TOKENVAULT_LOG_LEVEL=warning "$TOKENVAULT" serve --data-dir "$DATA" --socket "$SOCKET" \
        >"$out" 2>"$err" &
    DAEMON_PID=$!
    for _ in $(seq 300); do
        grep -q "listening on" "$out" 2>/dev/null && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "the daemon did not start:" >&2
    cat "$err" >&2
    exit 1
}

# Process CPU time (user + system) in seconds, from /proc/PID/stat.
cpu_seconds() {
    awk -v ticks="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / ticks }' "/proc/$1/stat"
}
# The whole machine's busy time (every process, all cores) in seconds, from /proc/stat.
machine_seconds() {
    awk -v ticks="$(getconf CLK_TCK)" '$1 == "cpu" { print ($2 + $3 + $4 + $7 + $8 + $9) / ticks }' /proc/stat
}
status_kb() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }
# Cores kept busy: CPU seconds used over wall-clock seconds.
cores() { awk -v a="$1" -v b="$2" -v s="$3" -v f="$4" 'BEGIN { printf "%.2f", (b - a) / (f - s) }'; }
# CPU time per request in microseconds, from cores busy and requests per second.
cpu_per_request() { awk -v cores="$1" -v rps="$2" 'BEGIN { printf "%.0f", (rps > 0 ? cores * 1e6 / rps : 0) }'; }

# Per measurement KEY: RESULT line (loadgen's, or redis-benchmark's CSV), server cores, server
# CPU us per request, and the whole machine's busy cores (server + client + anything else).
declare -A RESULT SERVER_CORES SERVER_CPU_US MACHINE_CORES

# measure KEY SERVER_PID COMMAND...: runs COMMAND, records the server's and the machine's CPU.
measure() {
    local key=$1 pid=$2
    shift 2
    local cpu_before machine_before started cpu_after machine_after finished
    cpu_before=$(cpu_seconds "$pid") machine_before=$(machine_seconds) started=$(date +%s.%N)
    "$@" >"$WORK/run.txt"
    cpu_after=$(cpu_seconds "$pid") machine_after=$(machine_seconds) finished=$(date +%s.%N)
    cat "$WORK/run.txt" >&2
    RESULT[$key]=$(grep -E '^(RESULT |"?GET"?,)' "$WORK/run.txt" | tr -d '"')
    SERVER_CORES[$key]=$(cores "$cpu_before" "$cpu_after" "$started" "$finished")
    MACHINE_CORES[$key]=$(cores "$machine_before" "$machine_after" "$started" "$finished")
}

# --- a throwaway PostgreSQL cluster (scale-out benchmarks) -----------------------------------
# start_postgres DIR: initdb and start a server with default settings (fsync on) listening only
# on a socket in DIR; sets PG_BIN, PG_DATA_DIR and PG_HOST. stop_postgres stops it.
PG_DATA_DIR=""
as_postgres() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
postgres_available() {
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    [ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ]
}
start_postgres() {
    postgres_available || { echo "PostgreSQL is not installed (scripts/install-deps.sh --test)" >&2; exit 1; }
    mkdir -p "$1"
    # initdb and the server refuse to run as root: then as the postgres user.
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$1" && chmod 711 "$(dirname "$1")"; fi
    PG_DATA_DIR="$1/data"
    PG_HOST=$1
    as_postgres "$PG_BIN/initdb" -D "$PG_DATA_DIR" -U postgres --auth-local=trust -E UTF8 --locale=C.UTF-8 \
        >"$1/initdb.log" 2>&1
    as_postgres "$PG_BIN/pg_ctl" -D "$PG_DATA_DIR" -l "$1/server.log" -w \
        -o "-k $1 -c listen_addresses=''" start >/dev/null
    echo "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on a socket in $1 (default settings, fsync on)" >&2
}
stop_postgres() {
    [ -n "$PG_DATA_DIR" ] && as_postgres "$PG_BIN/pg_ctl" -D "$PG_DATA_DIR" -m fast stop >/dev/null 2>&1
    PG_DATA_DIR=""
}
# postgres_url NAME: creates database NAME and prints the URL the daemon takes.
postgres_url() {
    as_postgres "$PG_BIN/createdb" -h "$PG_HOST" -U postgres "$1"
    echo "postgres://postgres@/$1?host=$PG_HOST"
}

# Builds PRODUCTs in release mode under $SCRATCH (default .build), with $BUILD_FLAGS if set
# (more `swift build` flags), the compiler's output on stderr, and prints where the binaries are.
release_build() {
    local product
    for product in "$@"; do
        # shellcheck disable=SC2086 # BUILD_FLAGS is a list of flags
        swift build -c release --scratch-path "${SCRATCH:-.build}" --product "$product" ${BUILD_FLAGS:-} >&2
    done
    # shellcheck disable=SC2086
    swift build -c release --scratch-path "${SCRATCH:-.build}" --show-bin-path ${BUILD_FLAGS:-}
}
