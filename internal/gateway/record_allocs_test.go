package gateway

import (
	"context"
	"io"
	"math"
	"testing"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// TestRecordingPathAllocations: what recording a relayed tools/call's
// spans (both conventions), OCSF events and metrics allocates on the
// call's path, the request's Record and its answer's, as a configured
// gateway records them with no audit log: the operation, its span, the
// forwarded request with warden's traceparent, the open call. The span's
// attributes, its events and the OCSF events are built off the path.
func TestRecordingPathAllocations(t *testing.T) {
	if recordRace {
		t.Skip("the race detector allocates")
	}
	exp, _ := telemetry.NewSpanWriter(io.Discard)
	queue := telemetry.NewQueue(telemetry.JSONLWriter{W: io.Discard}, telemetry.QueueOptions{Size: 1 << 14})
	rec := telemetry.NewRecorder(telemetry.Options{SpanExporter: exp, OCSFSink: queue, Deferred: 1 << 14})
	defer queue.Close(context.Background())
	defer rec.Close(context.Background())
	rs := &Records{Spans: rec, Propagate: true, Transport: telemetry.TransportStreamableHTTP, Metrics: &Metrics{}}
	req, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}`), jsonrpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"bench"}]}}`), jsonrpc.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func() {
		d := &Decision{Upstream: "demo", Session: "s1", Kind: jsonrpc.KindRequest, Method: "tools/call", Tool: "echo",
			ID: req.ID, Direction: "client", Msg: req, Arguments: []byte(`{"message":"bench"}`)}
		if err := rs.Record(ctx, d); err != nil {
			t.Fatal(err)
		}
		a := &Decision{Upstream: "demo", Session: "s1", Kind: jsonrpc.KindResponse, Method: "tools/call", Tool: "echo",
			ID: ans.ID, Direction: "upstream", Msg: ans, Open: d.Open}
		if err := rs.Record(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// AllocsPerRun counts the Recorder's and the OCSF queue's goroutines
	// too, when a nap of theirs ends inside the window: that only adds,
	// so the least of several counts is the call's path.
	least := math.Inf(1)
	for range 7 {
		least = min(least, testing.AllocsPerRun(50, call))
	}
	t.Logf("a call's recording path: %.0f allocations", least)
	const bound = 18 // 17; 20 when End copied the operation and Start built a context
	if least > bound {
		t.Errorf("recording a call allocates %.0f times on its path, want at most %d", least, bound)
	}
	if st := rec.Stats(); st.Dropped != 0 {
		t.Errorf("dropped: %+v", st)
	}
}
