// Module tools pins the Go binaries that warden's tests and CI use.
// It is separate from the main module so that these tools and their
// dependencies never enter warden's own build. scripts/deps.sh builds them
// with `go build -o .cache/deps/bin/NAME PACKAGE` from this directory.
module github.com/agentwarden/warden/tools

go 1.26.0

toolchain go1.26.8

tool (
	github.com/modelcontextprotocol/go-sdk/conformance/everything-client
	github.com/modelcontextprotocol/go-sdk/conformance/everything-server
	golang.org/x/vuln/cmd/govulncheck
	honnef.co/go/tools/cmd/staticcheck
)

// The pinned tools' modules; bump them here, then run `go mod tidy`.
// (The tool directive makes `go mod tidy` mark them indirect.)
require (
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	golang.org/x/vuln v1.8.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/telemetry v0.0.0-20260924152758-ed294f943157 // indirect
	golang.org/x/time v0.15.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
