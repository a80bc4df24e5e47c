package attack

import (
	"context"
	"strconv"

	"github.com/agentwarden/warden/internal/telemetry"
)

// span records a trace entry as telemetry when the run has a Recorder: a
// message of an attack run is an operation like any other, so the same
// backends see attacks and the gateway's traffic.
func (rt *runtime) span(e Entry) {
	if rt.opts.Spans == nil {
		return
	}
	op := &telemetry.Operation{
		Method:       e.Method,
		FromUpstream: e.Direction == "response",
		Upstream:     "attack:" + e.Actor,
		RequestID:    strconv.FormatInt(e.Seq, 10),
		Start:        e.Timestamp,
		End:          e.Timestamp,
	}
	if e.Content != nil {
		op.Params = encodeJSON(e.Content)
		if e.Method == "tools/call" {
			op.Tool = e.Content.Get("name").StringOr("")
		}
	}
	rt.opts.Spans.Record(context.Background(), op)
}
