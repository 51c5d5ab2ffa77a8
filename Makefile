# The two commands of the README: `make run` and `make test`. Both install missing system
# packages first (scripts/install-deps.sh, apt-get with sudo when not root).

SWIFT ?= swift
DATA_DIR ?= $(CURDIR)/.tokenvault
BIN := .build/debug/tokenvault
VERSION := $(shell sed -n 's/^let tokenVaultVersion = "\(.*\)"$$/\1/p' Sources/tokenvault/ServeCommand.swift)
DEB_DIR ?= .build/deb

.PHONY: deps build run test bench deb format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build --product tokenvault
	$(SWIFT) build --product tokenvault-mcp

# The daemon on the embedded default: vault and key under ./.tokenvault (created on first
# start), socket at ./.tokenvault/run/tokenvault.sock (printed).
run: build
	@bash scripts/run.sh "$(BIN)" "$(DATA_DIR)"

# One build of everything (tests included), which fails on a warning in the project's own code
# (scripts/build-checked.sh), then every test: the in-process tests in
# parallel, then the end-to-end tests that run the built binary, then the tests on a
# PostgreSQL server they start (initdb loads both cores for a few seconds; the three-node kill
# test loads them for a minute), then the resilience tests (soak, crashes, outage: each loads
# both cores for up to a minute; their suites run side by side and are tuned for it, so the
# three-node test and the slow-provider test, which run with the PostgreSQL ones, are not among
# them: beside the soak they took the CPU its readers need). The soak runs on its own first:
# its reads-served floor needs both cores. The runs are apart
# because the end-to-end tests wait on child processes, which would starve the in-process tests'
# timers of threads on a small machine, and the last two need the machine to themselves.
POSTGRES_TESTS := StorageContractTests|WebhookOutboxTests|PostgresChangeTests|PostgresGroupCommitTests|ScaleOutTests|ScaleOutResilienceTests|ScaleOutLeaseTests|ScaleOutLongPauseTests|SlowProviderResilienceTests|MigrateStoreTests
test:
	@bash scripts/install-deps.sh --test
	SWIFT=$(SWIFT) bash scripts/build-checked.sh --build-tests
	$(SWIFT) build --product generate-manual
	$(SWIFT) test --skip-build --parallel --num-workers 2 --skip 'TokenVaultEndToEndTests|$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --parallel --num-workers 2 --filter TokenVaultEndToEndTests --skip 'ResilienceTests|$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --filter '$(POSTGRES_TESTS)'
	$(SWIFT) test --skip-build --filter 'ResilienceTests/soak'
	$(SWIFT) test --skip-build --filter ResilienceTests --skip 'ScaleOutResilienceTests|SlowProviderResilienceTests|ResilienceTests/soak'
	bash scripts/test-python-client.sh
	bash scripts/test-go-client.sh

bench: deps
	$(SWIFT) build -c release --product tokenvault-bench
	.build/release/tokenvault-bench

# The Debian package, .build/deb/tokenvault_<version>-1_<arch>.deb (docs/operations.md): release
# builds of tokenvault and of the tokenvault-mcp beside it, with the Swift runtime linked in (so
# they run without a toolchain) and immediate binding,
# swift-argument-parser's generate-manual for the man page, scripts/make-deb.sh, then lintian,
# which must report no error.
deb:
	@bash scripts/install-deps.sh --deb
	$(SWIFT) build -c release --product tokenvault --static-swift-stdlib -Xlinker -z -Xlinker now
	$(SWIFT) build -c release --product tokenvault-mcp --static-swift-stdlib -Xlinker -z -Xlinker now
	$(SWIFT) build --product generate-manual
	bash scripts/make-deb.sh .build/release/tokenvault $(VERSION) $(DEB_DIR)
	lintian --fail-on error $(DEB_DIR)/tokenvault_$(VERSION)-1_$$(dpkg --print-architecture).deb

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests Plugins Benchmarks

clean:
	rm -rf .build
