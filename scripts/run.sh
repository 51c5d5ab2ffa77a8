#!/usr/bin/env bash
# `make run`: the embedded default. Initialises the vault in the checkout on first start
# (the master key is generated, with a printed notice), then runs the daemon in the
# foreground; it prints its socket path. Stop it with Ctrl-C (SIGINT) or SIGTERM.
set -euo pipefail
bin="$1"
data_dir="$2"
export TOKENVAULT_DATA_DIR="$data_dir"

if [ ! -f "$data_dir/vault.db" ]; then
    "$bin" init
fi
socket="$data_dir/run/tokenvault.sock"
cat <<HINT
try, from another terminal:
  curl --unix-socket $socket http://localhost/v1/health
  echo '{"accessToken":"t.demo","refreshToken":"r.demo","expirationTimeout":1800}' | $bin put demo/alice --provider tinkoff-id
  $bin token demo/alice
HINT
# A config file in the data directory is picked up (provider instances, access rules).
if [ -z "${TOKENVAULT_CONFIG:-}" ] && [ -f "$data_dir/config.json" ]; then
    echo "using $data_dir/config.json"
    exec "$bin" serve --config "$data_dir/config.json"
fi
exec "$bin" serve
