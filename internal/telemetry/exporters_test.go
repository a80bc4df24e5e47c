package telemetry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/agentwarden/warden/internal/ocsf"
)

// receivedSpan is a span as a receiver saw it, whatever the wire format.
type receivedSpan struct {
	Name, TraceID, SpanID, ParentSpanID string
	Attrs, Resource                     map[string]string
}

// spanReceiver is one destination of the exporter contract suite.
type spanReceiver struct {
	export SpanExport
	spans  func() []receivedSpan // what arrived, after the provider shut down
}

// otlpStore keeps what an OTLP receiver was sent.
type otlpStore struct {
	mu    sync.Mutex
	spans []receivedSpan
}

func (s *otlpStore) add(req *coltracepb.ExportTraceServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		res := anyMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s.spans = append(s.spans, receivedSpan{Name: sp.Name, TraceID: hex.EncodeToString(sp.TraceId),
					SpanID: hex.EncodeToString(sp.SpanId), ParentSpanID: hex.EncodeToString(sp.ParentSpanId),
					Attrs: anyMap(sp.Attributes), Resource: res})
			}
		}
	}
}

func (s *otlpStore) get() []receivedSpan {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedSpan(nil), s.spans...)
}

func anyMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = fmt.Sprint(x.DoubleValue)
		default:
			m[kv.Key] = v.String()
		}
	}
	return m
}

// otlpHTTPReceiver decodes OTLP/HTTP protobuf posts on loopback.
func otlpHTTPReceiver(t *testing.T) spanReceiver {
	store := &otlpStore{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" {
			http.NotFound(w, r)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, _ := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(data, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		store.add(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return spanReceiver{SpanExport{Kind: SpanExporterOTLP, Endpoint: srv.URL}, store.get}
}

// traceService is an OTLP/gRPC receiver. When hold is set, Export waits
// for it to close.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	store *otlpStore
	hold  chan struct{}
	held  chan struct{} // closed when the first Export is waiting
	once  sync.Once
}

func (s *traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	if s.hold != nil {
		s.once.Do(func() { close(s.held) })
		select {
		case <-s.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.store.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func startGRPCReceiver(t *testing.T, svc *traceService) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, svc)
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

func otlpGRPCReceiver(t *testing.T) spanReceiver {
	store := &otlpStore{}
	addr := startGRPCReceiver(t, &traceService{store: store})
	// host:port on loopback: plaintext.
	return spanReceiver{SpanExport{Kind: SpanExporterOTLPGRPC, Endpoint: addr}, store.get}
}

// jsonlReceiver reads the JSONL span file back.
func jsonlReceiver(t *testing.T) spanReceiver {
	path := filepath.Join(t.TempDir(), "spans.jsonl")
	return spanReceiver{SpanExport{Kind: SpanExporterJSONL, Path: path}, func() []receivedSpan {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		type kv struct {
			Key   string
			Value struct{ Value any }
		}
		var out []receivedSpan
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var s struct {
				Name                string
				SpanContext, Parent struct{ TraceID, SpanID string }
				Attributes          []kv
				Resource            []kv
			}
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				t.Fatalf("span line %s: %v", sc.Bytes(), err)
			}
			rs := receivedSpan{Name: s.Name, TraceID: s.SpanContext.TraceID, SpanID: s.SpanContext.SpanID,
				ParentSpanID: s.Parent.SpanID, Attrs: map[string]string{}, Resource: map[string]string{}}
			for _, a := range s.Attributes {
				rs.Attrs[a.Key] = fmt.Sprint(a.Value.Value)
			}
			for _, a := range s.Resource {
				rs.Resource[a.Key] = fmt.Sprint(a.Value.Value)
			}
			out = append(out, rs)
		}
		return out
	}}
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestSpanExporters is the contract suite of the span exporters: a tools/call
// recorded through NewTracerProvider arrives at each destination with its
// name, the seed's and OpenTelemetry's attributes, warden's service name,
// and the client's span as its parent.
func TestSpanExporters(t *testing.T) {
	for name, newReceiver := range map[string]func(*testing.T) spanReceiver{
		"jsonl": jsonlReceiver, "otlp": otlpHTTPReceiver, "otlp-grpc": otlpGRPCReceiver,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rcv := newReceiver(t)
			exp, err := NewSpanExporter(ctx, rcv.export)
			if err != nil {
				t.Fatal(err)
			}
			tp := NewTracerProvider(exp)
			r := NewRecorder(Options{TracerProvider: tp})
			op := *goldens["aitf.mcp.tool.invoke"].op
			op.Params = []byte(`{"_meta":{"traceparent":"00-` + clientTraceID + `-` + clientSpanID + `-01"},"name":"write_file","arguments":{"path":"/data/output.txt"}}`)
			r.Record(ctx, &op)
			if err := tp.Shutdown(ctx); err != nil { // flushes
				t.Fatal(err)
			}
			spans := rcv.spans()
			if len(spans) != 1 {
				t.Fatalf("%d spans arrived, want 1: %+v", len(spans), spans)
			}
			s := spans[0]
			if s.Name != "mcp.tool.invoke write_file" {
				t.Errorf("name = %q", s.Name)
			}
			for k, v := range map[string]string{"aitf.mcp.tool.name": "write_file", "aitf.mcp.tool.server": "filesystem",
				"mcp.method.name": "tools/call", "gen_ai.tool.name": "write_file", "gen_ai.operation.name": "execute_tool",
				"jsonrpc.request.id": "2", "warden.decision": "allow"} {
				if s.Attrs[k] != v {
					t.Errorf("attribute %s = %q, want %q", k, s.Attrs[k], v)
				}
			}
			if s.Resource["service.name"] != "warden" {
				t.Errorf("resource service.name = %q, want warden", s.Resource["service.name"])
			}
			if s.TraceID != clientTraceID || s.ParentSpanID != clientSpanID {
				t.Errorf("trace %s parent %s, want the client's %s / %s", s.TraceID, s.ParentSpanID, clientTraceID, clientSpanID)
			}
		})
	}
}

// TestStuckOTLPReceiverNeverBlocks: with the gRPC receiver holding the
// first export, recording many more operations than the span queue holds
// still returns (the test would hang otherwise); the spans that fitted
// arrive once the receiver lets go, and the rest are dropped.
func TestStuckOTLPReceiverNeverBlocks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc := &traceService{store: &otlpStore{}, hold: make(chan struct{}), held: make(chan struct{})}
	addr := startGRPCReceiver(t, svc)
	exp, err := NewSpanExporter(ctx, SpanExport{Kind: SpanExporterOTLPGRPC, Endpoint: addr})
	if err != nil {
		t.Fatal(err)
	}
	tp := NewTracerProvider(exp)
	r := NewRecorder(Options{TracerProvider: tp})
	op := *goldens["aitf.mcp.tool.invoke"].op
	r.Record(ctx, &op)
	flushed := make(chan error, 1)
	go func() { flushed <- tp.ForceFlush(ctx) }() // the receiver holds this export …
	select {
	case <-svc.held:
	case <-ctx.Done():
		t.Fatal("the receiver never saw an export")
	}
	const n = 3000 // … and the batcher's queue holds 2048
	for range n {
		o := op
		r.Record(ctx, &o)
	}
	// Every Record above returned while the receiver was stuck: that is
	// the property. The held export may since have hit the exporter's
	// timeout on a loaded machine; that only drops its span.
	close(svc.hold)
	if err := <-flushed; err != nil && !strings.Contains(err.Error(), "DeadlineExceeded") {
		t.Fatal(err)
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The queue's worth arrived; the rest was dropped, not waited for.
	if got := len(svc.store.get()); got < 1 || got >= 1+n {
		t.Errorf("%d spans arrived, want the queued ones, and fewer than the %d recorded", got, 1+n)
	}
}

func TestGRPCEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in       string
		insecure bool
		bad      bool
	}{
		{in: "127.0.0.1:4317", insecure: true},
		{in: "localhost:4317", insecure: true},
		{in: "[::1]:4317", insecure: true},
		{in: "collector.example.com:4317"},
		{in: "10.0.0.5:4317"},
		{in: "http://collector.example.com:4317", insecure: true},
		{in: "https://127.0.0.1:4317"},
		{in: "127.0.0.1", bad: true},
		{in: ":4317", bad: true},
		{in: "grpc://127.0.0.1:4317", bad: true},
		{in: "http://127.0.0.1:4317/v1/traces", bad: true},
		{in: "http://user:pw@127.0.0.1:4317", bad: true},
		{in: "https://collector.example.com", bad: true},
	} {
		opts, err := grpcEndpoint(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		// WithEndpoint, plus WithInsecure for plaintext.
		if got := len(opts) == 2; got != tc.insecure {
			t.Errorf("%q: plaintext = %v, want %v", tc.in, got, tc.insecure)
		}
	}
	for _, bad := range []SpanExport{{Kind: "zipkin"}, {Kind: SpanExporterOTLP, Endpoint: "127.0.0.1:4318"},
		{Kind: SpanExporterJSONL, Path: filepath.Join(t.TempDir(), "no", "such", "dir")}} {
		if _, err := NewSpanExporter(context.Background(), bad); err == nil {
			t.Errorf("NewSpanExporter(%+v) succeeded", bad)
		}
	}
}

// ocsfSink is an HTTP sink that keeps every request.
type ocsfSink struct {
	mu       sync.Mutex
	types    []string
	bodies   [][]byte
	auth     []string
	status   int           // answer; 0 means 200
	started  chan struct{} // when set, closed at the first request …
	release  chan struct{} // … which then waits for this
	startOne sync.Once
}

func (s *ocsfSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.started != nil {
		s.startOne.Do(func() { close(s.started) })
		<-s.release
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.types = append(s.types, r.Header.Get("Content-Type"))
	s.bodies = append(s.bodies, body)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()
	if s.status != 0 {
		http.Error(w, "sink is down", s.status)
	}
}

// events decodes every request body into events, whatever the framing.
func (s *ocsfSink) events(t *testing.T) []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []json.RawMessage
	for i, b := range s.bodies {
		if s.types[i] == "application/json" {
			var batch []json.RawMessage
			if err := json.Unmarshal(b, &batch); err != nil {
				t.Fatalf("body %q is not a JSON array: %v", b, err)
			}
			out = append(out, batch...)
			continue
		}
		for line := range strings.Lines(string(b)) {
			out = append(out, json.RawMessage(line))
		}
	}
	return out
}

func testEvents(n int) []ocsf.Event {
	var evs []ocsf.Event
	for i := range n {
		evs = append(evs, ocsf.Builder{}.APIActivity(&ocsf.Call{Method: "tools/call", Tool: "read_file", RequestID: fmt.Sprint(i)}))
	}
	return evs
}

// TestOCSFHTTPSink: batches arrive as a JSON array or as NDJSON, every
// event valid OCSF, with the configured header.
func TestOCSFHTTPSink(t *testing.T) {
	for _, ndjson := range []bool{false, true} {
		t.Run(fmt.Sprintf("ndjson=%v", ndjson), func(t *testing.T) {
			sink := &ocsfSink{}
			srv := httptest.NewServer(sink)
			defer srv.Close()
			q, err := NewOCSFQueue(OCSFExport{Kind: OCSFExporterHTTP, Endpoint: srv.URL + "/ocsf", NDJSON: ndjson}, QueueOptions{MaxBatch: 2})
			if err != nil {
				t.Fatal(err)
			}
			q.w.(*HTTPWriter).Header = http.Header{"Authorization": {"Splunk t0ken"}}
			for _, e := range testEvents(5) {
				q.Emit(e)
			}
			if err := q.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if s := q.Stats(); s.Written != 5 || s.Dropped+s.Failed != 0 {
				t.Errorf("stats %+v, want 5 written", s)
			}
			evs := sink.events(t)
			if len(evs) != 5 {
				t.Fatalf("the sink got %d events, want 5", len(evs))
			}
			for _, e := range evs {
				if errs := ocsf.Validate(e); len(errs) > 0 {
					t.Errorf("invalid OCSF event %s: %v", e, errs)
				}
			}
			want := "application/json"
			if ndjson {
				want = "application/x-ndjson"
			}
			for i, ct := range sink.types {
				if ct != want || sink.auth[i] != "Splunk t0ken" {
					t.Errorf("request %d: Content-Type %q Authorization %q", i, ct, sink.auth[i])
				}
			}
		})
	}
}

// TestOCSFHTTPSinkFailures: an error answer and a redirect fail the batch
// and are counted; the redirect is not followed.
func TestOCSFHTTPSinkFailures(t *testing.T) {
	elsewhere := &ocsfSink{}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	redirect := httptest.NewServer(http.RedirectHandler(other.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	down := httptest.NewServer(&ocsfSink{status: http.StatusServiceUnavailable})
	defer down.Close()
	for name, url := range map[string]string{"503": down.URL, "redirect": redirect.URL} {
		q, err := NewOCSFQueue(OCSFExport{Kind: OCSFExporterHTTP, Endpoint: url}, QueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range testEvents(3) {
			q.Emit(e)
		}
		q.Close(context.Background())
		if s := q.Stats(); s.Failed != 3 || s.Written != 0 {
			t.Errorf("%s: stats %+v, want 3 failed", name, s)
		}
	}
	if n := len(elsewhere.events(t)); n != 0 {
		t.Errorf("the redirect was followed: %d events went elsewhere", n)
	}
}

// TestStuckOCSFSinkNeverBlocks: while the sink holds the first batch, Emit
// keeps returning and what does not fit in the queue is dropped and counted.
func TestStuckOCSFSinkNeverBlocks(t *testing.T) {
	sink := &ocsfSink{started: make(chan struct{}), release: make(chan struct{})}
	srv := httptest.NewServer(sink)
	defer srv.Close()
	const size = 4
	q, err := NewOCSFQueue(OCSFExport{Kind: OCSFExporterHTTP, Endpoint: srv.URL}, QueueOptions{Size: size, MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs := testEvents(50)
	q.Emit(evs[0])
	<-sink.started
	for _, e := range evs[1:] {
		q.Emit(e) // must not block: the test would hang here
	}
	if s := q.Stats(); s.Dropped != uint64(len(evs)-1-size) {
		t.Errorf("dropped %d, want %d", s.Dropped, len(evs)-1-size)
	}
	close(sink.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.events(t)); n != 1+size {
		t.Errorf("the sink got %d events, want %d", n, 1+size)
	}
}

func TestNewOCSFQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ocsf.jsonl")
	q, err := NewOCSFQueue(OCSFExport{Kind: OCSFExporterJSONL, Path: path}, QueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range testEvents(3) {
		q.Emit(e)
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 3 {
		t.Errorf("%d lines in the OCSF file, want 3", n)
	}
	if err := q.w.(jsonlFile).f.Close(); err == nil {
		t.Error("the queue's file is still open after Close")
	}
	for _, bad := range []OCSFExport{{Kind: "syslog"}, {Kind: OCSFExporterHTTP, Endpoint: "127.0.0.1:9000"},
		{Kind: OCSFExporterHTTP, Endpoint: "https://user:pw@siem.example.com/"}, {Kind: OCSFExporterHTTP, Endpoint: "ftp://siem.example.com/"}} {
		if _, err := NewOCSFQueue(bad, QueueOptions{}); err == nil {
			t.Errorf("NewOCSFQueue(%+v) succeeded", bad)
		}
	}
}
