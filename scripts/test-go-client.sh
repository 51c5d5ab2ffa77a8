#!/usr/bin/env bash
# The Go client's tests against the daemon `make test` built (clients/go): `go vet`,
# then `go test`, with Debian's golang-go (installed by scripts/install-deps.sh --test). The
# module has no dependencies, so nothing is downloaded. The tests start the daemon themselves.
set -euo pipefail
cd "$(dirname "$0")/../clients/go"
export TOKENVAULT_BIN=${TOKENVAULT_BIN:-$(cd ../.. && pwd)/.build/debug/tokenvault}
# Go's caches in the build directory: nothing outside the checkout, and no $HOME needed.
build=$(cd ../.. && pwd)/.build
export GOCACHE=${GOCACHE:-$build/go-cache} GOPATH=${GOPATH:-$build/go-path}
export GOFLAGS=-mod=mod GOTOOLCHAIN=local GOPROXY=off
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "not gofmt-formatted: $unformatted" >&2; exit 1; }
go vet ./...
go test -count=1 -v ./...
