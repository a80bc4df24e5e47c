package telemetry

import (
	"context"
	"errors"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace context travels in MCP messages as members of params._meta: W3C
// "traceparent" and "tracestate" (the OpenTelemetry MCP conventions). The
// gateway reads the client's context from the request (ContextFromParams),
// starts its span as a child of it, and rewrites the request's _meta with
// its own span's context before forwarding (InjectMeta), so the client's
// span, warden's span and the upstream's span join one trace.

var traceContext = propagation.TraceContext{}

// metaKeys are the _meta members that carry trace context.
var metaKeys = []string{"traceparent", "tracestate"}

// lookup reads a member of validated JSON.
func lookup(raw []byte, path ...string) ([]byte, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	return jsonrpc.Lookup(raw, path...)
}

// lookupString reads a string member of validated JSON.
func lookupString(raw []byte, path ...string) string {
	v, ok := lookup(raw, path...)
	if !ok {
		return ""
	}
	s, _ := jsonrpc.String(v)
	return s
}

// ContextFromParams returns ctx with the remote span context carried in
// params._meta (params as the strict decoder validated them). A missing or
// malformed traceparent leaves ctx as it is.
func ContextFromParams(ctx context.Context, params []byte) context.Context {
	carrier := propagation.MapCarrier{}
	for _, k := range metaKeys {
		if v := lookupString(params, "_meta", k); v != "" {
			carrier[k] = v
		}
	}
	if carrier["traceparent"] == "" {
		return ctx
	}
	return traceContext.Extract(ctx, carrier)
}

// ErrParamsNotObject is returned by InjectMeta for params that are not a
// JSON object (an array, say), which cannot carry _meta.
var ErrParamsNotObject = errors.New("telemetry: params is not an object")

// InjectMeta returns params with _meta.traceparent and _meta.tracestate set
// to sc (and any previous values removed), keeping every other member and
// its bytes as they were. params must be JSON the strict decoder validated,
// or nil for a request without params. An invalid sc removes the members.
func InjectMeta(params []byte, sc trace.SpanContext) ([]byte, error) {
	carrier := propagation.MapCarrier{}
	if sc.IsValid() {
		traceContext.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	}
	if len(params) == 0 {
		params = []byte("{}")
	}
	out := make([]byte, 0, len(params)+128)
	out = append(out, '{')
	sawMeta := false
	isObject := jsonrpc.Members(params, func(name string, raw []byte) {
		if name == "_meta" {
			sawMeta = true
			out = appendMember(out, name)
			out = appendMeta(out, raw, carrier)
			return
		}
		out = appendMember(out, name)
		out = append(out, raw...)
	})
	if !isObject {
		return nil, ErrParamsNotObject
	}
	if !sawMeta && len(carrier) > 0 {
		out = appendMember(out, "_meta")
		out = appendMeta(out, nil, carrier)
	}
	return append(out, '}'), nil
}

// appendMember appends a comma if needed and `"name":`.
func appendMember(out []byte, name string) []byte {
	if out[len(out)-1] != '{' {
		out = append(out, ',')
	}
	out = append(out, jsonrpc.Quote(name)...)
	return append(out, ':')
}

// appendMeta appends the _meta object: the members of old except the trace
// context keys, then those of carrier. An old _meta that is not an object
// is replaced.
func appendMeta(out, old []byte, carrier propagation.MapCarrier) []byte {
	out = append(out, '{')
	jsonrpc.Members(old, func(name string, raw []byte) {
		for _, k := range metaKeys {
			if name == k {
				return
			}
		}
		out = appendMember(out, name)
		out = append(out, raw...)
	})
	for _, k := range metaKeys {
		if v := carrier[k]; v != "" {
			out = appendMember(out, k)
			out = append(out, jsonrpc.Quote(v)...)
		}
	}
	return append(out, '}')
}
