package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
)

// openConns counts the connections an httptest server holds open.
type openConns struct {
	mu   sync.Mutex
	open map[net.Conn]bool
}

func (o *openConns) track(c net.Conn, s http.ConnState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch s {
	case http.StateNew:
		o.open[c] = true
	case http.StateClosed, http.StateHijacked:
		delete(o.open, c)
	}
}

func (o *openConns) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.open)
}

// A closed gateway lets go of its HTTP upstreams: the keep-alive
// connections its sessions shared are closed, not left to the upstream's
// idle timeout. An embedding program that builds gateways again (a
// reload) would otherwise gather connections on every upstream.
func TestClosedGatewayClosesUpstreamConnections(t *testing.T) {
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Env: func() []string { return nil }})
	conns := &openConns{open: map[net.Conn]bool{}}
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	up.Config.ConnState = conns.track
	up.Start()
	defer up.Close()

	g := gatewayFromYAML(t, "version: 1\ngateway:\n  upstreams: [{name: demo, url: "+up.URL+"}]\n")
	front := httptest.NewServer(g.Handler())
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if conns.count() == 0 {
		t.Fatal("the upstream saw no connection from warden")
	}
	front.Close() // ends the gateway's sessions
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for conns.count() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := conns.count(); n > 0 {
		t.Fatalf("%d connection(s) to the upstream still open after the gateway closed", n)
	}
}
