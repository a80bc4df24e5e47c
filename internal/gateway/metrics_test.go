package gateway

import (
	"net/http/httptest"
	"strings"
	"testing"
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
