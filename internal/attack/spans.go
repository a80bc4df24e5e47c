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
	var params []byte
	if e.Content != nil {
		params = encodeJSON(e.Content)
	}
	op := telemetry.RequestOperation(e.Method, params)
	op.FromUpstream = e.Direction == "response"
	op.Upstream = "attack:" + e.Actor
	op.RequestID = strconv.FormatInt(e.Seq, 10)
	op.Start, op.End = e.Timestamp, e.Timestamp
	rt.opts.Spans.Record(context.Background(), op)
}
