#!/usr/bin/env bash
# Benchmark of the proxy (docs/benchmarks.md, "The proxy"): proxied requests per second
# and latency against the same loopback upstream called directly, in the same run, at 1 and 16
# connections, and the daemon's memory while 100 calls stream 10 MiB answers at once.
#
#   bash scripts/bench-proxy.sh
#
# 1. builds `tokenvault` and `tokenvault-loadgen` in release mode;
# 2. installs nginx with apt-get when missing (a benchmark script, not CI) and starts it on
#    127.0.0.1:$PORT, one worker, serving a 13-byte /hello and a 10 MiB /big; and a second nginx
#    on 127.0.0.1:$((PORT + 1)), one process, that passes every request to the first with an
#    added `Authorization` header over kept connections (`proxy_pass`): what a user could put in
#    front of an API instead of the vault, the reference for the proxy's CPU per call;
# 3. a fresh vault whose instance `bench-api` lists that upstream in `api_base_urls`, with the
#    credential bench/api, and `tokenvault serve`;
# 4. PAIRS times (default 3), alternately: GET /hello directly over TCP, through nginx's
#    proxy_pass, through the vault's proxy (GET /v1/credentials/bench/api/proxy/hello on the
#    socket), then the routed baseline GET /v1/health, at 1 and at 16 keep-alive connections
#    (tokenvault-loadgen; the goals take the median pair); "srv us/req" is the CPU of the process
#    answering (nginx's proxy for nginx-proxy, the daemon otherwise);
# 5. restarts the daemon, makes one proxied call, reads its resident memory, starts 100 curl
#    downloads of /big through the proxy at once, and reads its peak (VmHWM) when they are done;
# 6. prints the pairs, the median pair and the goals.
#
# Knobs (environment): SCRATCH (default .build), DURATION and WARMUP (seconds, default 10 and 2),
# PAIRS (3), PORT (18098), STREAMS (100), RESULTS (also write the summary to this file), BUILD (0:
# use the release binaries already in SCRATCH), DAEMON_ENV (extra environment for the daemon, e.g.
# MALLOC_ARENA_MAX=2).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
PAIRS=${PAIRS:-3}
PORT=${PORT:-18098}
STREAMS=${STREAMS:-100}

# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
if [ "${BUILD:-1}" != 0 ]; then release_build tokenvault tokenvault-loadgen >/dev/null; fi
TOKENVAULT="$SCRATCH/release/tokenvault"
LOADGEN="$SCRATCH/release/tokenvault-loadgen"
if ! command -v nginx >/dev/null 2>&1 && [ ! -x /usr/sbin/nginx ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get install -y -qq --no-install-recommends nginx >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

WORK=$(mktemp -d)
DATA="$WORK/data"
SOCKET="$WORK/tokenvault.sock"
DAEMON_PID=""
NGINX_PID=""
NGINX_PROXY_PID=""
cleanup() {
    stop_daemon
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null || true
    [ -n "$NGINX_PROXY_PID" ] && kill "$NGINX_PROXY_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$WORK/www" "$WORK/nginx"
# nginx's worker runs as another user: it must reach the files (the vault's own directory stays 0700).
chmod 755 "$WORK" "$WORK/www"
printf 'hello, proxy\n' >"$WORK/www/hello"
head -c $((10 << 20)) /dev/zero >"$WORK/www/big"
chmod 644 "$WORK/www/hello" "$WORK/www/big"
cat >"$WORK/nginx.conf" <<EOF
worker_processes 1;
daemon off;
error_log $WORK/nginx/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $WORK/nginx; proxy_temp_path $WORK/nginx; fastcgi_temp_path $WORK/nginx;
    uwsgi_temp_path $WORK/nginx; scgi_temp_path $WORK/nginx;
    server { listen 127.0.0.1:$PORT; root $WORK/www; }
}
EOF
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK/nginx" &
NGINX_PID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/hello" >/dev/null && break; sleep 0.1; done
# The reference proxy: one process (no master), so its pid is the one whose CPU is read.
mkdir -p "$WORK/nginx-proxy"
cat >"$WORK/nginx-proxy.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
error_log $WORK/nginx-proxy/error.log;
pid $WORK/nginx-proxy/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $WORK/nginx-proxy; proxy_temp_path $WORK/nginx-proxy;
    fastcgi_temp_path $WORK/nginx-proxy; uwsgi_temp_path $WORK/nginx-proxy; scgi_temp_path $WORK/nginx-proxy;
    upstream api { server 127.0.0.1:$PORT; keepalive 64; }
    server {
        listen 127.0.0.1:$((PORT + 1));
        location / {
            proxy_pass http://api;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Authorization "Bearer bench-token";
        }
    }
}
EOF
"$NGINX" -c "$WORK/nginx-proxy.conf" -p "$WORK/nginx-proxy" &
NGINX_PROXY_PID=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$((PORT + 1))/hello" >/dev/null && break; sleep 0.1; done

"$TOKENVAULT" init --data-dir "$DATA" >/dev/null 2>&1
cat >"$DATA/config.json" <<EOF
{"providers": {"bench-api": {"kind": "oauth2", "api_base_urls": ["http://127.0.0.1:$PORT"]}},
 "limits": {"max_proxy_calls_per_uid": $((STREAMS + 16))}}
EOF
TOKENVAULT_CONFIG="$DATA/config.json" start_daemon ${DAEMON_ENV:-}
echo '{"access_token":"bench-token","expires_in":86400}' |
    "$TOKENVAULT" put bench/api --provider bench-api --socket "$SOCKET" >/dev/null

run() { # KEY TARGET PATH CONNECTIONS [SERVER_PID]
    measure "$1" "${5:-$DAEMON_PID}" "$LOADGEN" run --socket "$2" --path "$3" --connections "$4" \
        --duration "$DURATION" --warmup "$WARMUP"
}
for pair in $(seq "$PAIRS"); do
    for connections in 1 16; do
        run "direct-$connections-$pair" "tcp:127.0.0.1:$PORT" /hello "$connections"
        run "nginx-proxy-$connections-$pair" "tcp:127.0.0.1:$((PORT + 1))" /hello "$connections" "$NGINX_PROXY_PID"
        run "proxy-$connections-$pair" "$SOCKET" /v1/credentials/bench/api/proxy/hello "$connections"
        # The floor of any routed request (NIO's decoder, the router, the handler task): the proxy
        # cannot be faster than this on the router's path.
        run "health-$connections-$pair" "$SOCKET" /v1/health "$connections"
    done
done

# Memory: a fresh daemon, one call (the upstream client and its pool exist), then STREAMS
# downloads of 10 MiB at once.
stop_daemon
TOKENVAULT_CONFIG="$DATA/config.json" start_daemon ${DAEMON_ENV:-}
curl -s --unix-socket "$SOCKET" -o /dev/null http://localhost/v1/credentials/bench/api/proxy/hello
IDLE_KB=$(status_kb "$DAEMON_PID" VmRSS)
started=$(date +%s.%N)
for _ in $(seq "$STREAMS"); do
    curl -s --unix-socket "$SOCKET" -o /dev/null -w '%{size_download}\n' \
        http://localhost/v1/credentials/bench/api/proxy/big >>"$WORK/sizes" &
done
wait $(jobs -p | grep -v "^$NGINX_PID$" | grep -v "^$NGINX_PROXY_PID$" | grep -v "^$DAEMON_PID$") 2>/dev/null || true
finished=$(date +%s.%N)
PEAK_KB=$(status_kb "$DAEMON_PID" VmHWM)
COMPLETE=$(grep -c "^$((10 << 20))$" "$WORK/sizes" || true)

{
    echo "machine: $(nproc) cores, $(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo) MiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-11s %5s %4s %10s %8s %8s %8s %12s %12s\n' target conns pair "req/s" "p50 us" "p99 us" "srv cores" "srv us/req" "machine cores"
    for pair in $(seq "$PAIRS"); do
        for connections in 1 16; do
            for target in direct nginx-proxy proxy health; do
                key="$target-$connections-$pair"
                line=${RESULT[$key]}
                rps=$(field "$line" rps)
                printf '%-11s %5s %4s %10s %8s %8s %8s %12s %12s\n' "$target" "$connections" "$pair" "$rps" \
                    "$(field "$line" p50_us)" "$(field "$line" p99_us)" "${SERVER_CORES[$key]}" \
                    "$(cpu_per_request "${SERVER_CORES[$key]}" "$rps")" "${MACHINE_CORES[$key]}"
            done
        done
    done
    echo "memory: $STREAMS x 10 MiB through the proxy at once ($COMPLETE complete, $(awk -v a="$started" -v b="$finished" 'BEGIN {printf "%.1f", b - a}') s):" \
        "resident $((IDLE_KB / 1024)) MiB after one call, peak $((PEAK_KB / 1024)) MiB, $(((PEAK_KB - IDLE_KB) / 1024)) MiB more"
} | tee "${RESULTS:-/dev/null}"
