//go:build integration

package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type floodArgs struct {
	Count int `json:"count"`
}

// floodUpstream serves, with go-sdk, a server whose tool flood sends count
// progress notifications to its caller as fast as it can, then answers.
func floodUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "flood", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "flood"}, func(ctx context.Context, req *mcp.CallToolRequest, in floodArgs) (*mcp.CallToolResult, any, error) {
		for i := 1; i <= in.Count; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i)}); err != nil {
				return nil, nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.Count)}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// While one upstream floods its client with notifications, through a
// gateway that keeps an audit log, other clients' calls are answered: on
// another upstream, and on a second session of the flooding one. The
// flooded client gets every notification; a flooded client that does not
// read its stream holds up no one else.
func TestNotificationFloodDoesNotStarveOtherClients(t *testing.T) {
	ctx := testCtx(t)
	demo, _ := demoUpstream(t, false)
	flood := floodUpstream(t)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  listen: {addr: "127.0.0.1:0"}
  audit: {path: %q}
  upstreams:
    - {name: flood, url: %q}
    - {name: demo, url: %q}
`, filepath.Join(t.TempDir(), "audit.db"), flood, demo))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	const n = 3000
	var got atomic.Int64
	first, all := make(chan struct{}), make(chan struct{}) // closed at the first and the n-th notification
	flooded := mcp.NewClient(&mcp.Implementation{Name: "flooded", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			switch got.Add(1) {
			case 1:
				close(first)
			case n:
				close(all)
			}
		},
	})
	a, err := flooded.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/flood"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/demo"}, "2025-11-25")
	c, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/flood"}, "2025-11-25")

	done := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: floodArgs{Count: n}, Meta: mcp.Meta{"progressToken": "a"}})
		done <- err
	}()
	select { // the flood is on
	case <-first:
	case <-ctx.Done():
		t.Fatal("no notification arrived")
	}
	others := func(when string) {
		for i := range 20 {
			res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
			if err != nil || text(t, res) != fmt.Sprintf("Echo: %d", i) {
				t.Fatalf("%s: the other upstream's call %d: %v", when, i, err)
			}
			if _, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: floodArgs{Count: 0}}); err != nil {
				t.Fatalf("%s: the flooding upstream's other session: %v", when, err)
			}
		}
	}
	others("during a flood")
	if err := <-done; err != nil {
		t.Fatalf("the flooded call: %v", err)
	}
	select { // go-sdk hands notifications to the handler apart from the answer
	case <-all:
	case <-ctx.Done():
		t.Fatalf("the flooded client got %d of %d notifications", got.Load(), n)
	}

	// A client that floods itself and reads nothing: its stream's events
	// are bounded by the listener's event buffer, and the others go on.
	s := &httpRawSession{t: t, url: srv.URL + "/mcp/flood"}
	s.initialize()
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"flood","arguments":{"count":20000},"_meta":{"progressToken":"d"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", s.id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close() // never read
	others("while a flooded client does not read")
}
