package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// seqIDs is an IDGenerator that counts: two of them with the same history
// make the same ids, so an SDK tracer and the Recorder's own spans can be
// compared id for id.
type seqIDs struct {
	mu sync.Mutex
	n  uint64
}

func (g *seqIDs) next() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return g.n
}

func (g *seqIDs) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	var sid trace.SpanID
	binary.BigEndian.PutUint64(tid[8:], g.next())
	binary.BigEndian.PutUint64(sid[:], g.next())
	return tid, sid
}

func (g *seqIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], g.next())
	return sid
}

// captureExporter keeps what it is given, across Shutdown (which
// tracetest.InMemoryExporter would reset), and counts its calls.
type captureExporter struct {
	mu      sync.Mutex
	spans   tracetest.SpanStubs
	calls   int
	fail    error
	stopped bool
}

func (e *captureExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.fail != nil {
		return e.fail
	}
	e.spans = append(e.spans, tracetest.SpanStubsFromReadOnlySpans(spans)...)
	return nil
}

func (e *captureExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	return nil
}

func (e *captureExporter) got() tracetest.SpanStubs {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.spans)
}

// equivalenceOps are operations of every kind the gateway records: each
// seed span type, a denial, an upstream error, a tool error, a held call
// approved, findings (span attributes and threat events), a parent in
// params._meta with trace state, an unsampled parent, a notification,
// duplicate attribute keys, and an invalid attribute.
func equivalenceOps() []*Operation {
	var ops []*Operation
	names := make([]string, 0, len(goldens))
	for name := range goldens {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		op := *goldens[name].op
		if op.Start.IsZero() {
			op.Start, op.End = start, start.Add(3*time.Millisecond)
		}
		ops = append(ops, &op)
	}
	at := start.Add(time.Millisecond)
	threat := []attribute.KeyValue{attribute.String("aitf.security.threat.type", "prompt_injection"), attribute.Int("aitf.security.threat.score", 9)}
	ops = append(ops,
		&Operation{Method: "tools/call", Tool: "get_env", RequestID: "3", Session: "s", Upstream: "demo", Start: start, End: start.Add(time.Millisecond),
			Denial: &Denial{Stage: "policy", Rule: "deny-list", Invariant: "I1", Reason: "no"}, ParamsHash: "ab", JTI: "j", AuditSeq: 4},
		&Operation{Method: "tools/call", Tool: "t", RequestID: `"x"`, Transport: TransportStdio, Start: start, End: start.Add(time.Millisecond),
			Arguments: []byte(`{"a":1}`), Error: &RPCError{Code: -32602, Message: "bad"}},
		&Operation{Method: "tools/call", Tool: "t", RequestID: "5", Start: start, End: start.Add(2 * time.Millisecond),
			Arguments: []byte(`{}`), Result: []byte(`{"content":[{"type":"text","text":"boom"}],"isError":true}`)},
		&Operation{Method: "tools/call", Tool: "write", RequestID: "6", Start: start, End: start.Add(9 * time.Millisecond),
			Approval: "approved", Approver: "alice", Held: start.Add(time.Millisecond), Decided: start.Add(8 * time.Millisecond),
			Arguments: []byte(`{"path":"/x"}`), Result: []byte(`{"content":[{"type":"text","text":"ok"}]}`),
			Attributes: []attribute.KeyValue{attribute.Int("aitf.security.findings", 1), attribute.String(AttrDecision, "overridden"), {}},
			Events:     []Event{{Name: "aitf.security.threat_detected", Attributes: threat, Time: at}, {Name: "bare"}}},
		&Operation{Method: "tools/call", Tool: "t", RequestID: "7", Start: start, End: start.Add(time.Millisecond),
			Params: []byte(`{"_meta":{"traceparent":"00-` + clientTraceID + `-` + clientSpanID + `-01","tracestate":"vendor=a,other=b"},"name":"t","arguments":{}}`)},
		&Operation{Method: "tools/call", Tool: "t", RequestID: "8", Start: start, End: start.Add(time.Millisecond),
			Params: []byte(`{"_meta":{"traceparent":"00-` + clientTraceID + `-` + clientSpanID + `-00"},"name":"t"}`)},
		&Operation{Method: "notifications/progress", Notification: true, Params: []byte(`{"progress":1}`), Start: start, End: start},
		&Operation{Method: "sampling/createMessage", FromUpstream: true, RequestID: "9", Start: start, End: start.Add(time.Millisecond),
			Params: []byte(`{"maxTokens":10,"messages":[]}`), Result: []byte(`{"model":"m","usage":{"inputTokens":3,"outputTokens":4}}`)},
	)
	return ops
}

// TestNativeSpansAreTheSDKs: the spans a Recorder with Options.SpanExporter
// builds itself reach the exporter exactly as the SDK's spans did (a
// tracer provider with the same ids, resource and a synchronous exporter):
// name, ids, parent, kind, times, attributes in order, events, status,
// dropped counts, resource and scope; for operations of every kind, in
// both conventions and each alone, deferred or not.
func TestNativeSpansAreTheSDKs(t *testing.T) {
	for _, conv := range [][]Convention{nil, {ConventionAITF}, {ConventionOTel}} {
		for _, deferred := range []int{0, 64} {
			name := fmt.Sprintf("%v/deferred=%d", conv, deferred)
			sdkExp := &captureExporter{}
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(sdkExp), sdktrace.WithResource(wardenResource()),
				sdktrace.WithIDGenerator(&seqIDs{}))
			sdkRec := NewRecorder(Options{TracerProvider: tp, Conventions: conv})
			ownExp := &captureExporter{}
			ownRec := NewRecorder(Options{SpanExporter: ownExp, IDGenerator: &seqIDs{}, Conventions: conv, Deferred: deferred})
			for _, op := range equivalenceOps() {
				a, b := *op, *op
				sdkRec.Record(context.Background(), &a)
				ownRec.Record(context.Background(), &b)
			}
			if err := ownRec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			want, got := sdkExp.got(), ownExp.got()
			if len(want) != len(equivalenceOps())-1 { // the unsampled parent's span is not exported
				t.Fatalf("%s: the SDK exported %d spans", name, len(want))
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d spans exported, want the SDK's %d", name, len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s: span %d (%s):\n got %s\nwant %s", name, i, want[i].Name, stubText(got[i]), stubText(want[i]))
				}
			}
			if !ownExp.stopped {
				t.Errorf("%s: Close did not shut the exporter down", name)
			}
		}
	}
}

// stubText shows a span stub for a failure message.
func stubText(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s parent %s/%v kind %s %s–%s status %v dropped %d/%d/%d children %d scope %+v res %v\n  attrs:",
		s.Name, s.SpanContext.SpanID(), s.Parent.SpanID(), s.Parent.IsRemote(), s.SpanKind, s.StartTime.Format(time.RFC3339Nano), s.EndTime.Format(time.RFC3339Nano),
		s.Status, s.DroppedAttributes, s.DroppedEvents, s.DroppedLinks, s.ChildSpanCount, s.InstrumentationScope, s.Resource)
	fmt.Fprintf(&b, " flags %s state %q", s.SpanContext.TraceFlags(), s.SpanContext.TraceState())
	for _, a := range s.Attributes {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
	}
	for _, e := range s.Events {
		fmt.Fprintf(&b, "\n  event %s@%s dropped %d:", e.Name, e.Time.Format(time.RFC3339Nano), e.DroppedAttributeCount)
		for _, a := range e.Attributes {
			fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
		}
	}
	fmt.Fprintf(&b, "\n  links %v", s.Links)
	return b.String()
}

// TestNativeSpansKeepTheSDKsLimits: with span limits set in the
// environment, as OpenTelemetry's OTEL_SPAN_* variables set them, the
// Recorder's own spans drop and cut what the SDK's do.
func TestNativeSpansKeepTheSDKsLimits(t *testing.T) {
	t.Setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "5")
	t.Setenv("OTEL_SPAN_EVENT_COUNT_LIMIT", "2")
	t.Setenv("OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT", "1")
	t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "4")
	op := &Operation{Method: "tools/call", Tool: "write_file_é", RequestID: "6", Start: start, End: start.Add(9 * time.Millisecond),
		Approval: "denied", Approver: "bob", Arguments: []byte(`{"path":"/x"}`),
		Result: []byte(`{"content":[{"type":"text","text":"ok"}]}`),
		Events: []Event{{Name: "a", Attributes: []attribute.KeyValue{attribute.String("x", "1"), attribute.String("y", "2")}}, {Name: "b"}}}
	sdkExp := &captureExporter{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(sdkExp), sdktrace.WithResource(wardenResource()), sdktrace.WithIDGenerator(&seqIDs{}))
	a, b := *op, *op
	NewRecorder(Options{TracerProvider: tp}).Record(context.Background(), &a)
	ownExp := &captureExporter{}
	NewRecorder(Options{SpanExporter: ownExp, IDGenerator: &seqIDs{}}).Record(context.Background(), &b)
	want, got := sdkExp.got(), ownExp.got()
	if len(want) != 1 || want[0].DroppedAttributes == 0 || want[0].DroppedEvents == 0 {
		t.Fatalf("the SDK's span dropped nothing: %+v", want)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], want[0]) {
		t.Fatalf("got %v\nwant %s", got, stubText(want[0]))
	}
}

// TestNativeSpansBatchAndCountFailures: deferred spans reach the exporter
// in batches, not one call per span, and spans whose export failed are
// counted in Stats and the Recorder's failure is logged.
func TestNativeSpansBatchAndCountFailures(t *testing.T) {
	exp := &captureExporter{}
	r := NewRecorder(Options{SpanExporter: exp, Deferred: 1000})
	for range 600 {
		r.Record(context.Background(), &Operation{Method: "ping", RequestID: "1", Start: start})
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.got()); n != 600 {
		t.Fatalf("%d spans exported, want 600", n)
	}
	if exp.calls > 600/exportBatch+2 {
		t.Errorf("%d exports for 600 spans: not batched", exp.calls)
	}
	failing := &captureExporter{fail: errors.New("collector down")}
	r = NewRecorder(Options{SpanExporter: failing, Deferred: 10})
	for range 3 {
		r.Record(context.Background(), &Operation{Method: "ping", RequestID: "1", Start: start})
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := r.Stats(); st.Failed != 3 || st.Ended != 3 {
		t.Errorf("stats %+v, want 3 ended and 3 failed", st)
	}
}

// TestNativeSpansAlone: recording a call's span with the Recorder's own
// spans, on the call's path, allocates a few words and calls no SDK
// tracer: the tracer provider given alongside is never asked for a span.
func TestNativeSpansAlone(t *testing.T) {
	tp := &countingProvider{}
	exp := &captureExporter{}
	r := NewRecorder(Options{TracerProvider: tp, SpanExporter: exp, Deferred: 1 << 16})
	defer r.Close(context.Background())
	op := &Operation{Method: "tools/call", Tool: "echo", RequestID: "7", Upstream: "demo", Session: "s1",
		Params: []byte(`{"name":"echo","arguments":{"message":"bench"}}`), Arguments: []byte(`{"message":"bench"}`), Start: start}
	ctx := context.Background()
	// AllocsPerRun counts the whole process's allocations, the Recorder's
	// goroutine's too, which builds the queued spans when it wakes from a
	// nap; that can only add. The least of a few measurements is the
	// call's path.
	allocs := math.Inf(1)
	for range 5 {
		allocs = min(allocs, testing.AllocsPerRun(200, func() {
			_, sp := r.Start(ctx, op)
			if !sp.Context().IsValid() {
				t.Fatal("invalid span context")
			}
			r.End(sp, op)
		}))
	}
	// The Span, its name, the context carrying it (two: the span and the
	// context), the operation's copy for the queue. An SDK span took
	// about 20 (TestSDKSpansAllocate).
	if allocs > 5 {
		t.Errorf("Start and End allocate %.0f times, want at most 5", allocs)
	}
	if tp.spans.Load() != 0 {
		t.Errorf("the SDK tracer started %d spans", tp.spans.Load())
	}
}

// countingProvider counts the spans its tracers start.
type countingProvider struct {
	trace.TracerProvider
	spans atomic.Int64
}

func (p *countingProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return countingTracer{Tracer: noop.NewTracerProvider().Tracer(name, opts...), p: p}
}

type countingTracer struct {
	trace.Tracer
	p *countingProvider
}

func (t countingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t.p.spans.Add(1)
	return t.Tracer.Start(ctx, name, opts...)
}

// TestSDKSpansAllocate is TestNativeSpansAlone's measure of the SDK path,
// the number its bound is set against.
func TestSDKSpansAllocate(t *testing.T) {
	r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(), Deferred: 1 << 16})
	defer r.Close(context.Background())
	op := &Operation{Method: "tools/call", Tool: "echo", RequestID: "7", Upstream: "demo", Session: "s1",
		Params: []byte(`{"name":"echo","arguments":{"message":"bench"}}`), Arguments: []byte(`{"message":"bench"}`), Start: start}
	allocs := testing.AllocsPerRun(200, func() {
		_, sp := r.Start(context.Background(), op)
		r.End(sp, op)
	})
	t.Logf("SDK span: Start and End allocate %.0f times", allocs)
	if allocs <= 5 {
		t.Errorf("the SDK path allocates %.0f times: TestNativeSpansAlone's bound proves nothing", allocs)
	}
}

// TestNoSpans: with NoSpans, a Recorder gives each operation a valid span
// context (to propagate, and for OCSF) and its OCSF events name it, but
// builds no span for the exporter.
func TestNoSpans(t *testing.T) {
	sink := &eventSink{}
	r := NewRecorder(Options{SpanExporter: NoSpans, OCSFSink: sink})
	sc := r.Record(context.Background(), &Operation{Method: "tools/call", Tool: "t", RequestID: "1", Start: start})
	if !sc.IsValid() || !sc.IsSampled() {
		t.Fatalf("span context %v", sc)
	}
	if len(sink.out) == 0 || !strings.Contains(sink.out[0], sc.TraceID().String()) {
		t.Errorf("OCSF events %v do not name trace %s", sink.out, sc.TraceID())
	}
	if st := r.Stats(); st.Ended != 1 || st.Failed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestStartSpanIsStart: StartSpan and RecordOwned give a span the parent
// Start gives it, from params._meta or, without one, from ctx, and
// EndOwned exports what End does.
func TestStartSpanIsStart(t *testing.T) {
	exp := &captureExporter{}
	r := NewRecorder(Options{SpanExporter: exp, Deferred: 16})
	client := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), client)
	withMeta := []byte(`{"name":"echo","_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)
	for _, params := range [][]byte{withMeta, []byte(`{"name":"echo"}`)} {
		op := func() *Operation {
			return &Operation{Method: "tools/call", Tool: "echo", RequestID: "7", Params: params, Start: start, End: start.Add(time.Millisecond)}
		}
		_, a := r.Start(ctx, op())
		b := r.StartSpan(ctx, op())
		if !a.parent.Equal(b.parent) || a.Context().TraceID() != b.Context().TraceID() || a.name != b.name || a.kind != b.kind {
			t.Errorf("params %s: StartSpan gives parent %v, name %q; Start %v, %q", params, b.parent, b.name, a.parent, a.name)
		}
		r.End(a, op())
		r.EndOwned(b, op())
		if sc := r.RecordOwned(ctx, op()); sc.TraceID() != a.Context().TraceID() {
			t.Errorf("params %s: RecordOwned's trace %v, want %v", params, sc.TraceID(), a.Context().TraceID())
		}
	}
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	exp.mu.Lock()
	spans := exp.spans
	exp.mu.Unlock()
	if len(spans) != 6 {
		t.Fatalf("%d spans exported, want 6", len(spans))
	}
	for i := 0; i < 6; i += 3 {
		for j := i + 1; j < i+3; j++ {
			if !reflect.DeepEqual(spans[j].Attributes, spans[i].Attributes) || !spans[j].Parent.Equal(spans[i].Parent) || spans[j].Name != spans[i].Name {
				t.Errorf("span %d differs from span %d, ended by End", j, i)
			}
		}
	}
}
