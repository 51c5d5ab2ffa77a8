#!/usr/bin/env bash
# `make run` until the daemon exists: initialise the vault (key generated on first start),
# store a sample T-ID payload, read its access token back, and verify every sealed field.
set -euo pipefail
bin="$1"
data_dir="$2"
export TOKENVAULT_DATA_DIR="$data_dir"

if [ ! -f "$data_dir/vault.db" ]; then
    "$bin" init
fi
echo "== storing demo/alice (a sample T-ID payload; the tokens are fake)"
"$bin" put demo/alice --provider tinkoff-id --label source=make-run --file examples/tinkoff-id-payload.json
echo "== its access token, read back and decrypted"
"$bin" token demo/alice
echo "== every credential"
"$bin" ls
echo "== verify"
"$bin" verify
echo "vault: $data_dir/vault.db (try: $bin --help)"
