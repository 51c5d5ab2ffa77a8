# The two commands of the README: `make run` and `make test`. Both install missing system
# packages first (scripts/install-deps.sh, apt-get with sudo when not root).

SWIFT ?= swift
DATA_DIR ?= $(CURDIR)/.tokenvault
BIN := .build/debug/tokenvault

.PHONY: deps build run test bench format clean

deps:
	@bash scripts/install-deps.sh

build: deps
	$(SWIFT) build

# Until the daemon lands (issue 3): initialise the embedded default vault and show a
# store/read round trip with a sample T-ID payload.
run: build
	@bash scripts/demo.sh "$(BIN)" "$(DATA_DIR)"

# One build of everything (tests included), then every test.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel --num-workers 2

bench: deps
	$(SWIFT) build -c release --product tokenvault-bench
	.build/release/tokenvault-bench

format:
	$(SWIFT) format --in-place --recursive --configuration .swift-format Package.swift Sources Tests Plugins Benchmarks

clean:
	rm -rf .build
