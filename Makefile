# The two commands of the README: `make run` and `make test`. Both install missing system
# packages first (scripts/install-deps.sh, apt-get with sudo when not root).

SWIFT ?= swift
DATA_DIR ?= $(CURDIR)/.tokenvault
BIN := .build/debug/tokenvault

.PHONY: deps build run test bench format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build --product tokenvault

# The daemon on the embedded default: vault and key under ./.tokenvault (created on first
# start), socket at ./.tokenvault/run/tokenvault.sock (printed).
run: build
	@bash scripts/run.sh "$(BIN)" "$(DATA_DIR)"

# One build of everything (tests included), then every test: the in-process tests in
# parallel, then the end-to-end tests that run the built binary, then the tests on a
# PostgreSQL server they start (initdb loads both cores for a few seconds; the three-node kill
# test loads them for a minute), then the resilience tests (soak, crashes, outage: each loads
# both cores for up to a minute; their suites run side by side and are tuned for it, so the
# three-node test is not among them). The runs are apart
# because the end-to-end tests wait on child processes, which would starve the in-process tests'
# timers of threads on a small machine, and the last two need the machine to themselves.
POSTGRES_TESTS := StorageContractTests|PostgresChangeTests|ScaleOutTests|ScaleOutResilienceTests|MigrateStoreTests
test:
	@bash scripts/install-deps.sh --test
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel --num-workers 2 --skip 'TokenVaultEndToEndTests|$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --parallel --num-workers 2 --filter TokenVaultEndToEndTests --skip 'ResilienceTests|$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --filter '$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --filter ResilienceTests --skip ScaleOutResilienceTests

bench: deps
	$(SWIFT) build -c release --product tokenvault-bench
	.build/release/tokenvault-bench

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests Plugins Benchmarks

clean:
	rm -rf .build
