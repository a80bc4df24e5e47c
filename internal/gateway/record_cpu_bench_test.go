//go:build unix

package gateway

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// BenchmarkRecordCPU measures the CPU that spans in both conventions, OCSF
// events and metrics cost one tools/call, all of it, recorded as a
// configured gateway records them: the request's and the answer's Record
// on the calling goroutine, and the work of the Recorder's goroutine and
// the exporters (span writer and OCSF JSONL writer, discarding), which the
// timed loop waits for by closing them. cpu-µs/op is the process's CPU
// time (getrusage) per call, steadier than the time on a loaded machine.
func BenchmarkRecordCPU(b *testing.B) {
	exp, _ := telemetry.NewSpanWriter(io.Discard)
	queue := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{})
	rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: exp, OCSFSink: queue, Deferred: 4096})
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
	cpu0 := rusageCPU()
	calls := uint64(0)
	for b.Loop() {
		// A dropped span would be work not measured: the loop lets the
		// Recorder's goroutine catch up, as callers slower than a loop do.
		calls++
		keepUp(rec, calls, 2048)
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
	rec.Close(ctx)
	queue.Close(ctx)
	b.ReportMetric(float64(rusageCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	if st := rec.Stats(); st.Dropped != 0 || st.OCSF.Dropped != 0 {
		b.Errorf("telemetry dropped: %+v", st)
	}
}

// rusageCPU is the CPU time this process has used, user and system.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
