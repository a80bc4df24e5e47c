//go:build integration

package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestExportersReachARealCollector: both OTLP exporters, gRPC and HTTP,
// built from the same SpanExport values the configuration gives, deliver a
// tools/call span to a real OpenTelemetry Collector (otelcol-warden) with
// its attributes, warden's service name and the client's span as parent:
// an SDK span, and the Recorder's own (Options.SpanExporter).
func TestExportersReachARealCollector(t *testing.T) {
	col := testenv.StartOtelcol(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, e := range []SpanExport{
		{Kind: SpanExporterOTLPGRPC, Endpoint: col.GRPCAddr},
		{Kind: SpanExporterOTLP, Endpoint: col.HTTPURL},
	} {
		exp, err := NewSpanExporter(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		tp := NewTracerProvider(exp)
		op := *goldens["aitf.mcp.tool.invoke"].op
		op.Upstream = e.Kind // tells the spans apart at the collector
		op.Params = []byte(`{"_meta":{"traceparent":"00-` + clientTraceID + `-` + clientSpanID + `-01"},"name":"write_file","arguments":{}}`)
		own := op
		NewRecorder(Options{TracerProvider: tp}).Record(ctx, &op)
		if err := tp.Shutdown(ctx); err != nil {
			t.Fatalf("%s: %v", e.Kind, err)
		}
		// The Recorder's own spans (Options.SpanExporter), batched from
		// its goroutine, as the gateway records them.
		exp, err = NewSpanExporter(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		own.Upstream = e.Kind + " own"
		rec := NewRecorder(Options{SpanExporter: exp, Deferred: 16})
		rec.Record(ctx, &own)
		if err := rec.Close(ctx); err != nil {
			t.Fatalf("%s: %v", own.Upstream, err)
		}
		if st := rec.Stats(); st.Failed != 0 || st.Dropped != 0 {
			t.Errorf("%s: %+v", own.Upstream, st)
		}
	}
	byServer := func(spans []testenv.CollectorSpan) map[any]testenv.CollectorSpan {
		m := map[any]testenv.CollectorSpan{}
		for _, s := range spans {
			m[s.Attrs["aitf.mcp.tool.server"]] = s
		}
		return m
	}
	spans, err := col.Wait(ctx, func(spans []testenv.CollectorSpan) bool { return len(byServer(spans)) == 4 })
	if err != nil {
		t.Fatalf("%v\ncollector log:\n%s", err, col.Log())
	}
	for kind, s := range byServer(spans) {
		if s.Name != "mcp.tool.invoke write_file" || s.Attrs["mcp.method.name"] != "tools/call" ||
			s.Attrs["gen_ai.tool.name"] != "write_file" || s.Attrs["aitf.mcp.tool.name"] != "write_file" {
			t.Errorf("%s: span %q attributes %v", kind, s.Name, s.Attrs)
		}
		if s.Resource["service.name"] != "warden" {
			t.Errorf("%s: service.name = %v, want warden", kind, s.Resource["service.name"])
		}
		if s.TraceID != clientTraceID || s.ParentSpanID != clientSpanID {
			t.Errorf("%s: trace %s parent %s, want the client's %s / %s", kind, s.TraceID, s.ParentSpanID, clientTraceID, clientSpanID)
		}
	}
}
