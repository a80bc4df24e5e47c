//go:build unix

package telemetry

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkRecorderCPU measures the process CPU (getrusage) that a
// tools/call's span, in both conventions, and its OCSF events cost, all of
// it: Start and End on the calling goroutine, the Recorder's goroutine,
// and the span and OCSF writers', to io.Discard or, as the gateway's
// telemetry section does by default, to JSONL files. The timed loop waits
// for the writers by closing them, and lets the Recorder keep up: a
// dropped span would be work not measured.
func BenchmarkRecorderCPU(b *testing.B) {
	for _, files := range []bool{false, true} {
		name := "discard"
		if files {
			name = "files"
		}
		b.Run(name, func(b *testing.B) {
			var spanOut, ocsfOut io.Writer = io.Discard, io.Discard
			if files {
				dir := b.TempDir()
				sf, err := os.Create(filepath.Join(dir, "spans.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				defer sf.Close()
				of, err := os.Create(filepath.Join(dir, "ocsf.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				defer of.Close()
				spanOut, ocsfOut = sf, of
			}
			exp, _ := NewSpanWriter(spanOut)
			queue := NewQueue(JSONLWriter{W: ocsfOut}, QueueOptions{})
			rec := NewRecorder(Options{SpanExporter: exp, OCSFSink: queue, Deferred: 4096})
			params := []byte(`{"name":"echo","arguments":{"message":"bench"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}`)
			result := []byte(`{"content":[{"type":"text","text":"bench"}]}`)
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := rusageCPU()
			calls := uint64(0)
			for b.Loop() {
				calls++
				for calls > 2048 && rec.Stats().Ended+2048 < calls {
					time.Sleep(20 * time.Microsecond)
				}
				op := &Operation{Method: "tools/call", Tool: "echo", RequestID: "7", Upstream: "demo", Session: "s1",
					Transport: TransportStreamableHTTP, ServerTransport: TransportStdio, Params: params,
					Arguments: []byte(`{"message":"bench"}`), ParamsHash: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
					AuditSeq: calls, Start: time.Now()}
				_, sp := rec.Start(ctx, op)
				op.Result = result
				rec.End(sp, op)
			}
			rec.Close(ctx)
			queue.Close(ctx)
			b.ReportMetric(float64(rusageCPU()-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
			if st := rec.Stats(); st.Dropped != 0 || st.OCSF.Dropped != 0 || st.OCSF.Written != uint64(b.N) {
				b.Errorf("telemetry dropped or lost: %+v, want %d OCSF events written", st, b.N)
			}
		})
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
