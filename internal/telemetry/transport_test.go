package telemetry

import (
	"encoding/json"
	"testing"

	"github.com/agentwarden/warden/internal/ocsf"
)

type eventList []ocsf.Event

func (l *eventList) Emit(e ocsf.Event) { *l = append(*l, e) }

// The server's transport is the upstream leg on the span and in OCSF; where
// warden is itself the client (conformance replay) its one leg is the
// server's.
func TestServerTransportIsTheUpstreamLeg(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Operation
		want string
	}{
		{"gateway", Operation{Transport: TransportStdio, ServerTransport: TransportStreamableHTTP}, TransportStreamableHTTP},
		{"replay", Operation{Transport: TransportStreamableHTTP, AsClient: true}, TransportStreamableHTTP},
	} {
		op := tc.op
		op.Method, op.Tool, op.RequestID, op.Upstream, op.Start = "tools/call", "echo", "1", "demo", start
		var evs eventList
		span := record(t, Options{OCSFSink: &evs}, &op)
		if got := attrMap(span.Attributes())[AttrServerTransport].AsString(); got != tc.want {
			t.Errorf("%s: span %s = %q, want %q", tc.name, AttrServerTransport, got, tc.want)
		}
		if len(evs) == 0 {
			t.Fatalf("%s: no OCSF event", tc.name)
		}
		raw, err := json.Marshal(evs[0])
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Unmapped map[string]any `json:"unmapped"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if got := ev.Unmapped["mcp.server.transport"]; got != tc.want {
			t.Errorf("%s: OCSF unmapped.mcp.server.transport = %v, want %q", tc.name, got, tc.want)
		}
	}
}
