package replay

// Telemetry of a replay (Options.Spans). Every message replay sends to a
// target or receives from it is an operation of internal/telemetry, with
// the spans the gateway gives the operations it relays (the seed's AITF
// names and the OpenTelemetry MCP names): a request and its answer are one
// span; a request or notification from the target is a span of its own.
// Replay is the client here (Operation.AsClient). Each probe is a span of
// its own, the parent of its operations' spans, so that one trace holds one
// probe:
//
//	conform.replay mcp/P1_identity  (INTERNAL, warden.conform.*)
//	├── mcp.server.connect TARGET   initialize
//	├── notifications/initialized
//	└── mcp.tool.invoke TOOL        tools/call and its answer
//
// Replay does not add trace context to the messages it sends: a conformance
// run sends the same bytes with telemetry on or off.

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// Attributes replay adds to its spans.
const (
	AttrTarget    = "warden.conform.target"    // probe span: the target's name
	AttrProtocol  = "warden.conform.protocol"  // probe span: MCP, A2A or AG-UI
	AttrProperty  = "warden.conform.property"  // probe span: model/property
	AttrPrinciple = "warden.conform.principle" // probe span
	AttrOutcome   = "warden.conform.outcome"   // probe span: reproduced, blocked, unrealisable
	// AttrAnswer is set on an operation that got no answer: "none" (not in
	// time, or the peer went away) or "unsent" (the message could not be
	// written).
	AttrAnswer = "warden.conform.answer"
	// AttrHTTPStatus is the HTTP status of an A2A or AG-UI answer.
	AttrHTTPStatus = "http.response.status_code"
)

// ClientName is replay's clientInfo.name, on its spans as the client.
const ClientName = "warden-conform"

// startProbe starts the span of one probe of t, when o has a Recorder; end
// records the result on it and ends it.
func (o Options) startProbe(ctx context.Context, t *Target, p probe) (context.Context, func(Result)) {
	if o.Spans == nil {
		return ctx, func(Result) {}
	}
	key := p.model + "/" + p.property
	ctx, span := o.Spans.StartGroup(ctx, "conform.replay "+key,
		attribute.String(AttrTarget, t.Name), attribute.String(AttrProtocol, t.Protocol),
		attribute.String(AttrProperty, key), attribute.String(AttrPrinciple, p.principle))
	return ctx, func(r Result) {
		span.SetAttributes(attribute.String(AttrOutcome, string(r.Outcome)))
		if r.Outcome == Reproduced {
			span.SetStatus(codes.Error, "reproduced: "+clip(r.Evidence, 200))
		}
		span.End()
	}
}

// opSpan is one operation replay sent, between the message leaving and its
// answer. A nil *opSpan (no Recorder) does nothing.
type opSpan struct {
	rec  *telemetry.Recorder
	op   *telemetry.Operation
	span *telemetry.Span
}

// operation returns the operation of a message to or from t, filled with
// what replay knows of the target; nil without a Recorder.
func (o Options) operation(t *Target, method string, params []byte) *telemetry.Operation {
	if o.Spans == nil {
		return nil
	}
	op := telemetry.RequestOperation(method, params)
	op.AsClient = true
	op.Client = ClientName
	op.Upstream = t.Name
	op.UpstreamURL = t.URL
	if t.Protocol == MCP {
		op.Transport = telemetry.TransportStdio
		if t.URL != "" {
			op.Transport = telemetry.TransportStreamableHTTP
		}
	}
	return op
}

// start starts op's span; nil op gives a nil *opSpan.
func (o Options) start(ctx context.Context, op *telemetry.Operation) *opSpan {
	if op == nil {
		return nil
	}
	_, sp := o.Spans.Start(ctx, op)
	return &opSpan{rec: o.Spans, op: op, span: sp}
}

// answered ends the span with the JSON-RPC answer m.
func (s *opSpan) answered(m *jsonrpc.Message) {
	if s == nil {
		return
	}
	s.op.SetResponse(m)
	s.end()
}

// unanswered ends the span of a request that got no answer (why: "none" or
// "unsent"), or of a notification that was sent (why "").
func (s *opSpan) unanswered(why string) {
	if s == nil {
		return
	}
	if why != "" {
		s.op.Attributes = append(s.op.Attributes, attribute.String(AttrAnswer, why))
	}
	s.end()
}

// httpAnswered ends the span with an HTTP answer: its status, and the
// JSON-RPC result or error when there was one (a2a.go, agui.go).
func (s *opSpan) httpAnswered(status int, result []byte, e *telemetry.RPCError) {
	if s == nil {
		return
	}
	s.op.Attributes = append(s.op.Attributes, attribute.Int(AttrHTTPStatus, status))
	s.op.Result, s.op.Error = result, e
	s.end()
}

func (s *opSpan) end() {
	s.op.End = time.Now()
	s.rec.End(s.span, s.op)
}

// received records a request or notification the target sent replay, and,
// for a request, the answer replay gave it.
func (o Options) received(ctx context.Context, t *Target, in, answer *jsonrpc.Message) {
	op := o.operation(t, in.Method, in.Params)
	if op == nil {
		return
	}
	op.FromUpstream = true
	if in.Kind == jsonrpc.KindNotification {
		op.Notification = true
	} else {
		op.RequestID = in.ID.Raw()
	}
	if answer != nil {
		op.SetResponse(answer)
	}
	o.Spans.Record(ctx, op)
}
