#!/usr/bin/env bash
# Installs the system packages TokenVault builds against, only when they are missing.
# Used by `make run`, `make test` (with --test) and `make deb` (with --deb); safe to run repeatedly.
set -euo pipefail

packages=(pkg-config libsodium-dev libsqlite3-dev curl)
# `--deb` (`make deb`): what building and checking the Debian package takes: dpkg-shlibdeps
# (dpkg-dev), strip (binutils), lintian, and libcurl's development files (the static
# FoundationNetworking that tokenvault-mcp links names -lcurl).
deb_packages=(dpkg-dev binutils lintian libcurl4-openssl-dev)
# `--test`: also what the tests start themselves (PostgreSQL's server binaries: initdb, pg_ctl,
# psql; the tests run their own throwaway server and never use a system cluster), libfaketime
# (a daemon whose clock is minutes off, for the lease tests), Python's venv (the mcp client and
# the Python client's tests install into environments of the build directory), Go (the Go
# client's tests), the JDK and JUnit 5 (the Java client's), TypeScript's compiler (the Node
# client's) and the packaging tools PackagingTests runs.
case "${1:-}" in
--test) packages+=(postgresql faketime python3-venv golang-go openjdk-17-jdk-headless junit5 node-typescript
    "${deb_packages[@]}") ;;
--deb) packages+=("${deb_packages[@]}") ;;
esac
missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
# `--test`: Python packages from PyPI the tests use as real peers, in a virtual environment of
# the build directory, so the system's Python is left as it is: `mcp` (a real MCP client for the
# tests of `tokenvault mcp`) and Authlib with Flask (scripts/authorization-server.py, a real
# authorization server for sign-ins; also the README's walk-through).
install_test_packages() {
    local venv=".build/test-venv"
    if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import mcp, authlib, flask" 2>/dev/null; then return 0; fi
    echo "installing the mcp, authlib and flask Python packages into $venv"
    mkdir -p .build
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check mcp "authlib==1.9.10" "flask==3.1.3"
}
install_system_packages() {
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: missing system packages (${missing[*]}) and apt-get is not available; install them by hand" >&2
        exit 1
    fi
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "error: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
        sudo="sudo"
    fi
    echo "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
# `--test`: the Node client's tests need Node 20 or newer with npm. Debian 12's own `nodejs` is 18
# and comes without npm, so it is not installed from here: NodeSource's `nodejs` 20 is (on the
# machines this project builds on, it is there already). Said now, not after every other test.
check_node() {
    local major
    major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if [ "$major" -lt 20 ] || ! command -v npm >/dev/null 2>&1; then
        echo "error: the Node client's tests need Node 20 or newer with npm, and this machine has" \
            "$(node --version 2>/dev/null || echo 'no node')$(command -v npm >/dev/null 2>&1 || echo ', no npm'):" \
            "install NodeSource's nodejs 20 (https://github.com/nodesource/distributions)" >&2
        exit 1
    fi
}
install_system_packages
if [ "${1:-}" = "--test" ]; then
    install_test_packages
    check_node
fi
