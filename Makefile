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
# (scripts/build-checked.sh), then every test, a phase per test target (a suite belongs to the
# target of its phase, so none slips into another):
# 1. the in-process tests, in parallel;
# 2. TokenVaultEndToEndTests, the built binary run as a user would: apart from the first,
#    because they wait on child processes, which would starve the in-process tests' timers of
#    threads on a small machine;
# 3. TokenVaultPostgresTests, everything that starts a PostgreSQL server (initdb loads both cores
#    for a few seconds, the three-node kill test for a minute; TestPostgres refuses a suite of
#    another target);
# 4. TokenVaultResilienceTests (soak, crashes, key operations under load: each loads both cores
#    for up to a minute): the soak alone first, since its reads-served floor needs both cores,
#    then the others side by side;
# then the Python, Go, Java and Node clients' tests against the built daemon, the four side by
# side (scripts/test-clients.sh).
test:
	@bash scripts/install-deps.sh --test
	SWIFT=$(SWIFT) bash scripts/build-checked.sh --build-tests
	$(SWIFT) build --product generate-manual
	$(SWIFT) test --skip-build --parallel --num-workers 2 \
		--skip 'TokenVaultEndToEndTests\.|TokenVaultPostgresTests\.|TokenVaultResilienceTests\.'
	$(SWIFT) test --skip-build --parallel --num-workers 2 --filter 'TokenVaultEndToEndTests\.'
	$(SWIFT) test --skip-build --filter 'TokenVaultPostgresTests\.'
	$(SWIFT) test --skip-build --filter 'TokenVaultResilienceTests\.ResilienceTests/soak'
	$(SWIFT) test --skip-build --filter 'TokenVaultResilienceTests\.' --skip 'ResilienceTests/soak'
	bash scripts/test-clients.sh

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
