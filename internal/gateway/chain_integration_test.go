//go:build integration

package gateway_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/demoserver"
)

// headerLog records the Authorization headers a handler is sent.
type headerLog struct {
	mu  sync.Mutex
	got []string
}

func (l *headerLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.got = append(l.got, r.Header.Values("Authorization")...)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *headerLog) values() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Compact(slices.Sorted(slices.Values(l.got)))
}

func sha(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// auditActors returns the actors of the tools/call records of an audit log.
func auditActors(t *testing.T, path string) []string {
	t.Helper()
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if rep, err := l.Verify(context.Background()); err != nil || rep.Problem != nil {
		t.Fatalf("%s does not verify: %+v %v", path, rep, err)
	}
	var b strings.Builder
	l.Export(context.Background(), &b)
	var actors []string
	for line := range strings.SplitSeq(b.String(), "\n") {
		if !strings.Contains(line, `"method":"tools/call"`) {
			continue
		}
		_, rest, ok := strings.Cut(line, `"actor":"`)
		if !ok {
			actors = append(actors, "")
			continue
		}
		actor, _, _ := strings.Cut(rest, `"`)
		actors = append(actors, actor)
	}
	return slices.Compact(slices.Sorted(slices.Values(actors)))
}

// TestWardenInFrontOfWarden (AgentRFC CS, chained servers): an edge warden
// in front of an inner warden in front of the demo server. Each hop
// authenticates its own client and records that identity; no credential
// crosses a hop: alice's key stays at the edge, the edge's own key for the
// inner warden stays there, and the server is sent none. alice's key is
// worth nothing at the inner warden.
func TestWardenInFrontOfWarden(t *testing.T) {
	ctx := testCtx(t)
	const aliceKey, edgeKey = "wk_alice_0123456789abcdef", "wk_edge_fedcba9876543210"
	dir := t.TempDir()

	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: demoserver.NewLedger(), Env: func() []string { return nil }})
	serverSaw, innerSaw := &headerLog{}, &headerLog{}
	up := httptest.NewServer(serverSaw.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))
	t.Cleanup(up.Close)

	innerAudit := filepath.Join(dir, "inner.jsonl")
	inner := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  auth: {api_keys: {edge: %s}}
  audit: {backend: jsonl, path: %q}
  upstreams: [{name: demo, url: %s}]
`, sha(edgeKey), innerAudit, up.URL))
	innerSrv := httptest.NewServer(innerSaw.wrap(inner.Handler()))
	t.Cleanup(func() { innerSrv.Close(); inner.Close() })

	edgeAudit := filepath.Join(dir, "edge.jsonl")
	edge := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  auth: {api_keys: {alice: %s}}
  audit: {backend: jsonl, path: %q}
  upstreams:
    - name: inner
      url: %s
      headers: {Authorization: "Bearer %s"}
`, sha(aliceKey), edgeAudit, innerSrv.URL+"/mcp", edgeKey))
	edgeSrv := httptest.NewServer(edge.Handler())
	t.Cleanup(func() { edgeSrv.Close(); edge.Close() })

	client := mcp.NewClient(&mcp.Implementation{Name: "it", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: edgeSrv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{aliceKey}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "through two wardens"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "through two wardens") {
		t.Fatalf("echo through two wardens: %v %+v", err, res)
	}
	cs.Close()
	if got := innerSaw.values(); !slices.Equal(got, []string{"Bearer " + edgeKey}) {
		t.Errorf("the inner warden was sent %q: want only the edge's own key", got)
	}

	// alice's key, presented to the inner warden directly, opens nothing.
	if _, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: innerSrv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{aliceKey}}}, nil); err == nil {
		t.Fatal("alice's key for the edge opened a session at the inner warden")
	}

	if got := serverSaw.values(); len(got) != 0 {
		t.Errorf("the server was sent credentials: %q", got)
	}
	edge.Close()
	inner.Close()
	if got := auditActors(t, edgeAudit); !slices.Equal(got, []string{"alice"}) {
		t.Errorf("the edge recorded tools/call actors %q, want alice", got)
	}
	if got := auditActors(t, innerAudit); !slices.Equal(got, []string{"edge"}) {
		t.Errorf("the inner warden recorded tools/call actors %q, want edge", got)
	}
}
