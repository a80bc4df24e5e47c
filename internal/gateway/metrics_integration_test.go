//go:build integration

package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Made-up method names sent through a real gateway, to a real go-sdk
// upstream that refuses each, do not grow
// /metrics: they are all counted under mcp_method_name="other".
func TestMetricsStayBoundedUnderMadeUpMethods(t *testing.T) {
	up, _ := demoUpstream(t, false)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  listen: {addr: "127.0.0.1:0"}
  upstreams: [{name: demo, url: %q}]
telemetry: {metrics: true}
`, up))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	s := &httpRawSession{t: t, url: srv.URL + "/mcp"}
	s.initialize()

	s.call(2, "tools/list")
	s.call(3, "made/up-0")
	before := scrapeMetrics(t, srv.URL)
	const madeUp = 2000
	for i := 1; i <= madeUp; i++ {
		if body := s.call(10+i, fmt.Sprintf("made/up-%d", i)); !strings.Contains(body, `"error"`) {
			t.Fatalf("made/up-%d: want the upstream's refusal, got %s", i, body)
		}
	}
	after := scrapeMetrics(t, srv.URL)

	if n, m := seriesCount(before), seriesCount(after); n != m {
		t.Errorf("%d made-up methods changed the series count from %d to %d", madeUp, n, m)
	}
	if len(after) > len(before)+len(before)/10 {
		t.Errorf("%d made-up methods grew /metrics from %d to %d bytes", madeUp, len(before), len(after))
	}
	if strings.Contains(after, "made/up") {
		t.Error("a made-up method is a label value")
	}
	want := fmt.Sprintf(`mcp_server_operation_duration_seconds_count{mcp_method_name="other",upstream="demo"} %d`, madeUp+1)
	if !strings.Contains(after, want) {
		t.Errorf("/metrics lacks %s:\n%s", want, after)
	}
}

// httpRawSession is a stateful MCP session spoken over plain HTTP, one
// request per POST, so that any method name can be sent.
type httpRawSession struct {
	t       *testing.T
	url, id string
}

func (s *httpRawSession) post(body string) string {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("POST %s: %d %s", body, resp.StatusCode, data)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	return string(data)
}

func (s *httpRawSession) initialize() {
	s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (s *httpRawSession) call(id int, method string) string {
	return s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{}}`, id, method))
}

func scrapeMetrics(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return string(data)
}

// seriesCount counts the samples of a Prometheus text page.
func seriesCount(page string) int {
	n := 0
	for _, line := range bytes.Split([]byte(page), []byte("\n")) {
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}
