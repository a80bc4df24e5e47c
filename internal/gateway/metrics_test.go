package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
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

// /readyz says whether the stores answer, and which do not; /healthz only
// that the process does.
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
	// The answer names the store, never its address or error: anyone who
	// reaches the listener may ask.
	down = errors.Join(&storeDown{name: "replay store", err: errors.New("dial tcp 10.0.0.7:6379: connection refused")})
	if code, body := get("/readyz"); code != 503 || body != "not ready: replay store: not answering\n" {
		t.Fatalf("store down: %d %q", code, body)
	}
	down = errors.New("dial tcp 10.0.0.7:6379: connection refused")
	if code, body := get("/readyz"); code != 503 || strings.Contains(body, "10.0.0.7") {
		t.Fatalf("an unnamed store down: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Fatalf("healthz with the store down: %d", code)
	}
}

// A method no MCP revision defines is counted under "other": made-up
// names cannot grow the label set.
func TestMetricsLabelUnknownMethodsOther(t *testing.T) {
	m := &Metrics{}
	for _, method := range []string{"tools/call", "made/up-1", "made/up-2", "Tools/Call"} {
		m.observe(&Decision{Upstream: "files", Direction: "upstream", Kind: jsonrpc.KindResponse, Method: method,
			Open: &openCall{start: time.Now()}})
	}
	body := scrape(m)
	for _, want := range []string{
		`mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",upstream="files"} 1`,
		`mcp_server_operation_duration_seconds_count{mcp_method_name="other",upstream="files"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "made/up") || strings.Contains(body, "Tools/Call") {
		t.Errorf("a made-up method became a label:\n%s", body)
	}
}

// A scrape held in the middle of writing its page (a slow scraper) does
// not hold up the messages being counted: the page is written from a copy,
// outside the lock that recording takes.
func TestMetricsScrapeDoesNotBlockRecording(t *testing.T) {
	m := &Metrics{}
	rec := func(upstream, method string) {
		m.observe(&Decision{Upstream: upstream, Direction: "upstream", Kind: jsonrpc.KindResponse, Method: method,
			Open: &openCall{start: time.Now()}})
	}
	for _, u := range []string{"a", "b", "c", "d"} { // a page of several KB
		for _, method := range []string{"tools/call", "tools/list", "resources/read", "prompts/get", "ping"} {
			rec(u, method)
		}
	}
	full := scrape(m)
	w := &heldWriter{header: http.Header{}, started: make(chan struct{}), release: make(chan struct{})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		m.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	}()
	guard := time.After(10 * time.Second) // a failure guard, not a measure
	select {
	case <-w.started:
	case <-guard:
		t.Fatal("the scrape wrote nothing")
	}
	if w.written.Len() >= len(full) {
		close(w.release)
		t.Fatalf("the scrape's first write is the whole page (%d bytes): the page was formatted before any of it was written, not written as it is formatted", w.written.Len())
	}
	recorded := make(chan struct{})
	go func() { rec("e", "tools/call"); close(recorded) }()
	select {
	case <-recorded:
	case <-guard:
		close(w.release)
		t.Fatal("recording waited for a scrape that is being written")
	}
	close(w.release)
	<-served
	if got := w.written.String(); got != full {
		t.Errorf("the held scrape wrote a different page:\n%s\nwant:\n%s", got, full)
	}
	if !strings.Contains(scrape(m), `upstream="e"`) {
		t.Error("the record made during the scrape was lost")
	}
}

// heldWriter is a ResponseWriter whose first Write returns only once
// release is closed.
type heldWriter struct {
	header  http.Header
	written bytes.Buffer
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (w *heldWriter) Header() http.Header { return w.header }
func (w *heldWriter) WriteHeader(int)     {}
func (w *heldWriter) Write(p []byte) (int, error) {
	w.written.Write(p)
	w.once.Do(func() { close(w.started); <-w.release })
	return len(p), nil
}

func scrape(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// What telemetry loses is on the page: spans the Recorder's full (here,
// closed) queue dropped, and OCSF events the Queue dropped.
func TestMetricsShowTelemetryDrops(t *testing.T) {
	ctx := context.Background()
	q := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{})
	rec := telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(), OCSFSink: q, Deferred: 1})
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rec.Record(ctx, &telemetry.Operation{Method: "ping"})
	}
	q.EmitDeferred(2, nil)
	page := func(m *Metrics) string {
		w := httptest.NewRecorder()
		m.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		return w.Body.String()
	}
	body := page(&Metrics{Recording: rec})
	for _, want := range []string{
		"# TYPE warden_telemetry_dropped_total counter\n",
		"\nwarden_telemetry_dropped_total{signal=\"spans\"} 3\n",
		"\nwarden_telemetry_dropped_total{signal=\"ocsf\"} 2\n",
		"\nwarden_telemetry_failed_total{signal=\"ocsf\"} 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if body := page(&Metrics{}); strings.Contains(body, "warden_telemetry") {
		t.Errorf("metrics without telemetry show its losses:\n%s", body)
	}
}
