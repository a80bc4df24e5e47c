// Command upstream is an MCP server over stdio built on one of two Go SDKs
// (-sdk go-sdk: github.com/modelcontextprotocol/go-sdk; -sdk mcp-go:
// github.com/mark3labs/mcp-go), serving the differential test's tools the
// way an ordinary server built on that SDK would:
//
//	safe_echo       any arguments; needs no token
//	transfer_funds  {source, amount, destination}, bound the SDK's typed way
//	read_file       {path}; the gateway's tool policy denies it
//
// Every line read from stdin and every handler run is appended to the file
// $DIFFTEST_ORACLE (record.go). It is test data for internal/difftest, not
// part of warden.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

// The tools' input schemas, the same for every SDK.
const (
	anySchema      = `{"type":"object"}`
	transferSchema = `{"type":"object","properties":{"source":{"type":"string"},"amount":{"type":"number"},"destination":{"type":"string"}},"required":["source","amount","destination"]}`
	readFileSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`
)

func main() {
	sdk := flag.String("sdk", "", "go-sdk or mcp-go")
	flag.Parse()
	rec, err := openRecorder(*sdk)
	if err == nil {
		stdin := io.TeeReader(os.Stdin, rec)
		switch *sdk {
		case "go-sdk":
			err = serveGoSDK(context.Background(), rec, stdin)
		case "mcp-go":
			err = serveMCPGo(context.Background(), rec, stdin)
		default:
			err = fmt.Errorf("unknown -sdk %q", *sdk)
		}
	}
	if err != nil && err != io.EOF && err != context.Canceled {
		fmt.Fprintln(os.Stderr, "upstream:", err)
		os.Exit(1)
	}
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }
