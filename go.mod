module github.com/agentwarden/warden

go 1.26

toolchain go1.26.8

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/tools v0.42.0 // indirect
)
