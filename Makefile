# warden's developer and CI entry points. GNU make; `make` alone lists targets.
#
# External programs used by tests and lint are pinned and installed by
# `make deps` (scripts/deps.sh) into $(DEPS); their paths are exported from
# $(DEPS)/env.sh. Variables you may set:
#
#   TAGS=integration   build tags for vet, staticcheck and tests ("" to drop)
#   V=1                print all test output, not only failures
#   FUZZTIME=30s       time per fuzz target (make fuzz)
#   FUZZ=regexp        only fuzz targets whose name matches (make fuzz)
#   KEEP=N             make fuzz keeps up to N found inputs per target in
#                      its package's testdata/fuzz (the committed corpora)
#   VULNDB=URL         vulnerability database of make vuln (default
#                      https://vuln.go.dev; file:///DIR for a local mirror)
#   WARDEN_DEPS_DIR    cache folder for the deps (default .cache/deps)

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
.DELETE_ON_ERROR:

DEPS     := $(or $(WARDEN_DEPS_DIR),$(CURDIR)/.cache/deps)
ENV      := $(DEPS)/env.sh
RESULTS  := $(CURDIR)/.cache/test
# gofmt of the toolchain go.mod selects (a gofmt on PATH may be older).
GOFMT     = $(shell go env GOROOT)/bin/gofmt
TAGS     ?= integration
GOTEST   := go test -count=1 -timeout=20m -tags='$(TAGS)'
TESTSUM_FLAGS := $(if $(filter 1,$(V)),-v)

# Go files to gofmt: everything but caches and testdata fixtures.
GOFILES = $(shell find . \( -name .git -o -name .cache -o -name testdata -o -name node_modules \) -prune \
	-o -name '*.go' -print)

.PHONY: help deps lint test fuzz bench build demo vuln clean

help: ## list targets
	@echo 'usage: make TARGET   (variables: see the top of the Makefile)'
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

deps: ## install pinned Node 22, MCP servers, conformance suite, staticcheck into .cache/deps
	@WARDEN_DEPS_DIR='$(DEPS)' bash scripts/deps.sh

lint: deps ## gofmt -l, go vet, staticcheck (pinned), go mod tidy -diff
	@. '$(ENV)'; rc=0; \
	echo '== gofmt -l'; \
	bad=$$($(GOFMT) -l $(GOFILES)); \
	if [[ -n $$bad ]]; then echo "$$bad"; echo 'gofmt: the files above need gofmt -w'; rc=1; fi; \
	echo "== go vet -tags='$(TAGS)' ./..."; \
	go vet -tags='$(TAGS)' ./... || rc=1; \
	(cd tools && go vet ./...) || rc=1; \
	echo "== staticcheck -tags='$(TAGS)' ./... ($$("$$WARDEN_STATICCHECK" -version | head -1))"; \
	"$$WARDEN_STATICCHECK" -tags='$(TAGS)' ./... || rc=1; \
	(cd tools && "$$WARDEN_STATICCHECK" ./...) || rc=1; \
	echo '== go mod tidy -diff (go.mod and go.sum say exactly what the code imports)'; \
	go mod tidy -diff || { echo 'go mod tidy: run it and commit go.mod and go.sum'; rc=1; }; \
	(cd tools && go mod tidy -diff) || { echo 'tools: go mod tidy: run it in tools/'; rc=1; }; \
	if (( rc )); then echo 'lint: FAILED'; else echo 'lint: ok'; fi; \
	exit $$rc

# Both runs always happen so CI shows every failure; the last line of output
# is the combined "N passed, M failed" over both runs. The raw `go test -json`
# streams are kept in $(RESULTS)/<pid>/ (one folder per run, as several
# people may run make test at once; folders older than a day are removed).
test: deps lint ## lint, then go test and go test -race with WARDEN_REQUIRE_DEPS=1
	@. '$(ENV)'; export WARDEN_REQUIRE_DEPS=1; rc=0; \
	mkdir -p '$(RESULTS)'; find '$(RESULTS)' -mindepth 1 -maxdepth 1 -mtime +0 -exec rm -rf {} +; \
	out="$(RESULTS)/$$$$"; mkdir -p "$$out"; \
	echo "== $(GOTEST) ./..."; \
	$(GOTEST) -json ./... 2>&1 | "$$WARDEN_TESTSUM" $(TESTSUM_FLAGS) -label 'go test' -save "$$out/test.json" || rc=1; \
	echo "== $(GOTEST) -race ./..."; \
	$(GOTEST) -race -json ./... 2>&1 | "$$WARDEN_TESTSUM" $(TESTSUM_FLAGS) -label 'go test -race' -save "$$out/race.json" || rc=1; \
	echo '== go test ./... in tools/'; \
	(cd tools && go test -count=1 ./...) || rc=1; \
	echo "== total (raw go test -json streams in $$out)"; \
	"$$WARDEN_TESTSUM" -total "$$out/test.json" "$$out/race.json" || rc=1; \
	exit $$rc

fuzz: ## run every Fuzz target for FUZZTIME (default 30s) each
	@FUZZTIME='$(or $(FUZZTIME),30s)' FUZZ='$(FUZZ)' KEEP='$(KEEP)' TAGS='$(TAGS)' bash scripts/fuzz.sh

bench: ## run the benchmark harness (go run ./bench)
	@if [[ -f bench/main.go ]]; then go run ./bench; \
	else echo 'bench: bench/main.go does not exist yet; the benchmark harness is still to be written.'; fi

build: ## build bin/warden
	go build -o bin/warden ./cmd/warden

demo: ## run the built-in demo
	go run ./cmd/warden demo

# govulncheck is not part of `make test`, because CI cannot obtain the
# database. CI reaches the Go module proxy, Debian and npm only, and none of
# them carries it (checked 2026-11 with the go command and curl):
#   - vuln.go.dev itself: "lookup vuln.go.dev ...: no such host";
#   - golang.org/x/vulndb (the repository that holds the reports) through the
#     proxy: "reading https://proxy.golang.org/golang.org/x/vulndb/@v/list:
#     403 Forbidden, server response: This module version is not available",
#     the same for @latest, for a commit hash and for the mirror path
#     github.com/golang/vulndb; GOPROXY=direct cannot resolve golang.org;
#   - Debian's golang-golang-x-vuln-dev and govulncheck packages hold the
#     client, not the database.
# Where vuln.go.dev is reachable, run `make vuln`. To check offline, mirror
# the database's files (index/db.json, index/modules.json,
# index/vulns.json, ID/*.json) on such a machine and pass
# VULNDB=file:///ABSOLUTE/DIR; govulncheck then reads nothing from the
# network.
VULNDB ?= https://vuln.go.dev

vuln: deps ## govulncheck ./... against VULNDB (vuln.go.dev by default; CI cannot reach it, so not in test)
	@. '$(ENV)'; "$$WARDEN_GOVULNCHECK" -db '$(VULNDB)' -tags='$(TAGS)' ./...

clean: ## remove bin/ and saved test streams (keeps .cache/deps)
	rm -rf bin '$(RESULTS)'
