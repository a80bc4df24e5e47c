package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPUpstreamRedirectDoesNotCarryTheAPIKey: an upstream that answers
// with a redirect must not make warden send the upstream's configured
// headers (here an API key) to another server.
func TestHTTPUpstreamRedirectDoesNotCarryTheAPIKey(t *testing.T) {
	var stolen atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" {
			stolen.Add(1)
		}
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()

	t.Setenv("WARDEN_TEST_API_KEY", "secret-key")
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  upstreams:
    - name: up
      url: %s/mcp
      headers: {X-Api-Key: "${env:WARDEN_TEST_API_KEY}"}
`, redirector.URL))
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err == nil {
		cs.Close()
		t.Fatal("initialize through a redirecting upstream succeeded")
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the redirect target received the API key %d times", n)
	}
}
