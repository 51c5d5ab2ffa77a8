#!/usr/bin/env bash
# Benchmark of the daemon's local API over its Unix socket, with Redis on a Unix socket as the
# reference line (docs/benchmarks.md, "Local API over the Unix socket").
#
#   bash scripts/bench-api.sh
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode;
# 2. installs redis-server and redis-tools with apt-get when missing (a benchmark script, not CI);
# 3. starts redis-server on a Unix socket only and stores 10,000 keys;
# 4. seeds 10,000 credentials into a fresh vault and starts `tokenvault serve`;
# 5. PAIRS times (default 3), alternately: GET /v1/credentials/bench/c<k>/token at 1 and 16
#    keep-alive connections, each followed by `redis-benchmark -t get` with as many clients
#    (the VM's speed drifts, so each ratio compares neighbouring runs, and the goals take the
#    median pair); the load generator drives N connections from one polling thread, as
#    redis-benchmark does, and one connection with a blocking send and receive, as a single
#    caller does; then baselines through the same daemon (GET /v1/health, an unknown path's
#    404, the token read with the client modes swapped: one blocking thread per connection
#    at N, the polling thread at 1; and the daemon restarted with an event loop per core
#    instead of the default half);
#    With PostgreSQL installed (POSTGRES=auto, the default; 0 to skip), the same vault is also
#    copied with `tokenvault migrate-store` into a throwaway PostgreSQL cluster and a second
#    daemon serves it: each pair measures that node's token reads too (the same requests, the
#    same run), and two such nodes then measure staleness (`tokenvault-loadgen staleness`: how
#    long one node serves a token after the other replaced it);
# 6. grows the vault to 100,000 credentials, restarts the daemon, requests every credential's
#    token, and reads the daemon's resident memory;
# 7. prints the pairs, a table of the median pair, and the goals.
#
# Everything runs on Unix sockets; everything started here is stopped on exit. About 5 minutes
# after the build. Knobs (environment): SCRATCH (build directory, default .build), BUILD_FLAGS
# (more `swift build` flags, e.g. the package's: --static-swift-stdlib -Xlinker -z -Xlinker now), DURATION and
# WARMUP (seconds per load run, default 10 and 2), CONNECTIONS (default 16), SEED_COUNT (10000),
# RSS_COUNT (100000), BASELINE_DURATION (5), PAIRS (3), RESULTS (also write the summary to this
# file).
# The machine should be otherwise idle: the summary prints the load average, and for every run
# the server's CPU and the whole machine's busy cores (more than server + client = interference).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
BUILD_FLAGS=${BUILD_FLAGS:-}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
CONNECTIONS=${CONNECTIONS:-16}
SEED_COUNT=${SEED_COUNT:-10000}
RSS_COUNT=${RSS_COUNT:-100000}
REDIS_REQUESTS_1=${REDIS_REQUESTS_1:-200000}
REDIS_REQUESTS_N=${REDIS_REQUESTS_N:-1500000}
BASELINE_DURATION=${BASELINE_DURATION:-5}
PAIRS=${PAIRS:-3}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '\n== %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------------------------
log "building release binaries (scratch path $SCRATCH)"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
BIN=$(release_build tokenvault tokenvault-loadgen)
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

PG_DAEMON_PID=""
PG2_DAEMON_PID=""

cleanup() {
    stop_daemon
    for pid in $PG_DAEMON_PID $PG2_DAEMON_PID; do kill -TERM "$pid" 2>/dev/null || true; done
    stop_postgres || true
    if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then
        kill -TERM "$REDIS_PID"
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- redis -----------------------------------------------------------------------------------
log "redis-server on $REDIS_SOCKET (no TCP port, no persistence)"
redis-server --port 0 --unixsocket "$REDIS_SOCKET" --unixsocketperm 700 --save '' --appendonly no \
    --daemonize no --logfile "$WORK/redis.log" &
REDIS_PID=$!
for _ in $(seq 100); do
    redis-cli -s "$REDIS_SOCKET" ping >/dev/null 2>&1 && break
    sleep 0.1
done
# 10,000 keys with 120-byte values (a typical access token), the keys redis-benchmark -r picks.
VALUE=$(head -c 89 /dev/urandom | base64 -w0 | tr '+/' '-_')
seq 0 $((SEED_COUNT - 1)) | awk -v v="$VALUE" '{ printf "SET key:%012d t.%s\r\n", $1, v }' \
    | redis-cli -s "$REDIS_SOCKET" --pipe >/dev/null
echo "redis keys: $(redis-cli -s "$REDIS_SOCKET" dbsize)" >&2

# --- our daemon ------------------------------------------------------------------------------
log "vault with $SEED_COUNT credentials in $DATA"
"$TOKENVAULT" init --data-dir "$DATA" >/dev/null
"$LOADGEN" seed --data-dir "$DATA" --count "$SEED_COUNT" >&2
start_daemon

# --- the same vault on PostgreSQL ------------------------------------------------------------
POSTGRES=${POSTGRES:-auto}
[ "$POSTGRES" = auto ] && { postgres_available && POSTGRES=1 || POSTGRES=0; }
# start_pg_node TAG SOCKET: a daemon on the PostgreSQL vault, its pid in PG_NODE_PID.
start_pg_node() {
    local data=$DATA socket=$SOCKET pid=$DAEMON_PID
    DATA="$WORK/data-pg$1" SOCKET=$2 DAEMON_TAG="-pg$1"
    mkdir -p -m 700 "$DATA"
    cp "$data/master.key" "$DATA/master.key"
    start_daemon TOKENVAULT_STORAGE_URL="$PG_URL"
    PG_NODE_PID=$DAEMON_PID
    DATA=$data SOCKET=$socket DAEMON_PID=$pid DAEMON_TAG=""
}
if [ "$POSTGRES" = 1 ]; then
    log "a throwaway PostgreSQL cluster in $WORK/pg"
    start_postgres "$WORK/pg"
    PG_URL=$(postgres_url bench)
    log "copying the vault to PostgreSQL (tokenvault migrate-store)"
    stop_daemon
    "$TOKENVAULT" migrate-store --from "sqlite:$DATA/vault.db" --to "$PG_URL" --key-file "$DATA/master.key" >&2
    start_daemon
    start_pg_node 1 "$WORK/tv-pg1.sock"
    PG_DAEMON_PID=$PG_NODE_PID
fi

# --- the goal runs: ours and Redis alternately, PAIRS times ----------------------------------
# This VM's speed drifts by tens of percent within minutes; measuring each server right after
# the other, several times, and taking the median pair keeps a slow patch from deciding a ratio.
for pair in $(seq "$PAIRS"); do
    for connections in 1 "$CONNECTIONS"; do
        log "pair $pair/$PAIRS: tokenvault, $connections connection(s), ${WARMUP} s warm-up + ${DURATION} s"
        measure "token-$connections-$pair" "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" \
            --connections "$connections" --duration "$DURATION" --warmup "$WARMUP" --credentials "$SEED_COUNT"
        if [ "$POSTGRES" = 1 ]; then
            log "pair $pair/$PAIRS: tokenvault on PostgreSQL, $connections connection(s)"
            measure "pg-$connections-$pair" "$PG_DAEMON_PID" "$LOADGEN" run --socket "$WORK/tv-pg1.sock" \
                --connections "$connections" --duration "$DURATION" --warmup "$WARMUP" --credentials "$SEED_COUNT"
        fi
        requests=$REDIS_REQUESTS_N
        [ "$connections" -eq 1 ] && requests=$REDIS_REQUESTS_1
        log "pair $pair/$PAIRS: redis-benchmark -t get -c $connections -n $requests -r $SEED_COUNT"
        # CSV: test, rps, avg, min, p50, p95, p99, max (latencies in ms)
        measure "redis-$connections-$pair" "$REDIS_PID" redis-benchmark -s "$REDIS_SOCKET" -t get \
            -c "$connections" -n "$requests" -r "$SEED_COUNT" --csv
    done
done
# Baselines through the same daemon and client, for the analysis and the goals for
# routes other than the token read: the health check (its database read at most once a
# second), an unknown path (the problem+json 404), a credential's metadata and a page of 50.
# The first three are answered on the event loop when they can be (FastTarget).
for baseline in "health-1 /v1/health 200 1" "health-n /v1/health 200 $CONNECTIONS" \
    "notfound-n /v1/no-such-route 404 $CONNECTIONS" "show-n /v1/credentials/bench/c1 200 $CONNECTIONS" \
    "list-n /v1/credentials?namespace=bench&limit=50 200 $CONNECTIONS"; do
    read -r key path expect connections <<<"$baseline"
    log "tokenvault baseline GET $path: $connections connection(s), 1 s warm-up + $BASELINE_DURATION s"
    measure "$key" "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --connections "$connections" \
        --duration "$BASELINE_DURATION" --warmup 1 --path "$path" --expect "$expect"
done
# The same token read with the load generator's other client modes: one blocking thread per
# connection at N (on two cores, N client threads and the daemon's loops compete for time
# slices), and the polling thread at one connection (its wake-up from poll costs the round trip).
log "tokenvault baseline GET .../token, one client thread per connection: 1 s warm-up + $BASELINE_DURATION s"
measure token-threads-n "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --connections "$CONNECTIONS" \
    --duration "$BASELINE_DURATION" --warmup 1 --credentials "$SEED_COUNT" --client threads
log "tokenvault baseline GET .../token, one connection from the polling client: 1 s warm-up + $BASELINE_DURATION s"
measure token-events-1 "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --connections 1 \
    --duration "$BASELINE_DURATION" --warmup 1 --credentials "$SEED_COUNT" --client events
OURS_RSS_10K=$(status_kb "$DAEMON_PID" VmRSS)
stop_daemon
# The daemon with one event loop per core instead of the default half (server.event_loops).
LOOPS_ALL=$(nproc)
start_daemon TOKENVAULT_EVENT_LOOPS="$LOOPS_ALL"
log "tokenvault baseline GET .../token with $LOOPS_ALL event loops: 1 s warm-up + $BASELINE_DURATION s"
measure token-loops-n "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --connections "$CONNECTIONS" \
    --duration "$BASELINE_DURATION" --warmup 1 --credentials "$SEED_COUNT"
stop_daemon
# The daemon without its cache of sealed rows (storage.cache_bytes: 0): every read from SQLite.
echo '{"storage": {"cache_bytes": 0}}' >"$WORK/no-cache.json"
start_daemon TOKENVAULT_CONFIG="$WORK/no-cache.json"
log "tokenvault baseline GET .../token without the cache of rows: 1 s warm-up + $BASELINE_DURATION s"
measure token-nocache-n "$DAEMON_PID" "$LOADGEN" run --socket "$SOCKET" --connections "$CONNECTIONS" \
    --duration "$BASELINE_DURATION" --warmup 1 --credentials "$SEED_COUNT"
stop_daemon

if [ "$POSTGRES" = 1 ]; then
    start_pg_node 2 "$WORK/tv-pg2.sock"
    PG2_DAEMON_PID=$PG_NODE_PID
    log "staleness: node 1 replaces a credential's tokens, node 2 is polled until it serves them"
    "$LOADGEN" staleness --writer "$WORK/tv-pg1.sock" --reader "$WORK/tv-pg2.sock" --rounds 1000 \
        | tee "$WORK/staleness.txt" >&2
    STALENESS=$(grep '^RESULT ' "$WORK/staleness.txt")
    PG_RSS=$(status_kb "$PG_DAEMON_PID" VmRSS)
    for pid in $PG_DAEMON_PID $PG2_DAEMON_PID; do kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; done
    PG_DAEMON_PID="" PG2_DAEMON_PID=""
fi

REDIS_RSS=$(status_kb "$REDIS_PID" VmRSS)
kill -TERM "$REDIS_PID"
wait "$REDIS_PID" 2>/dev/null || true
REDIS_PID=""

# --- memory with RSS_COUNT credentials -------------------------------------------------------
log "growing the vault to $RSS_COUNT credentials"
"$LOADGEN" seed --data-dir "$DATA" --start "$SEED_COUNT" --count $((RSS_COUNT - SEED_COUNT)) >&2
start_daemon
RSS_IDLE=$(status_kb "$DAEMON_PID" VmRSS)
RSS_ANON_IDLE=$(status_kb "$DAEMON_PID" RssAnon)
log "tokenvault: reading every one of the $RSS_COUNT tokens, then VmRSS"
"$LOADGEN" run --socket "$SOCKET" --connections "$CONNECTIONS" --duration 120 --warmup 0 \
    --credentials "$RSS_COUNT" --order sequential --requests "$RSS_COUNT" | tee "$WORK/ours-rss.txt" >&2
OURS_RSS_SWEEP=$(grep '^RESULT ' "$WORK/ours-rss.txt")
RSS_AFTER=$(status_kb "$DAEMON_PID" VmRSS)
RSS_PEAK=$(status_kb "$DAEMON_PID" VmHWM)
# What the process allocated, apart from the pages of its binary and libraries (RssFile).
RSS_ANON_IDLE_AFTER=$(status_kb "$DAEMON_PID" RssAnon)
stop_daemon

# --- summary ---------------------------------------------------------------------------------
N=$CONNECTIONS
# Median of the numbers on standard input (the lower middle one for an even count).
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# Per pair: the throughput ratio at N connections, our p99 at N, our p50 at 1 connection.
declare -A PAIR_SHARE
for pair in $(seq "$PAIRS"); do
    PAIR_SHARE[$pair]=$(awk -v a="$(field "${RESULT[token-$N-$pair]}" rps)" \
        -v b="$(cut -d, -f2 <<<"${RESULT[redis-$N-$pair]}")" 'BEGIN { printf "%.1f", 100 * a / b }')
done
# The pair with the median ratio (N connections) and the one with our median p50 (1 connection)
# stand for the run in the main table.
median_pair() { sort -n -k1,1 | awk '{ p[NR] = $2 } END { print p[int((NR + 1) / 2)] }'; }
PAIR_N=$(for pair in $(seq "$PAIRS"); do echo "${PAIR_SHARE[$pair]} $pair"; done | median_pair)
PAIR_1=$(for pair in $(seq "$PAIRS"); do echo "$(field "${RESULT[token-1-$pair]}" p50_us) $pair"; done | median_pair)
for pick in "$N $PAIR_N" "1 $PAIR_1"; do
    read -r connections pair <<<"$pick"
    for server in token redis; do
        RESULT[$server-$connections]=${RESULT[$server-$connections-$pair]}
        SERVER_CORES[$server-$connections]=${SERVER_CORES[$server-$connections-$pair]}
        MACHINE_CORES[$server-$connections]=${MACHINE_CORES[$server-$connections-$pair]}
    done
done
redis_col() { cut -d, -f"$2" <<<"${RESULT[redis-$1]}"; }
ms_to_us() { awk -v ms="$1" 'BEGIN { printf "%.0f", ms * 1000 }'; }
verdict() { awk "BEGIN { exit !($1) }" && echo met || echo missed; }
for key in "${!RESULT[@]}"; do
    case $key in
    redis-*) rps=$(cut -d, -f2 <<<"${RESULT[$key]}") ;;
    *) rps=$(field "${RESULT[$key]}" rps) ;;
    esac
    SERVER_CPU_US[$key]=$(cpu_per_request "${SERVER_CORES[$key]}" "$rps")
done
ours_p50_1=$(for pair in $(seq "$PAIRS"); do field "${RESULT[token-1-$pair]}" p50_us; done | median)
ours_p99_n=$(for pair in $(seq "$PAIRS"); do field "${RESULT[token-$N-$pair]}" p99_us; done | median)
share=${PAIR_SHARE[$PAIR_N]}
rss_mb=$(awk -v kb="$RSS_AFTER" -v peak="$RSS_PEAK" 'BEGIN { printf "%.1f", (kb > peak ? kb : peak) / 1024 }')
errors=0
for key in "${!RESULT[@]}"; do
    case $key in token-*-* | health-* | notfound-* | show-* | list-*) errors=$((errors + $(field "${RESULT[$key]}" errors))) ;; esac
done
errors=$((errors + $(field "$OURS_RSS_SWEEP" errors)))
declare -A PG_RATIO
pg_ratio=""
if [ "$POSTGRES" = 1 ]; then
    for key in "${!RESULT[@]}"; do
        case $key in pg-*) errors=$((errors + $(field "${RESULT[$key]}" errors))) ;; esac
    done
    for pair in $(seq "$PAIRS"); do
        PG_RATIO[$pair]=$(awk -v a="$(field "${RESULT[pg-$N-$pair]}" rps)" \
            -v b="$(field "${RESULT[token-$N-$pair]}" rps)" 'BEGIN { printf "%.2f", a / b }')
    done
    pg_ratio=$(for pair in $(seq "$PAIRS"); do echo "${PG_RATIO[$pair]}"; done | median)
fi

ours_row() {
    local r=${RESULT[$2]}
    echo "| $1 | $(field "$r" connections) | $(field "$r" rps) | $(field "$r" p50_us) | $(field "$r" p99_us)" \
        "| $(field "$r" p999_us) | $(field "$r" max_us) | ${SERVER_CORES[$2]} | ${SERVER_CPU_US[$2]}" \
        "| ${MACHINE_CORES[$2]} |"
}
redis_row() {
    echo "| redis GET (redis-benchmark) | $1 | $(redis_col "$1" 2 | cut -d. -f1) | $(ms_to_us "$(redis_col "$1" 5)")" \
        "| $(ms_to_us "$(redis_col "$1" 7)") | n/a | $(ms_to_us "$(redis_col "$1" 8)") | ${SERVER_CORES[redis-$1]}" \
        "| ${SERVER_CPU_US[redis-$1]} | ${MACHINE_CORES[redis-$1]} |"
}

summary() {
    echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p' | head -1), Linux $(uname -r)"
    echo "Load average (1/5/15 min): $LOAD_BEFORE at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "Daemon: default configuration (server.event_loops: half the cores, at least 1), except where a row says otherwise"
    echo "Runs: ${WARMUP} s warm-up + ${DURATION} s per tokenvault run (baselines 1 s + ${BASELINE_DURATION} s);" \
        "redis-benchmark -n $REDIS_REQUESTS_1 (1 client), -n $REDIS_REQUESTS_N ($N clients);" \
        "$PAIRS alternating pairs (tokenvault, then Redis), main table: the median pair"
    echo
    echo "| pair | tokenvault req/s, $N conns | redis req/s, $N clients | ratio | tokenvault p99 us, $N conns" \
        "| tokenvault p50 us, 1 conn | redis p50 us, 1 client |"
    echo "| --- | --- | --- | --- | --- | --- | --- |"
    for pair in $(seq "$PAIRS"); do
        echo "| $pair | $(field "${RESULT[token-$N-$pair]}" rps) | $(cut -d, -f2 <<<"${RESULT[redis-$N-$pair]}" | cut -d. -f1)" \
            "| ${PAIR_SHARE[$pair]}% | $(field "${RESULT[token-$N-$pair]}" p99_us)" \
            "| $(field "${RESULT[token-1-$pair]}" p50_us) | $(ms_to_us "$(cut -d, -f5 <<<"${RESULT[redis-1-$pair]}")") |"
    done
    echo
    echo "| server, request | connections | requests/s | p50 us | p99 us | p99.9 us | max us | server cores" \
        "| server CPU us/request | machine busy cores |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    ours_row "tokenvault GET .../token" token-1
    ours_row "tokenvault GET .../token" "token-$N"
    redis_row 1
    redis_row "$N"
    ours_row "baseline: tokenvault GET /v1/health" health-1
    ours_row "baseline: tokenvault GET /v1/health" health-n
    ours_row "baseline: tokenvault GET unknown path (404)" notfound-n
    ours_row "baseline: tokenvault GET /v1/credentials/bench/c1 (show)" show-n
    ours_row "baseline: tokenvault GET /v1/credentials?namespace=bench&limit=50 (list)" list-n
    ours_row "baseline: tokenvault GET .../token, a client thread per connection" token-threads-n
    ours_row "baseline: tokenvault GET .../token, polling client" token-events-1
    ours_row "baseline: tokenvault GET .../token, $LOOPS_ALL event loops" token-loops-n
    ours_row "baseline: tokenvault GET .../token, no cache of rows (storage.cache_bytes 0)" token-nocache-n
    echo
    echo "Load generator CPU: $(field "${RESULT[token-1]}" client_cores) cores at 1 connection," \
        "$(field "${RESULT[token-$N]}" client_cores) at $N."
    echo "Errors (unexpected status or broken connection) in all tokenvault runs: $errors"
    echo "Daemon VmRSS: $((OURS_RSS_10K / 1024)) MB after the $SEED_COUNT-credential runs;" \
        "with $RSS_COUNT credentials $((RSS_IDLE / 1024)) MB at start, $((RSS_AFTER / 1024)) MB after reading all" \
        "$RSS_COUNT tokens once ($(field "$OURS_RSS_SWEEP" requests) requests," \
        "$(field "$OURS_RSS_SWEEP" rps) req/s), peak (VmHWM) $((RSS_PEAK / 1024)) MB;" \
        "of which anonymous (RssAnon, not the binary's and libraries' pages) $((RSS_ANON_IDLE / 1024)) MB at start" \
        "and $((RSS_ANON_IDLE_AFTER / 1024)) MB after." \
        "redis-server with $SEED_COUNT keys: $((REDIS_RSS / 1024)) MB."
    if [ "$POSTGRES" = 1 ]; then
        echo
        echo "Token reads on a PostgreSQL-backed node (the same vault copied with migrate-store; served from its"
        echo "cache of sealed rows) in the same pairs, against the SQLite node's run just before it:"
        echo
        echo "| pair | SQLite req/s, $N conns | PostgreSQL req/s, $N conns | ratio | SQLite p50 us, 1 conn" \
            "| PostgreSQL p50 us, 1 conn | PostgreSQL p99 us, $N conns | PostgreSQL server CPU us/request, $N conns |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
        for pair in $(seq "$PAIRS"); do
            local pg=${RESULT[pg-$N-$pair]}
            echo "| $pair | $(field "${RESULT[token-$N-$pair]}" rps) | $(field "$pg" rps) | ${PG_RATIO[$pair]}x" \
                "| $(field "${RESULT[token-1-$pair]}" p50_us) | $(field "${RESULT[pg-1-$pair]}" p50_us)" \
                "| $(field "$pg" p99_us) | $(cpu_per_request "${SERVER_CORES[pg-$N-$pair]}" "$(field "$pg" rps)") |"
        done
        echo
        echo "Staleness (two PostgreSQL nodes; a replacement on one, polled on the other): $STALENESS"
        echo "PostgreSQL node VmRSS after its runs: $((PG_RSS / 1024)) MB"
    fi
    echo
    echo "| goal | target | measured | |"
    echo "| --- | --- | --- | --- |"
    echo "| throughput at $N connections vs redis GET (median pair) | >= 35% | ${share}% | $(verdict "$share >= 35") |"
    echo "| p99 at $N connections (median of $PAIRS) | < 1000 us | ${ours_p99_n} us | $(verdict "$ours_p99_n < 1000") |"
    echo "| p50 at 1 connection (median of $PAIRS) | < 100 us | ${ours_p50_1} us | $(verdict "$ours_p50_1 < 100") |"
    echo "| daemon RSS, $RSS_COUNT credentials | < 64 MB | ${rss_mb} MB | $(verdict "$rss_mb < 64") |"
    echo "| errors | 0 | $errors | $(verdict "$errors == 0") |"
    local cpu_ratio
    cpu_ratio=$(awk -v a="${SERVER_CPU_US[token-$N]}" -v b="${SERVER_CPU_US[redis-$N]}" \
        'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
    echo "| throughput at $N connections vs redis GET (median pair), second goal | >= 60% | ${share}% |" \
        "$(verdict "$share >= 60") |"
    echo "| server CPU per read at $N connections vs redis's | <= 2.5x | ${cpu_ratio}x" \
        "(${SERVER_CPU_US[token-$N]} against ${SERVER_CPU_US[redis-$N]} us) | $(verdict "$cpu_ratio <= 2.5") |"
    for route in health-n notfound-n show-n; do
        echo "| server CPU per request, $route | <= 30 us | ${SERVER_CPU_US[$route]} us |" \
            "$(verdict "${SERVER_CPU_US[$route]} <= 30") |"
    done
    echo "| server CPU per request, list-n (50 items) | <= 60 us | ${SERVER_CPU_US[list-n]} us |" \
        "$(verdict "${SERVER_CPU_US[list-n]} <= 60") |"
    if [ "$POSTGRES" = 1 ]; then
        echo "| PostgreSQL node vs SQLite node, $N connections (median pair) | >= 0.8x | ${pg_ratio}x |" \
            "$(verdict "$pg_ratio >= 0.8") |"
        local pg_share
        pg_share=$(awk -v a="$(field "${RESULT[pg-$N-$PAIR_N]}" rps)" \
            -v b="$(cut -d, -f2 <<<"${RESULT[redis-$N-$PAIR_N]}")" 'BEGIN { printf "%.1f", 100 * a / b }')
        echo "| PostgreSQL node vs redis GET, $N connections (the median pair) | >= 80% | ${pg_share}% |" \
            "$(verdict "$pg_share >= 80") |"
        local stale_p99
        stale_p99=$(field "$STALENESS" p99_ms)
        echo "| staleness p99 after a change on another node | < 50 ms | ${stale_p99} ms |" \
            "$(verdict "$stale_p99 < 50") |"
    fi
}
log "summary"
if [ -n "${RESULTS:-}" ]; then summary | tee "$RESULTS"; else summary; fi
