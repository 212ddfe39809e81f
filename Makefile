# tracebridge. `make demo` shows the main job; `make test` runs every test.
GO       ?= go
BIN      := bin/tracebridge
PKGS     := ./...
export GOFLAGS := -buildvcs=false

.PHONY: all build dist vsix test unit deps fuzz bench bench-peers bench-gateway demo lint clean artifacts sessions crash

all: build

# make build stamps the checkout it was built from (git describe), so
# --version names it; a build outside git says dev.
STAMP    := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
build:
	$(GO) build -ldflags "-X main.Version=$(STAMP)" -o $(BIN) ./cmd/tracebridge

# Release archives in out/dist: linux, darwin and windows on amd64 and
# arm64, the version (VERSION, else git describe) stamped, with SHA256SUMS.
VERSION ?=
dist:
	$(GO) run ./cmd/dist -version "$(VERSION)"

# The VS Code extension, packaged: editors/vscode/out/tracebridge.vsix
# (install it with `code --install-extension`). Needs Node 20+ and npm.
vsix:
	cd editors/vscode && npm ci --no-audit --no-fund --loglevel=error && npm run package

# Every test, with the race detector, after vet (also for Windows and
# macOS, whose code CI cannot run: the named pipes, the peer checks). The
# crash loop, the multi-process tests and the unsafe-build check are part
# of it.
test: deps
	$(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 30m $(PKGS)
	cd bench/peers && $(GO) test -count=1 ./...

# What the tests need beyond Go (Chromium, util-linux): installed with
# apt-get when run as root, else the one command to run is named.
deps:
	@bash .ci/deps

# The fast inner loop: every package's short tests (the crash loop, the
# browser, multi-process and recorded-session tests honour -short).
unit:
	$(GO) test -short -count=1 $(PKGS)

# The crash loops at length: kill -9, power cuts on the power-cut file system
# (needs /dev/fuse and root, as `make test` does), disk faults. CUTS scales them.
CUTS ?= 1000
crash:
	TRACEBRIDGE_CRASH_ITERATIONS=$(CUTS) TRACEBRIDGE_POWERCUT_CUTS=$(CUTS) TRACEBRIDGE_POWERCUT_HOST_CUTS=$$(( $(CUTS) / 4 )) \
		$(GO) test -count=1 -v -timeout 180m -run 'TestKillNine|TestCrashLoop|TestPowerCut|TestDiskFaults|TestStateWrites' ./cmd/tracebridge

# Short fuzz runs of every decoder (the seed corpora run in `make test`).
FUZZTIME ?= 20s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeBatch$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzHintMask$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzAttrsJSON$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzParseRef$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePayloads$$' -fuzztime $(FUZZTIME) ./hub
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./hub
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzRules$$' -fuzztime $(FUZZTIME) ./policy
	$(GO) test -run '^$$' -fuzz '^FuzzParseManifest$$' -fuzztime $(FUZZTIME) ./bridge/tools
	$(GO) test -run '^$$' -fuzz '^FuzzTagResult$$' -fuzztime $(FUZZTIME) ./bridge/mcp
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./internal/lineconn
	$(GO) test -run '^$$' -fuzz '^FuzzMembers$$' -fuzztime $(FUZZTIME) ./internal/lineconn
	$(GO) test -run '^$$' -fuzz '^FuzzEditorPayloads$$' -fuzztime $(FUZZTIME) ./host
	$(GO) test -run '^$$' -fuzz '^FuzzReadMessage$$' -fuzztime $(FUZZTIME) ./host/lsp
	$(GO) test -run '^$$' -fuzz '^FuzzGuard$$' -fuzztime $(FUZZTIME) ./bridge/guard
	$(GO) test -run '^$$' -fuzz '^FuzzLineGuard$$' -fuzztime $(FUZZTIME) ./bridge/mcp
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRequest$$' -fuzztime $(FUZZTIME) ./pipe
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeResponse$$' -fuzztime $(FUZZTIME) ./pipe
	$(GO) test -run '^$$' -fuzz '^FuzzClean$$' -fuzztime $(FUZZTIME) ./host
	$(GO) test -run '^$$' -fuzz '^FuzzParseRefs$$' -fuzztime $(FUZZTIME) ./host
	$(GO) test -run '^$$' -fuzz '^FuzzParseDiagnostics$$' -fuzztime $(FUZZTIME) ./host
	$(GO) test -run '^$$' -fuzz '^FuzzSequenceLabels$$' -fuzztime $(FUZZTIME) ./mermaid
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeSession$$' -fuzztime $(FUZZTIME) ./sessions
	$(GO) test -run '^$$' -fuzz '^FuzzRenderReview$$' -fuzztime $(FUZZTIME) ./web
	$(GO) test -run '^$$' -fuzz '^FuzzParseClient$$' -fuzztime $(FUZZTIME) ./config
	$(GO) test -run '^$$' -fuzz '^FuzzSpec$$' -fuzztime $(FUZZTIME) ./internal/confine
	$(GO) test -run '^$$' -fuzz '^FuzzJSONAsSSE$$' -fuzztime $(FUZZTIME) ./bridge/upstream
	$(GO) test -run '^$$' -fuzz '^FuzzRetryCap$$' -fuzztime $(FUZZTIME) ./bridge/upstream
	$(GO) test -run '^$$' -fuzz '^FuzzEventID$$' -fuzztime $(FUZZTIME) ./bridge/mcp
	$(GO) test -run '^$$' -fuzz '^FuzzStatelessMeta$$' -fuzztime $(FUZZTIME) ./bridge/mcp

# Benchmarks of the hot paths: COUNT runs each, summarised by benchstat
# (median and spread per benchmark). Raw output: out/bench.txt.
COUNT ?= 6
BENCH ?= .
bench:
	@mkdir -p out
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -count $(COUNT) -timeout 60m ./events/... ./store/... ./projections/... ./replay/... ./mermaid/... ./bridge/... ./web/... ./cmd/... | tee out/bench.txt
	$(GO) tool benchstat out/bench.txt

# tracebridge's log beside the stores a user would pick instead (SQLite WAL,
# an embedded JetStream file stream, a plain bbolt event store), one workload,
# one table from one run. bench/peers is its own module: the product does not
# depend on what it is compared with. EVENTS sizes the read store.
EVENTS ?= 1000000
bench-peers:
	cd bench/peers && $(GO) run . -events $(EVENTS)

# One tools/call to a no-op MCP server: directly, through tracebridge (stdio
# and HTTP) and through supergateway and mcp-proxy (npm, pinned by
# bench/gateway/peers/package-lock.json); one table from one run, ratios per
# round. ROUNDS rounds of CALLS sequential calls and 16 in flight.
ROUNDS ?= 3
CALLS ?= 2000
bench-gateway: build
	npm ci --prefix bench/gateway/peers --no-audit --no-fund --loglevel=error
	$(GO) run ./bench/gateway -tracebridge $(BIN) -rounds $(ROUNDS) -calls $(CALLS)

# Regenerate the triads (artifacts/logs, docs/diagrams) of the recorded
# sessions. make test fails when the committed ones differ from these.
artifacts:
	rm -rf artifacts/logs docs/diagrams
	go run ./cmd/tracebridge session replay --artifacts . artifacts/sessions/*.jsonl

# Record the sessions again through the real binaries (host, mcp, operator
# CLI), then regenerate their triads.
sessions:
	go test ./cmd/tracebridge -run TestRecordedSessions -count=1 -record
	$(MAKE) artifacts

demo:
	$(GO) run ./cmd/tracebridge demo

lint:
	GOOS=windows $(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	@test -z "$$($(GO) tool goimports -local github.com/tracebridge/tracebridge -l $$(git ls-files '*.go'))" || { $(GO) tool goimports -local github.com/tracebridge/tracebridge -l $$(git ls-files '*.go'); echo "goimports: the imports of the files above are not grouped (standard, others, this module): go tool goimports -local github.com/tracebridge/tracebridge -w FILE"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	@bash .ci/vulncheck

clean:
	rm -rf bin out
