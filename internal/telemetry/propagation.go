package telemetry

import (
	"context"
	"encoding/hex"
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
	parent := lookupString(params, "_meta", "traceparent")
	if parent == "" {
		return ctx // most requests: no carrier to allocate
	}
	carrier := propagation.MapCarrier{"traceparent": parent}
	if state := lookupString(params, "_meta", "tracestate"); state != "" {
		carrier["tracestate"] = state
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
// The values are what propagation.TraceContext injects, written here
// without its carrier map (TestInjectMetaIsTheW3CPropagators).
func InjectMeta(params []byte, sc trace.SpanContext) ([]byte, error) {
	var h traceHeaders
	if sc.IsValid() {
		h = headersOf(sc)
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
			out = appendMeta(out, raw, &h)
			return
		}
		out = appendMember(out, name)
		out = append(out, raw...)
	})
	if !isObject {
		return nil, ErrParamsNotObject
	}
	if !sawMeta && h.parentLen > 0 {
		out = appendMember(out, "_meta")
		out = appendMeta(out, nil, &h)
	}
	return append(out, '}'), nil
}

// traceHeaders are the W3C trace context values of a span context:
// traceparent (parent[:parentLen], 0 bytes for none) and tracestate.
type traceHeaders struct {
	parent    [55]byte
	parentLen int
	state     string
}

// headersOf returns sc's trace context as propagation.TraceContext writes
// it: traceparent "00-{trace id}-{span id}-{flags}", of the flags only
// sampled and random, and tracestate.
func headersOf(sc trace.SpanContext) traceHeaders {
	h := traceHeaders{state: sc.TraceState().String(), parentLen: 55}
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))
	b := h.parent[:0]
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, sid[:])
	b = append(b, '-')
	hex.AppendEncode(b, []byte{flags})
	return h
}

// appendMember appends a comma if needed and `"name":`.
func appendMember(out []byte, name string) []byte {
	if out[len(out)-1] != '{' {
		out = append(out, ',')
	}
	out = appendQuoted(out, name)
	return append(out, ':')
}

// appendQuoted appends s as a JSON string: as it is between quotes when it
// is printable ASCII without quote or backslash, as member names and
// trace context values are, else as jsonrpc.Quote writes it.
func appendQuoted(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return append(out, jsonrpc.Quote(s)...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// appendMeta appends the _meta object: the members of old except the trace
// context keys, then those of h. An old _meta that is not an object is
// replaced.
func appendMeta(out, old []byte, h *traceHeaders) []byte {
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
	if h.parentLen > 0 {
		out = appendMember(out, "traceparent")
		out = append(out, '"')
		out = append(out, h.parent[:h.parentLen]...)
		out = append(out, '"')
		if h.state != "" {
			out = appendMember(out, "tracestate")
			out = appendQuoted(out, h.state)
		}
	}
	return append(out, '}')
}
