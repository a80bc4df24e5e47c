//go:build integration

package difftest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAGUILimits: gateway.limits bounds an AG-UI run's input as it bounds
// MCP and A2A messages. No AG-UI SDK is installed offline, so the agent is
// a recording stub that answers every run with a finished SSE stream; the
// oracle is what it received: nothing for an input over max_message_bytes
// or max_depth, the run itself for one within them (the positive control).
func TestAGUILimits(t *testing.T) {
	build(t)
	var runs atomic.Int64
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		runs.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n"+
			"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\"}\n\n")
	}))
	t.Cleanup(agent.Close)
	g := startGatewayWith(t, upstreams[0].make(t), "  agui:\n    - {name: chat, url: "+yamlString(agent.URL)+"}\n")
	url := strings.TrimSuffix(g.url, "/mcp") + "/agui/chat"
	input := func(text string) string {
		return `{"threadId":"t1","runId":"r1","state":{},"tools":[],"context":[],"forwardedProps":{},"messages":[{"id":"m1","role":"user","content":` + q(text) + `}]}`
	}
	nest := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	for _, c := range []struct {
		name, body string
		runs       int64
	}{
		{"within the limits", input("hello"), 1},
		{"over max_message_bytes", input(strings.Repeat("x", maxMessage)), 0},
		{"over max_depth", strings.Replace(input("hello"), `"state":{}`, `"state":`+nest(maxDepth+5), 1), 0},
	} {
		before := runs.Load()
		r := do(t, http.DefaultClient, http.MethodPost, url, "", c.body, map[string]string{"Accept": "text/event-stream"})
		if got := runs.Load() - before; got != c.runs {
			t.Errorf("%s: the agent received %d runs, want %d (HTTP %d %.200s)", c.name, got, c.runs, r.status, r.body)
		}
		if c.runs == 0 && r.status < 400 {
			t.Errorf("%s: HTTP %d %.200s, want warden's refusal", c.name, r.status, r.body)
		}
	}
}
