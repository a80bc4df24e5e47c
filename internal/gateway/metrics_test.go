package gateway

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/transport"
)

// The metrics a Prometheus scrape sees after a relayed call and a refusal.
func TestMetricsCountCallsDenialsAndDurations(t *testing.T) {
	m := &Metrics{}
	h := newHarness(t, RelayOptions{Upstream: "files", Pipeline: NewPipeline(ToolPolicy{List: mustList(t, nil, []string{"rm"})}),
		Recorder: &Records{Metrics: m}})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls"}}`)
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	h.recv(h.client)
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm"}}`)
	h.recv(h.client)

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`warden_messages_total{upstream="files",direction="client",kind="request"} 2`,
		`warden_messages_total{upstream="files",direction="upstream",kind="response"} 1`,
		`warden_denials_total{upstream="files",stage="tool-policy"} 1`,
		`mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call",upstream="files",le="+Inf"} 1`,
		`mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",upstream="files"} 1`,
		"# TYPE mcp_server_operation_duration_seconds histogram",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
}

// /readyz says whether the stores answer; /healthz only that the process
// does.
func TestReadyz(t *testing.T) {
	var down error
	g, err := New(Options{Upstreams: []Upstream{{Name: "u", Dial: func(context.Context, bool) (transport.Conn, error) { return nil, io.EOF }}},
		Ready: func(context.Context) error { return down }})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		g.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("ready: %d %q", code, body)
	}
	down = errors.New("replay store: dial tcp 127.0.0.1:6379: connection refused")
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "connection refused") {
		t.Fatalf("store down: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("healthz with the store down: %d", code)
	}
}
