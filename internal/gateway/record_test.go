package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

const clientTrace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

type recordFixture struct {
	log   *audit.Log
	spans *tracetest.SpanRecorder
	h     *harness
}

func newRecordFixture(t *testing.T) *recordFixture {
	t.Helper()
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	sr := tracetest.NewSpanRecorder()
	rec := telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	f := newZT(t, nil)
	h := newHarness(t, RelayOptions{Upstream: "pay", Pipeline: NewPipeline(ToolPolicy{List: mustList(t, nil, []string{"get_env"})}, f.stage),
		Recorder: &Records{Audit: l, Spans: rec, Propagate: true, Transport: telemetry.TransportStdio}})
	return &recordFixture{log: l, spans: sr, h: h}
}

// records returns the audit log as exported, one record per line.
func (f *recordFixture) records(t *testing.T) []audit.Record {
	t.Helper()
	var buf bytes.Buffer
	if err := f.log.Export(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	var out []audit.Record
	for line := range strings.Lines(buf.String()) {
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// A forwarded call and its answer are two audit records, written before
// each leaves; the call carries warden's trace context to the upstream, and
// warden's span is a child of the client's.
func TestRecordsOfARelayedCall(t *testing.T) {
	f := newRecordFixture(t)
	h := f.h
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"traceparent":"`+clientTrace+`"}}}`)
	up := h.recv(h.upstream)
	tp, _ := jsonrpc.Lookup(up.Params, "_meta", "traceparent")
	s, _ := jsonrpc.String(tp)
	if !strings.HasPrefix(s, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || s == clientTrace {
		t.Fatalf("the upstream got traceparent %q, want warden's span in the client's trace", s)
	}
	if a, _ := jsonrpc.Lookup(up.Params, "arguments"); string(a) != `{"message":"hi"}` {
		t.Fatalf("arguments changed on the way: %s", a)
	}
	// Before the answer arrives the request is already on record.
	if rs := f.records(t); len(rs) != 1 || rs[0].Method != "tools/call" || rs[0].Tool != "echo" || rs[0].Decision != audit.Allow || rs[0].Direction != "client" {
		t.Fatalf("records before the answer: %+v", rs)
	}
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`)
	h.recv(h.client)
	rs := f.records(t)
	if len(rs) != 2 || rs[1].Direction != "upstream" || rs[1].RequestID != "1" || rs[1].Tool != "echo" || rs[1].Method != "tools/call" {
		t.Fatalf("records: %+v", rs)
	}
	// No token was needed, yet both records carry the parameters hash.
	if want := sha256Hex(`{"message":"hi"}`); rs[0].ParamsHash != want || rs[1].ParamsHash != want {
		t.Fatalf("params_hash %q and %q, want %s", rs[0].ParamsHash, rs[1].ParamsHash, want)
	}
	if rep, err := f.log.Verify(context.Background()); err != nil || rep.Problem != nil {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	ended := f.spans.Ended()
	if len(ended) != 1 || ended[0].Name() != "mcp.tool.invoke echo" || ended[0].Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("spans: %d, first %v", len(ended), ended)
	}
	if got := ended[0].SpanContext().SpanID().String(); !strings.Contains(s, got) {
		t.Errorf("the upstream's parent %s is not warden's span %s", s, got)
	}
	if got := spanAttrs(ended[0])["warden.params_hash"]; got != rs[0].ParamsHash {
		t.Errorf("span warden.params_hash %q, want the audit record's %q", got, rs[0].ParamsHash)
	}
}

// A refusal is on record before it is sent, and says where: data.audit_id.
func TestRefusalCarriesItsAuditID(t *testing.T) {
	f := newRecordFixture(t)
	f.h.send(f.h.client, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"get_env"}}`)
	_, d := detailOf(t, f.h.recv(f.h.client))
	rs := f.records(t)
	if len(rs) != 1 || rs[0].Decision != audit.Deny || rs[0].Stage != "tool-policy" || rs[0].RequestID != `"a"` {
		t.Fatalf("records: %+v", rs)
	}
	if d.AuditID != "1" {
		t.Fatalf("audit_id %q, want the refusal's record, 1", d.AuditID)
	}
	// Absent arguments hash as {}.
	if want := sha256Hex(`{}`); rs[0].ParamsHash != want {
		t.Fatalf("a refused call without arguments: params_hash %q, want %s", rs[0].ParamsHash, want)
	}
	// A zero-trust refusal records the rule, the actor and the hash of
	// the arguments' JCS form (keys sorted, no whitespace).
	f.h.send(f.h.client, call("2", "transfer_funds", transferArgs, ""))
	detailOf(t, f.h.recv(f.h.client))
	r := f.records(t)[1]
	if r.Stage != "zero-trust" || r.Rule != "token-missing" || r.Actor != "alice" {
		t.Fatalf("zero-trust refusal record: %+v", r)
	}
	if want := sha256Hex(`{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`); r.ParamsHash != want {
		t.Fatalf("zero-trust refusal: params_hash %q, want %s", r.ParamsHash, want)
	}
}

// sha256Hex is the parameters hash of arguments already in JCS form,
// computed without warden's code.
func sha256Hex(jcs string) string {
	sum := sha256.Sum256([]byte(jcs))
	return hex.EncodeToString(sum[:])
}

// spanAttrs returns a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// With the audit log alone (no spans), every tools/call still records the
// hash of its arguments' JCS form, and the answer's record names the call
// it answers; arguments that cannot be hashed leave it empty.
func TestAuditOnlyRecordsTheParamsHash(t *testing.T) {
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f := &recordFixture{log: l}
	h := newHarness(t, RelayOptions{Upstream: "pay", Recorder: &Records{Audit: l}})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{ "z" : [1, 2.50, 1e2], "a": "\u00e9" }}}`)
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
	h.recv(h.client)
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":[1]}}`)
	h.recv(h.upstream)
	want := sha256Hex(`{"a":"é","z":[1,2.5,100]}`)
	rs := f.records(t)
	if len(rs) != 3 || rs[0].ParamsHash != want || rs[1].Direction != "upstream" || rs[1].Tool != "echo" || rs[1].ParamsHash != want {
		t.Fatalf("records %+v, want both records of call 1 with params_hash %s", rs, want)
	}
	if rs[2].ParamsHash != "" {
		t.Fatalf("arguments that are not an object: params_hash %q, want none", rs[2].ParamsHash)
	}
}

// The hash the zero-trust stage computed is the one recorded: Records does
// not hash the arguments again.
func TestRecordsKeepTheStagesParamsHash(t *testing.T) {
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	req, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`), jsonrpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	stage := strings.Repeat("ab", 32) // no hash of {}: recomputing would show
	d := &Decision{Upstream: "pay", Kind: jsonrpc.KindRequest, Method: "tools/call", Tool: "echo", ID: req.ID,
		Direction: "client", Msg: req, Arguments: []byte(`{}`), ParamsHash: stage}
	if err := (&Records{Audit: l}).Record(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if rs := (&recordFixture{log: l}).records(t); len(rs) != 1 || rs[0].ParamsHash != stage {
		t.Fatalf("records %+v, want the stage's params_hash %s", rs, stage)
	}
}

// The connect span names the upstream's URL (aitf.mcp.server.url, without
// its query); the session's end is a server.disconnect span naming the
// server and the connection.
func TestServerURLAndDisconnectSpans(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	rs := &Records{Spans: telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))}),
		Transport: telemetry.TransportStreamableHTTP,
		URLs:      map[string]string{"pay": "https://mcp.example.com/pay/mcp"}, // as internal/assemble sets it
	}
	h := newStatefulHarness(t, RelayOptions{Upstream: "pay", Session: "sess-1", Recorder: rs})
	h.initialize(`{}`)
	spans := sr.Ended()
	if len(spans) != 1 || spans[0].Name() != "mcp.server.connect pay" {
		t.Fatalf("spans after initialize: %v", spans)
	}
	if got := spanAttrs(spans[0])["aitf.mcp.server.url"]; got != "https://mcp.example.com/pay/mcp" {
		t.Fatalf("aitf.mcp.server.url %q, want the upstream's URL without its query", got)
	}

	rs.SessionEnded(context.Background(), "pay", "sess-1")
	spans = sr.Ended()
	last := spans[len(spans)-1]
	want := map[string]string{"aitf.mcp.server.name": "pay", "aitf.mcp.connection.id": "sess-1"}
	if got := spanAttrs(last); last.Name() != "mcp.server.disconnect pay" || !maps.Equal(pick(got, want), want) {
		t.Fatalf("span %q %v, want mcp.server.disconnect pay with %v", last.Name(), got, want)
	}
	for _, sp := range spans {
		for _, kv := range sp.Attributes() {
			if strings.Contains(kv.Value.String(), "s3cret") {
				t.Errorf("span %q: %s carries the URL's query", sp.Name(), kv.Key)
			}
		}
	}
}

// pick returns the members of m named in keys.
func pick(m, keys map[string]string) map[string]string {
	out := map[string]string{}
	for k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// No record, no call: when the audit log cannot be written, the call is
// refused and never reaches the upstream.
func TestNoRecordNoCall(t *testing.T) {
	f := newRecordFixture(t)
	f.log.Close()
	f.h.send(f.h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	code, d := detailOf(t, f.h.recv(f.h.client))
	if d.Stage != "audit" || d.Rule != "write" || code == 0 {
		t.Fatalf("got %d %+v", code, d)
	}
	f.h.nothing(f.h.upstream, "a call whose record could not be written")
}

// BenchmarkRecordSpans measures what telemetry costs a relayed tools/call
// on the calling goroutine: the request's and the answer's Record with
// spans in both conventions and OCSF events (no audit log), recorded as a
// configured gateway records them (spans built and exported in batches on
// the Recorder's goroutine), exporters discarding in the background.
func BenchmarkRecordSpans(b *testing.B) {
	exp, _ := telemetry.NewSpanWriter(io.Discard)
	queue := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{})
	defer queue.Close(context.Background())
	rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: exp, OCSFSink: queue, Deferred: 4096})
	defer func() {
		rec.Close(context.Background())
		if st := rec.Stats(); st.Dropped != 0 {
			b.Errorf("telemetry dropped: %+v", st)
		}
	}()
	rs := &Records{Spans: rec,
		Propagate: true, Transport: telemetry.TransportStreamableHTTP, Metrics: &Metrics{}}
	req, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}`), jsonrpc.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ans, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"bench"}]}}`), jsonrpc.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	calls := uint64(0)
	for b.Loop() {
		calls++
		keepUp(rec, calls, 2048) // drop no span
		d := &Decision{Upstream: "demo", Session: "s1", Kind: jsonrpc.KindRequest, Method: "tools/call", Tool: "echo",
			ID: req.ID, Direction: "client", Msg: req, Arguments: []byte(`{"message":"bench"}`)}
		if err := rs.Record(ctx, d); err != nil {
			b.Fatal(err)
		}
		a := &Decision{Upstream: "demo", Session: "s1", Kind: jsonrpc.KindResponse, Method: "tools/call", Tool: "echo",
			ID: ans.ID, Direction: "upstream", Msg: ans, Open: d.Open}
		if err := rs.Record(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
