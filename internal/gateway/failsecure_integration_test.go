//go:build integration

package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// TestFailSecure (AASM P7): every fault on the path of a call denies it,
// except a failing telemetry exporter, which must not cost a call and is
// reported in warden's log instead. The replay store going down is covered
// by TestRedisRestartThroughTheGateway.
func TestFailSecure(t *testing.T) {
	t.Run("audit write failure denies", func(t *testing.T) {
		ctx := testCtx(t)
		up, _ := demoUpstream(t, false)
		_, opts := optionsFromYAML(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams: [{name: demo, url: %s}]\n", up))
		l, err := audit.Open(ctx, audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts.Recorder = &gateway.Records{Audit: l}
		g, err := gateway.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Handler())
		t.Cleanup(func() { srv.Close(); g.Close() })
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "a"}}); err != nil {
			t.Fatal(err)
		}
		l.Close() // the log can no longer be written
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "b"}}); wardenRefusal(t, err) != "audit" {
			t.Fatalf("a call without its audit record: %v", err)
		}
	})

	t.Run("unclassifiable call denies", func(t *testing.T) {
		ctx := testCtx(t)
		up, _ := demoUpstream(t, false)
		dataDir := keyedDataDir(t)
		url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    store: memory
    classification: [{level: 2, when: 'tool.name == "echo" && args.amount > 10'}]
  audit: {}
  upstreams: [{name: demo, url: %s}]
`, dataDir, up))
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "no amount"}}); wardenRefusal(t, err) != "classify" {
			t.Fatalf("a call the policy cannot evaluate: %v", err)
		}
	})

	t.Run("upstream crash ends the call with an error", func(t *testing.T) {
		ctx := testCtx(t)
		// A server that answers initialize, then exits on the first call.
		script := `read -r l; printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"crashy","version":"1"}}}'; read -r l; read -r l; exit 3`
		url := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams: [{name: crashy, command: [sh, -c, %q]}]\n", script))
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "anything", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "exited with status 3") {
			t.Fatalf("a call whose upstream crashed: %v", err)
		}
	})

	t.Run("exporter failure does not deny and is reported", func(t *testing.T) {
		ctx := testCtx(t)
		up, _ := demoUpstream(t, false)
		// Spans and OCSF events go to endpoints where nothing listens.
		cfg, err := config.Parse([]byte(fmt.Sprintf(`version: 1
gateway:
  upstreams: [{name: demo, url: %s}]
telemetry:
  spans: {exporter: otlp, endpoint: "http://127.0.0.1:1"}
  ocsf: {exporter: http, endpoint: "http://127.0.0.1:1/ocsf"}
`, up)), "t.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Fatal(err)
		}
		logs := &lockedBuffer{}
		opts, err := assemble.FromConfig(cfg, slog.New(slog.NewJSONHandler(logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		g, err := gateway.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Handler())
		closed := false
		t.Cleanup(func() {
			srv.Close()
			if !closed {
				g.Close()
			}
		})
		cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
		for i := range 3 {
			cctx, cancel := context.WithTimeout(ctx, 10e9)
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
			cancel()
			if err != nil {
				t.Fatalf("call %d with the exporters down: %v", i, err)
			}
		}
		// Closing flushes both exporters; each failure is in warden's log.
		cs.Close()
		g.Close()
		closed = true
		for _, want := range []string{`"msg":"telemetry: OCSF export failed"`, `"msg":"telemetry: span export failed"`} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the exporter failure is not reported: no %s in the log:\n%s", want, logs.String())
			}
		}
	})
}

// keyedDataDir is a data directory with one signing key.
func keyedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
