#!/usr/bin/env bash
# Benchmarks of several daemons on one PostgreSQL vault (docs/benchmarks.md, "PostgreSQL: several
# nodes"). Token reads on a PostgreSQL node against the SQLite node, and staleness
# between nodes, are in scripts/bench-api.sh (same run as the SQLite measurements).
#
#   bash scripts/bench-scale-out.sh
#
# 1. builds `tokenvault` and `tokenvault-refreshbench` in release mode;
# 2. starts a throwaway PostgreSQL cluster (Debian's postgresql, default settings, fsync on,
#    a Unix socket only) and creates one database per trial;
# 3. durable refreshes per second with 1, 2 and 3 daemons on one database against the loopback
#    test provider (`tokenvault-refreshbench nodes`: rotating refresh tokens, reuse detection,
#    COUNT credentials with LIFETIME-second tokens, SECONDS counted after a warm-up);
#    then the same with a provider that takes DELAY seconds to answer and each node's instance
#    limited to DELAYED_CONCURRENCY calls at once (a node then manages at most
#    DELAYED_CONCURRENCY / DELAY refreshes a second, as against a remote provider, and more nodes
#    add capacity until the database or the machine is the limit);
# 4. start-up with STARTUP_COUNT credentials on PostgreSQL (`tokenvault-refreshbench startup
#    --storage-url`: seeded into SQLite, copied with migrate-store, three daemon starts timed to
#    the first healthy answer, RSS and idle CPU).
#
# With REFERENCE set to another `tokenvault` binary (an older build, say), the undelayed trials
# run for it too, in the same run and on the same cluster, before this build's.
#
# Knobs (environment): SCRATCH (build directory, default .build), COUNT (1000), LIFETIME (2),
# SECONDS_COUNTED (20), NODES (1,2,3), DELAY (0.2; 0 skips the delayed trials),
# DELAYED_CONCURRENCY (16), STARTUP_COUNT (1000000; 0 skips), KEEP (a directory kept for the
# 1,000,000-credential SQLite seed between runs).
set -euo pipefail

cd "$(dirname "$0")/.."
SCRATCH=${SCRATCH:-.build}
COUNT=${COUNT:-1000}
LIFETIME=${LIFETIME:-2}
SECONDS_COUNTED=${SECONDS_COUNTED:-20}
NODES=${NODES:-1,2,3}
STARTUP_COUNT=${STARTUP_COUNT:-1000000}
DELAY=${DELAY:-0.2}
DELAYED_CONCURRENCY=${DELAYED_CONCURRENCY:-16}
REFERENCE=${REFERENCE:-}

log() { printf '\n== %s\n' "$*" >&2; }

log "building release binaries (scratch path $SCRATCH)"
# shellcheck source=scripts/bench-lib.sh
source scripts/bench-lib.sh
BIN=$(release_build tokenvault tokenvault-refreshbench)

WORK=$(mktemp -d /tmp/tv-scale.XXXXXX)
cleanup() {
    stop_postgres || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_postgres "$WORK/pg"
trials=$(tr ',' '\n' <<<"$NODES" | wc -l)
# urls PREFIX: one new database per trial.
urls() {
    local list=""
    for trial in $(seq "$trials"); do list="$list${list:+,}$(postgres_url "$1$trial")"; done
    echo "$list"
}

if [ -n "$REFERENCE" ]; then
    log "durable refreshes per second with $NODES node(s) on one database: the reference, $REFERENCE"
    "$BIN/tokenvault-refreshbench" nodes --dir "$WORK/reference" --storage-urls "$(urls reference)" \
        --nodes "$NODES" --count "$COUNT" --lifetime "$LIFETIME" --seconds "$SECONDS_COUNTED" --tokenvault "$REFERENCE"
fi

log "durable refreshes per second with $NODES node(s) on one database"
"$BIN/tokenvault-refreshbench" nodes --dir "$WORK/nodes" --storage-urls "$(urls nodes)" --nodes "$NODES" \
    --count "$COUNT" --lifetime "$LIFETIME" --seconds "$SECONDS_COUNTED"

if [ "$DELAY" != 0 ]; then
    log "the same with a provider answering after $DELAY s, $DELAYED_CONCURRENCY calls at once per node"
    "$BIN/tokenvault-refreshbench" nodes --dir "$WORK/delayed" --storage-urls "$(urls delayed)" --nodes "$NODES" \
        --count "$COUNT" --lifetime "$LIFETIME" --seconds "$SECONDS_COUNTED" \
        --answer-delay "$DELAY" --concurrency "$DELAYED_CONCURRENCY"
fi

if [ "$STARTUP_COUNT" -gt 0 ]; then
    log "start-up with $STARTUP_COUNT credentials on PostgreSQL"
    DIR=${KEEP:-$WORK/startup}
    "$BIN/tokenvault-refreshbench" startup --data-dir "$DIR" --count "$STARTUP_COUNT" \
        --storage-url "$(postgres_url startup)" --due-in 900
fi
