//go:build unix

package gateway_test

import (
	"context"
	"io"
	"net/http/httptest"
	"runtime/pprof"
	"testing"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/transport"
)

// BenchmarkHTTPRelayRecorded measures one tools/call round trip through the
// gateway over HTTP (SSE framing) with no recording ("off") and with spans
// in both conventions, OCSF events and metrics, and no audit log ("spans"),
// as a gateway configured with them records (spans ended on the
// Recorder's goroutine, which hands them to the JSONL span writer in
// batches; OCSF events to a Queue writing JSONL; both discarding). The difference of the two cpu-µs/op is
// what that recording adds per call, the exporters' background work
// included.
//
//	go test -run - -bench HTTPRelayRecorded -benchmem ./internal/gateway/
func BenchmarkHTTPRelayRecorded(b *testing.B) {
	up := httptest.NewServer(benchUpstream(false))
	defer up.Close()
	for _, mode := range []string{"off", "spans"} {
		opts := gateway.Options{Upstreams: []gateway.Upstream{{
			Name: "up", Transport: "http",
			Dial: func(context.Context, bool) (transport.Conn, error) {
				return transport.NewHTTPClient(transport.HTTPClientOptions{URL: up.URL}), nil
			},
		}}}
		var stop func()
		if mode == "spans" {
			exp, _ := telemetry.NewSpanWriter(io.Discard)
			queue := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{})
			rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: exp, OCSFSink: queue, Deferred: 4096})
			opts.Recorder = &gateway.Records{Propagate: true, Transport: telemetry.TransportStreamableHTTP,
				Spans: rec, Metrics: &gateway.Metrics{Recording: rec}}
			stop = func() {
				rec.Close(context.Background())
				queue.Close(context.Background())
				if st := rec.Stats(); st.Dropped != 0 || st.OCSF.Dropped != 0 {
					b.Errorf("telemetry dropped: %+v", st)
				}
			}
		}
		g, err := gateway.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		gw := httptest.NewUnstartedServer(g.Handler())
		pprof.Do(context.Background(), pprof.Labels("side", "warden"), func(context.Context) { gw.Start() })
		b.Run(mode, func(b *testing.B) { benchCalls(b, gw.URL+"/mcp") })
		gw.Close()
		g.Close()
		if stop != nil {
			stop()
		}
	}
}
