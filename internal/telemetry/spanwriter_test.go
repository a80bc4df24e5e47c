package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// odd is a string with everything encoding/json escapes or replaces.
const odd = "a<b>&c \"q\" \\ \n\r\t\b\f\x01\x7f é ✓ \u2028\u2029 \xff end"

// recordedSpans records the golden operations of every span type, and spans
// with every kind of attribute, event, link, status, parent and scope, on a
// provider with warden's resource, and returns them as ended.
func recordedSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := NewTracerProvider(nopSpanExporter{}, sdktrace.WithSpanProcessor(sr))
	rec := NewRecorder(Options{TracerProvider: tp})
	ctx := context.Background()
	for _, g := range goldens {
		op := *g.op
		rec.Record(ctx, &op)
	}
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.Arguments = []byte(`{"note":` + string(mustJSON(t, odd)) + `}`)
	op.Error = &RPCError{Code: -32000, Message: odd}
	rec.Record(ctx, &op)

	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1, 2, 3}, SpanID: [8]byte{4, 5, 6},
		TraceFlags: trace.FlagsSampled, Remote: true})
	ts, err := trace.ParseTraceState("vendor=v1,other=x")
	if err != nil {
		t.Fatal(err)
	}
	parent = parent.WithTraceState(ts)
	tracer := tp.Tracer("other-scope", trace.WithInstrumentationVersion("1.2"),
		trace.WithInstrumentationAttributes(attribute.String("k", "v")))
	_, span := tracer.Start(trace.ContextWithRemoteSpanContext(ctx, parent), odd,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithLinks(trace.Link{SpanContext: parent,
			Attributes: []attribute.KeyValue{attribute.Int("n", 1)}}))
	span.SetAttributes(attribute.Bool("b", true), attribute.Int64("i", -42), attribute.Float64("f", 1.5),
		attribute.Float64("big", 1e21), attribute.String("s", odd), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Int64Slice("is", []int64{1, 2}), attribute.Float64Slice("fs", []float64{0.25}),
		attribute.StringSlice("ss", []string{odd, ""}), attribute.String(odd, ""))
	span.AddEvent("with", trace.WithAttributes(attribute.String("x", odd)))
	span.AddEvent("without")
	span.SetStatus(codes.Error, odd)
	span.End()
	_, empty := tracer.Start(ctx, "")
	empty.SetStatus(codes.Ok, "")
	empty.End()
	_, plain := tp.Tracer("").Start(ctx, "plain")
	plain.End()
	return sr.Ended()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type nopSpanExporter struct{}

func (nopSpanExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (nopSpanExporter) Shutdown(context.Context) error                             { return nil }

// TestSpanWriterMatchesStdout: the JSONL span exporter writes exactly what
// the OpenTelemetry stdout exporter writes, timestamps included, whose
// format it keeps, for spans of every kind, in one batch and one by one.
func TestSpanWriterMatchesStdout(t *testing.T) {
	spans := recordedSpans(t)
	var want, got, gotOne bytes.Buffer
	ref, err := stdouttrace.New(stdouttrace.WithWriter(&want))
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := NewSpanWriter(&got)
	one, _ := NewSpanWriter(&gotOne)
	ctx := context.Background()
	if err := ref.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	if err := ours.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	for _, s := range spans {
		if err := one.ExportSpans(ctx, []sdktrace.ReadOnlySpan{s}); err != nil {
			t.Fatal(err)
		}
	}
	wantLines, gotLines := strings.Split(want.String(), "\n"), strings.Split(got.String(), "\n")
	if len(wantLines) != len(spans)+1 || len(gotLines) != len(wantLines) {
		t.Fatalf("%d lines, want %d", len(gotLines), len(wantLines))
	}
	for i := range wantLines {
		if gotLines[i] != wantLines[i] {
			t.Errorf("span %d:\n got %s\nwant %s", i, gotLines[i], wantLines[i])
		}
	}
	if gotOne.String() != want.String() {
		t.Error("spans exported one by one differ from the stdout exporter's")
	}
	ours.Shutdown(ctx)
	got.Reset()
	ours.ExportSpans(ctx, spans)
	if got.Len() != 0 {
		t.Error("the exporter wrote after Shutdown")
	}
}

// FuzzAppendString holds appendString to encoding/json's string encoding.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", odd, "\u2028", "\xed\xa0\x80", "</script>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// BenchmarkSpanWriter measures exporting one tools/call span.
func BenchmarkSpanWriter(b *testing.B) {
	sr := tracetest.NewSpanRecorder()
	tp := NewTracerProvider(nopSpanExporter{}, sdktrace.WithSpanProcessor(sr))
	op := *goldens["aitf.mcp.tool.invoke"].op
	NewRecorder(Options{TracerProvider: tp}).Record(context.Background(), &op)
	spans := sr.Ended()
	var buf bytes.Buffer
	exp, _ := NewSpanWriter(&buf)
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		exp.ExportSpans(context.Background(), spans)
	}
}

// TestSpanWriterFloatsAndLinks: float attributes (a tool call's
// aitf.mcp.tool.duration_ms), written by hand, and links, none or some,
// are the stdout exporter's bytes too, at every magnitude encoding/json
// formats differently.
func TestSpanWriterFloatsAndLinks(t *testing.T) {
	var attrs []attribute.KeyValue
	for i, f := range []float64{0, 1, 12.5, -0.25, 1e-6, 9.99e-7, -2.5e-9, 1e20, 1e21, 123456789.125, 1.7976931348623157e308, 5e-324} {
		attrs = append(attrs, attribute.Float64("f"+strconv.Itoa(i), f))
	}
	stubs := []tracetest.SpanStub{{Name: "floats", Attributes: attrs},
		{Name: "linked", Links: []sdktrace.Link{{Attributes: []attribute.KeyValue{attribute.String("k", "v")}}}},
		{Name: "no links", Links: []sdktrace.Link{}}}
	var want, got bytes.Buffer
	ref, err := stdouttrace.New(stdouttrace.WithWriter(&want))
	if err != nil {
		t.Fatal(err)
	}
	ours, _ := NewSpanWriter(&got)
	spans := tracetest.SpanStubs(stubs).Snapshots()
	if err := ref.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if err := ours.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}
