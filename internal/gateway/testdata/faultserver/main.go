// Command faultserver is an MCP server over stdio that fails on purpose, for
// the gateway's upstream fault tests (upstreamfault_integration_test.go). It
// answers initialize, ping and tools/list as a server should; on tools/call
// it does what its mode says:
//
//	crash         write half of an answer, then exit with status 3
//	hang          never answer, ignore SIGTERM, and stop reading stdin
//	invalid-json  answer with a line that is not JSON
//	not-jsonrpc   answer with JSON that is not JSON-RPC 2.0 (no "jsonrpc")
//	unknown-id    answer a request nobody sent
//
// Usage: faultserver MODE PIDFILE. It writes its pid to PIDFILE first, and
// exits when stdin ends.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: faultserver MODE PIDFILE")
		os.Exit(2)
	}
	mode := os.Args[1]
	if err := os.WriteFile(os.Args[2], []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(line string) {
		out.WriteString(line)
		out.WriteByte('\n')
		out.Flush()
	}
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue // a notification, or nothing this server understands
		}
		id := string(msg.ID)
		switch msg.Method {
		case "initialize":
			version, _ := json.Marshal(msg.Params.ProtocolVersion)
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":` + string(version) +
				`,"capabilities":{"tools":{}},"serverInfo":{"name":"faultserver","version":"1"}}}`)
		case "ping":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{}}`)
		case "tools/list":
			send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[{"name":"work","inputSchema":{"type":"object"}}]}}`)
		case "tools/call":
			call(mode, id, out, send)
		default:
			send(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}
}

// call misbehaves on a tools/call with the given id, as mode says.
func call(mode, id string, out *bufio.Writer, send func(string)) {
	switch mode {
	case "crash":
		out.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","te`)
		out.Flush()
		os.Exit(3)
	case "hang":
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		for {
			time.Sleep(time.Hour)
		}
	case "invalid-json":
		send(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"garbage"}]}`)
	case "not-jsonrpc":
		send(`{"id":` + id + `,"result":{"content":[{"type":"text","text":"garbage"}]}}`)
	case "unknown-id":
		send(`{"jsonrpc":"2.0","id":987654321,"result":{"content":[{"type":"text","text":"garbage"}]}}`)
	default:
		fmt.Fprintln(os.Stderr, "faultserver: unknown mode", mode)
		os.Exit(2)
	}
}
