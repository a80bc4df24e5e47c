package testenv

// A real OpenTelemetry Collector for integration tests: otelcol-warden, built
// by scripts/deps.sh with the collector builder from tools/otelcol/builder.yaml
// (OTLP receiver, otlphttp and debug exporters; core components only).
//
//	warden ──OTLP gRPC/HTTP──▶ otelcol-warden ──OTLP/JSON──▶ Collector.sink (this process)
//	                              (127.0.0.1)                   Spans(), Wait()
//
// The collector re-exports everything it received to a loopback HTTP
// server in the test process, which decodes it, so a test reads what
// arrived without parsing the collector's log.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// EnvOtelcol overrides the collector's path.
const EnvOtelcol = "WARDEN_OTELCOL"

var otelcol = dep{"otelcol-warden (OpenTelemetry Collector)", EnvOtelcol, "bin/otelcol-warden"}

// Otelcol returns the path of the otelcol-warden executable.
func Otelcol(t testing.TB) string { t.Helper(); return find(t, otelcol) }

// Collector is a running otelcol-warden, started by StartOtelcol and stopped
// when the test ends.
type Collector struct {
	// GRPCAddr is the OTLP/gRPC receiver's host:port (plaintext).
	GRPCAddr string
	// HTTPURL is the OTLP/HTTP receiver's base URL (http://host:port);
	// traces go to HTTPURL + "/v1/traces".
	HTTPURL string

	logPath string

	mu      sync.Mutex
	spans   []CollectorSpan // guarded by mu
	changed chan struct{}   // closed and replaced when spans grows; guarded by mu
	bad     []string        // requests the sink could not decode; guarded by mu
}

// CollectorSpan is a span as the collector exported it.
type CollectorSpan struct {
	TraceID, SpanID, ParentSpanID string // hex; ParentSpanID "" for a root
	Name                          string
	Kind                          int // OTLP SpanKind: 1 internal, 2 server, 3 client
	Attrs                         map[string]any
	Resource                      map[string]any
	Events                        []string // names
	StatusCode                    int      // 0 unset, 1 ok, 2 error
}

// StartOtelcol starts otelcol-warden with an OTLP receiver on two loopback
// ports and waits until it is ready. It is stopped (SIGTERM, then SIGKILL
// after 10 s) when the test ends. Skips (or fails under
// WARDEN_REQUIRE_DEPS=1) when the collector is not installed.
func StartOtelcol(t testing.TB) *Collector {
	t.Helper()
	bin := Otelcol(t)
	dir := t.TempDir()
	c := &Collector{changed: make(chan struct{}), logPath: filepath.Join(dir, "otelcol.log")}
	sink := httptest.NewServer(http.HandlerFunc(c.receive))
	t.Cleanup(sink.Close)

	grpcAddr, httpAddr := freeLoopbackPair(t)
	c.GRPCAddr, c.HTTPURL = grpcAddr, "http://"+httpAddr
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc: {endpoint: %q}
      http: {endpoint: %q}
exporters:
  otlp_http:
    endpoint: %q
    encoding: json
    compression: none
    retry_on_failure: {enabled: false}
  debug: {verbosity: basic}
service:
  telemetry:
    metrics: {level: none}
    logs: {level: info, encoding: console}
  pipelines:
    traces: {receivers: [otlp], exporters: [otlp_http, debug]}
`, grpcAddr, httpAddr, sink.URL)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("testenv: starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("testenv: the collector did not stop on SIGTERM within 10 s:\n%s", c.Log())
		}
	})

	// Ready when the collector says so (its receivers are listening then).
	deadline := time.After(60 * time.Second)
	for !strings.Contains(c.Log(), "Everything is ready") {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("testenv: the collector exited (%v) before it was ready:\n%s", err, c.Log())
		case <-deadline:
			t.Fatalf("testenv: the collector was not ready within 60 s:\n%s", c.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return c
}

// freeLoopbackPair returns two distinct loopback addresses that were free a
// moment ago (both held at once, so they differ).
func freeLoopbackPair(t testing.TB) (string, string) {
	t.Helper()
	var addrs [2]string
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testenv: listen on loopback: %v", err)
		}
		defer l.Close()
		addrs[i] = l.Addr().String()
	}
	return addrs[0], addrs[1]
}

// Log returns what the collector wrote to its log so far.
func (c *Collector) Log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

// Spans returns the spans the collector has exported so far.
func (c *Collector) Spans() []CollectorSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]CollectorSpan(nil), c.spans...)
}

// Wait returns the spans exported so far as soon as done accepts them, or
// an error with what arrived when ctx ends first.
func (c *Collector) Wait(ctx context.Context, done func([]CollectorSpan) bool) ([]CollectorSpan, error) {
	for {
		c.mu.Lock()
		spans, changed, bad := append([]CollectorSpan(nil), c.spans...), c.changed, c.bad
		c.mu.Unlock()
		if len(bad) > 0 {
			return spans, fmt.Errorf("testenv: the collector sent what the sink could not decode: %s", strings.Join(bad, "; "))
		}
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("testenv: waiting for spans at the collector: %w (%d arrived)", ctx.Err(), len(spans))
		}
	}
}

// receive is the sink's handler: OTLP/JSON export requests.
func (c *Collector) receive(w http.ResponseWriter, r *http.Request) {
	var req otlpJSON
	err := errors.New("want POST /v1/traces")
	if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
		err = json.NewDecoder(r.Body).Decode(&req)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.bad = append(c.bad, r.Method+" "+r.URL.Path+": "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range req.ResourceSpans {
		res := rs.Resource.Attributes.values()
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				cs := CollectorSpan{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
					Name: s.Name, Kind: s.Kind, Attrs: s.Attributes.values(), Resource: res, StatusCode: s.Status.Code}
				for _, e := range s.Events {
					cs.Events = append(cs.Events, e.Name)
				}
				c.spans = append(c.spans, cs)
			}
		}
	}
	close(c.changed)
	c.changed = make(chan struct{})
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}"))
}

// otlpJSON is the part of the OTLP/JSON ExportTraceServiceRequest the tests
// read (ids are hex strings in OTLP/JSON).
type otlpJSON struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes otlpAttrs `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID      string    `json:"traceId"`
				SpanID       string    `json:"spanId"`
				ParentSpanID string    `json:"parentSpanId"`
				Name         string    `json:"name"`
				Kind         int       `json:"kind"`
				Attributes   otlpAttrs `json:"attributes"`
				Events       []struct {
					Name string `json:"name"`
				} `json:"events"`
				Status struct {
					Code int `json:"code"`
				} `json:"status"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpAttrs []struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

func (a otlpAttrs) values() map[string]any {
	m := make(map[string]any, len(a))
	for _, kv := range a {
		m[kv.Key] = kv.Value.value()
	}
	return m
}

// otlpValue is an AnyValue: exactly one member is set.
type otlpValue struct {
	StringValue *string          `json:"stringValue"`
	BoolValue   *bool            `json:"boolValue"`
	IntValue    *json.RawMessage `json:"intValue"` // a string (int64) or a number
	DoubleValue *float64         `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

// value returns the Go value: string, bool, int64, float64 or []any.
func (v otlpValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		n, err := strconv.ParseInt(string(bytes.Trim(*v.IntValue, `"`)), 10, 64)
		if err != nil {
			return string(*v.IntValue)
		}
		return n
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, x := range v.ArrayValue.Values {
			out[i] = x.value()
		}
		return out
	}
	return nil
}
