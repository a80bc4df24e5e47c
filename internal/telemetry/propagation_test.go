package telemetry

import (
	"context"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry/seedtable"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestTraceJoinsThroughMeta: the client's span (traceparent in _meta) is
// the parent of warden's span, and warden's span is the parent the
// upstream sees in the rewritten _meta.
func TestTraceJoinsThroughMeta(t *testing.T) {
	params := []byte(`{"name":"read_file","arguments":{"path":"/a"},"_meta":{"progressToken":7,"traceparent":"` + clientTraceparent + `","tracestate":"vendor=1"}}`)
	sr := tracetest.NewSpanRecorder()
	r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	op := &Operation{Method: "tools/call", Tool: "read_file", RequestID: "1", Params: params}
	_, sp := r.Start(context.Background(), op)
	forwarded, err := InjectMeta(params, sp.Context())
	if err != nil {
		t.Fatal(err)
	}
	r.End(sp, op)

	got := sr.Ended()[0]
	if got.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || got.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("warden's span parent = %v, want the client's span", got.Parent())
	}
	if !got.Parent().IsRemote() {
		t.Error("the client's span context is not marked remote")
	}
	if _, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+string(forwarded)+`}`), jsonrpc.Limits{}); err != nil {
		t.Fatalf("forwarded params are refused by the strict decoder: %v\n%s", err, forwarded)
	}
	// The upstream reads warden's span as its parent; other members survive.
	up := trace.SpanContextFromContext(ContextFromParams(context.Background(), forwarded))
	if up.TraceID() != got.SpanContext().TraceID() || up.SpanID() != got.SpanContext().SpanID() {
		t.Errorf("upstream sees parent %v, want warden's span %v", up, got.SpanContext())
	}
	if s := lookupString(forwarded, "_meta", "tracestate"); s != "vendor=1" {
		t.Errorf("tracestate = %q, want it carried on", s)
	}
	for _, path := range [][]string{{"name"}, {"arguments", "path"}, {"_meta", "progressToken"}} {
		a, _ := jsonrpc.Lookup(params, path...)
		b, ok := jsonrpc.Lookup(forwarded, path...)
		if !ok || string(a) != string(b) {
			t.Errorf("member %v changed: %s → %s", path, a, b)
		}
	}
}

func TestInjectMetaShapes(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	want := "00-01000000000000000000000000000000-0200000000000000-01"
	cases := map[string]string{
		"no params":     ``,
		"empty":         `{}`,
		"no _meta":      `{"uri":"file:///x"}`,
		"_meta not obj": `{"_meta":5}`,
		"old parent":    `{"_meta":{"traceparent":"` + clientTraceparent + `"}}`,
		"escaped name":  `{"_meta":{"trace\u0070arent":"` + clientTraceparent + `"}}`,
	}
	for name, in := range cases {
		out, err := InjectMeta([]byte(in), sc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","method":"x","params":`+string(out)+`}`), jsonrpc.Limits{}); err != nil {
			t.Errorf("%s: result refused by the strict decoder (%v): %s", name, err, out)
		}
		if got := lookupString(out, "_meta", "traceparent"); got != want {
			t.Errorf("%s: traceparent = %q in %s", name, got, out)
		}
	}
	if _, err := InjectMeta([]byte(`[1,2]`), sc); err == nil {
		t.Error("array params: no error")
	}
	out, _ := InjectMeta([]byte(`{"_meta":{"traceparent":"`+clientTraceparent+`","k":1}}`), trace.SpanContext{})
	if string(out) != `{"_meta":{"k":1}}` {
		t.Errorf("invalid span context should remove the trace keys: %s", out)
	}
}

func TestBadTraceparentIsIgnored(t *testing.T) {
	for _, tp := range []string{"garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""} {
		ctx := ContextFromParams(context.Background(), []byte(`{"_meta":{"traceparent":"`+tp+`"}}`))
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Errorf("traceparent %q accepted", tp)
		}
	}
}

// TestCoSAIMapping checks the CoSAI WS2 mapping against the seed's table,
// and that every attribute it names is actually emitted.
func TestCoSAIMapping(t *testing.T) {
	seedtable.Need(t)
	seed := seedtable.CoSAIMapping()
	if len(seed) != len(CoSAIMapping) {
		t.Fatalf("seed maps %d fields, code %d", len(seed), len(CoSAIMapping))
	}
	for i, m := range seed {
		if CoSAIMapping[i].CoSAI != m.CoSAI || CoSAIMapping[i].AITF != m.AITF {
			t.Errorf("row %d: code %s → %s, seed %s → %s", i, CoSAIMapping[i].CoSAI, CoSAIMapping[i].AITF, m.CoSAI, m.AITF)
		}
	}
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.Error = &RPCError{Code: -32603, Message: "boom"}
	invoke := attrMap(record(t, Options{}, &op).Attributes())
	op = *goldens["aitf.mcp.server.connect"].op
	connect := attrMap(record(t, Options{}, &op).Attributes())
	for _, m := range CoSAIMapping {
		_, onInvoke := invoke[m.AITF]
		_, onConnect := connect[m.AITF]
		if !onInvoke && !onConnect {
			t.Errorf("%s (CoSAI %s) is emitted on neither tool nor server spans", m.AITF, m.CoSAI)
		}
		if m.OTel != "" {
			if _, ok := invoke[m.OTel]; !ok {
				t.Errorf("OTel counterpart %s of %s not emitted on tool spans", m.OTel, m.CoSAI)
			}
		}
	}
}

// TestInjectMetaIsTheW3CPropagators: the trace context InjectMeta writes is
// what OpenTelemetry's W3C propagator writes, whatever the flags and the
// trace state; member names that need escaping stay escaped.
func TestInjectMetaIsTheW3CPropagators(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=1,other=a-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, flags := range []trace.TraceFlags{0, trace.FlagsSampled, trace.FlagsSampled | trace.FlagsRandom, 0xff} {
		for _, state := range []trace.TraceState{{}, ts} {
			sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab, 1, 0xff}, SpanID: trace.SpanID{0xcd, 2},
				TraceFlags: flags, TraceState: state})
			want := propagation.MapCarrier{}
			propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), want)
			params := []byte(`{"a\"b\u00e9":1,"_meta":{"\u2028":2,"traceparent":"old"}}`)
			got, err := InjectMeta(params, sc)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range metaKeys {
				if v := lookupString(got, "_meta", k); v != want[k] {
					t.Errorf("flags %x, state %q: %s = %q, want %q", flags, state, k, v, want[k])
				}
			}
			if v, _ := jsonrpc.Lookup(got, "a\"bé"); string(v) != "1" {
				t.Errorf("member a\"bé lost: %s", got)
			}
			if v, _ := jsonrpc.Lookup(got, "_meta", "\u2028"); string(v) != "2" {
				t.Errorf("_meta member U+2028 lost: %s", got)
			}
			if _, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":`+string(got)+`}`), jsonrpc.Limits{}); err != nil {
				t.Errorf("refused by the strict decoder: %v\n%s", err, got)
			}
		}
	}
}
