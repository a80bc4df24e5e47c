package pin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
)

// scriptedServer answers initialize and a two-page tools/list, asks the
// client for roots once (which must be refused, not hang), and records the
// methods it saw.
func scriptedServer(conn transport.Conn, seen chan<- string) {
	ctx := context.Background()
	askedRoots := false
	// The pipe is unbuffered: write from another goroutine, so that the
	// server never waits for the client while the client waits for it.
	out := make(chan *jsonrpc.Message, 16)
	defer close(out)
	go func() {
		for m := range out {
			conn.Write(ctx, m)
		}
	}()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			close(seen)
			return
		}
		if msg.Kind == jsonrpc.KindResponse {
			seen <- "response:" + msg.ID.Raw()
			continue
		}
		seen <- msg.Method
		var result string
		switch msg.Method {
		case mcp.MethodInitialize:
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}`
		case mcp.MethodToolsList:
			if !askedRoots {
				askedRoots = true
				out <- jsonrpc.NewRequest(jsonrpc.StringID("srv-1"), mcp.MethodRootsList, nil)
				out <- jsonrpc.NewNotification("notifications/message", []byte(`{"level":"info","data":"x"}`))
			}
			if c, _ := jsonrpc.Lookup(msg.Params, "cursor"); string(c) == `"p2"` {
				result = `{"tools":[` + toolWrite + `]}`
			} else {
				result = `{"tools":[` + toolRead + `],"nextCursor":"p2"}`
			}
		default:
			continue
		}
		out <- jsonrpc.NewResult(msg.ID, []byte(result))
	}
}

func TestFetchToolsFollowsPagesAndRefusesServerRequests(t *testing.T) {
	client, server := transport.Pipe()
	seen := make(chan string, 16)
	go scriptedServer(server, seen)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	defs, err := FetchTools(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	client.Close()
	var got []string
	for s := range seen {
		got = append(got, s)
	}
	if len(defs) != 2 || defs[0].Name != "read" || defs[1].Name != "write" {
		t.Fatalf("tools = %+v", defs)
	}
	want := "initialize notifications/initialized tools/list response:\"srv-1\" tools/list"
	if strings.Join(got, " ") != want {
		t.Fatalf("server saw %q, want %q", strings.Join(got, " "), want)
	}
	m, err := MakeManifest("files", defs, time.Now())
	if err != nil || len(m.Tools) != 2 || m.Tools[0].Hash != hashFor(t, toolRead) {
		t.Fatalf("MakeManifest = %+v, %v", m, err)
	}
}

func TestFetchToolsReportsAnInitializeError(t *testing.T) {
	client, server := transport.Pipe()
	go func() {
		msg, err := server.Read(context.Background())
		if err != nil {
			return
		}
		server.Write(context.Background(), jsonrpc.NewErrorResponse(msg.ID, &jsonrpc.Error{Code: -32602, Message: "unsupported protocol version"}))
	}()
	defer client.Close()
	if _, err := FetchTools(t.Context(), client); err == nil || !strings.Contains(err.Error(), "unsupported protocol version") {
		t.Fatalf("FetchTools: %v", err)
	}
}
