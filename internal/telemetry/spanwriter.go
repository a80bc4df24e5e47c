package telemetry

// The JSONL span exporter (NewSpanWriter). Its format is the stdout
// exporter's (go.opentelemetry.io/otel/exporters/stdout/stdouttrace): one
// tracetest.SpanStub per line as encoding/json writes it. That exporter builds each line by reflection
// and re-encodes the provider's resource and scope for every span, which
// costs as much as recording the span; spanWriter writes the same bytes by
// hand, with the resource and scope encoded once. TestSpanWriterMatchesStdout
// holds it to the stdout exporter's output byte for byte, and it falls back
// to encoding/json for what is rare in warden's spans (float and slice
// attributes, links).

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/jsonenc"
)

// spanWriter is a sdktrace.SpanExporter writing JSON lines to w. It is safe
// for concurrent use.
type spanWriter struct {
	mu      sync.Mutex
	w       io.Writer // guarded by mu
	buf     []byte    // guarded by mu
	stopped bool      // guarded by mu

	// The last resource and scope encoded, and their JSON; guarded by mu.
	res      *resource.Resource
	resJSON  []byte
	scope    instrumentation.Scope
	scopeKey attribute.Distinct
	scopeSet bool
	scJSON   []byte
}

// flushAt is how much ExportSpans encodes before it writes: a batch is
// written in a few large writes, from one buffer that is kept.
const flushAt = 64 << 10

// ExportSpans implements sdktrace.SpanExporter: one line per span.
func (e *spanWriter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || len(spans) == 0 {
		return nil
	}
	b := e.buf[:0]
	defer func() {
		if cap(b) <= 4*flushAt { // a span far larger than most is not kept
			e.buf = b[:0]
		}
	}()
	for i, s := range spans {
		var err error
		if b, err = e.appendSpan(b, s); err != nil {
			return err
		}
		if len(b) >= flushAt || i == len(spans)-1 {
			if _, err := e.w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *spanWriter) Shutdown(context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	return nil
}

// appendTime appends t as encoding/json writes a time.Time: RFC 3339 with
// nanoseconds, trailing zeros dropped, in t's own zone.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendSpan appends s as one line, in tracetest.SpanStub's field order.
func (e *spanWriter) appendSpan(b []byte, s sdktrace.ReadOnlySpan) ([]byte, error) {
	var err error
	b = append(b, `{"Name":`...)
	b = appendString(b, s.Name())
	b = append(b, `,"SpanContext":`...)
	b = appendSpanContext(b, s.SpanContext())
	b = append(b, `,"Parent":`...)
	b = appendSpanContext(b, s.Parent())
	b = append(b, `,"SpanKind":`...)
	b = strconv.AppendInt(b, int64(s.SpanKind()), 10)
	b = append(b, `,"StartTime":`...)
	b = appendTime(b, s.StartTime())
	b = append(b, `,"EndTime":`...)
	b = appendTime(b, s.EndTime())
	b = append(b, `,"Attributes":`...)
	if b, err = appendAttributes(b, s.Attributes()); err != nil {
		return nil, err
	}
	b = append(b, `,"Events":`...)
	if b, err = appendEvents(b, s.Events()); err != nil {
		return nil, err
	}
	b = append(b, `,"Links":`...)
	if links := s.Links(); links == nil { // warden's spans have none
		b = append(b, "null"...)
	} else if b, err = appendJSON(b, links); err != nil {
		return nil, err
	}
	st := s.Status()
	b = append(b, `,"Status":{"Code":`...)
	switch st.Code {
	case codes.Unset, codes.Error, codes.Ok:
		b = appendString(b, st.Code.String())
	default:
		code, err := st.Code.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, code...)
	}
	b = append(b, `,"Description":`...)
	b = appendString(b, st.Description)
	b = append(b, `},"DroppedAttributes":`...)
	b = strconv.AppendInt(b, int64(s.DroppedAttributes()), 10)
	b = append(b, `,"DroppedEvents":`...)
	b = strconv.AppendInt(b, int64(s.DroppedEvents()), 10)
	b = append(b, `,"DroppedLinks":`...)
	b = strconv.AppendInt(b, int64(s.DroppedLinks()), 10)
	b = append(b, `,"ChildSpanCount":`...)
	b = strconv.AppendInt(b, int64(s.ChildSpanCount()), 10)
	res, scope, err := e.encoded(s.Resource(), s.InstrumentationScope())
	if err != nil {
		return nil, err
	}
	b = append(b, `,"Resource":`...)
	b = append(b, res...)
	b = append(b, `,"InstrumentationScope":`...)
	b = append(b, scope...)
	b = append(b, `,"InstrumentationLibrary":`...)
	b = append(b, scope...)
	return append(b, "}\n"...), nil
}

// encoded returns the JSON of res and scope, encoding each only when it is
// not the one encoded last (a provider gives all its spans the same).
func (e *spanWriter) encoded(res *resource.Resource, scope instrumentation.Scope) ([]byte, []byte, error) {
	if res != e.res || e.resJSON == nil {
		j, err := json.Marshal(res)
		if err != nil {
			return nil, nil, err
		}
		e.res, e.resJSON = res, j
	}
	key := scope.Attributes.Equivalent()
	if !e.scopeSet || scope.Name != e.scope.Name || scope.Version != e.scope.Version ||
		scope.SchemaURL != e.scope.SchemaURL || key != e.scopeKey {
		sc := scope                 // a copy, so that scope does not escape (an allocation per span)
		j, err := json.Marshal(&sc) // addressable, as in a SpanStub: attribute.Set marshals through a pointer
		if err != nil {
			return nil, nil, err
		}
		e.scope, e.scopeKey, e.scopeSet, e.scJSON = scope, key, true, j
	}
	return e.resJSON, e.scJSON, nil
}

// appendSpanContext appends trace.SpanContext's own JSON form.
func appendSpanContext(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, `{"TraceID":"`...)
	b = hex.AppendEncode(b, tid[:])
	b = append(b, `","SpanID":"`...)
	b = hex.AppendEncode(b, sid[:])
	b = append(b, `","TraceFlags":"`...)
	b = hex.AppendEncode(b, []byte{byte(sc.TraceFlags())})
	b = append(b, `","TraceState":`...)
	b = appendString(b, sc.TraceState().String())
	b = append(b, `,"Remote":`...)
	b = strconv.AppendBool(b, sc.IsRemote())
	return append(b, '}')
}

// appendAttributes appends attribute.KeyValues as encoding/json writes a
// slice of them: null for nil.
func appendAttributes(b []byte, kvs []attribute.KeyValue) ([]byte, error) {
	if kvs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, kv := range kvs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Key":`...)
		b = appendString(b, string(kv.Key))
		b = append(b, `,"Value":{"Type":"`...)
		b = append(b, kv.Value.Type().String()...)
		b = append(b, `","Value":`...)
		switch kv.Value.Type() {
		case attribute.STRING:
			b = appendString(b, kv.Value.AsString())
		case attribute.INT64:
			b = strconv.AppendInt(b, kv.Value.AsInt64(), 10)
		case attribute.BOOL:
			b = strconv.AppendBool(b, kv.Value.AsBool())
		case attribute.FLOAT64:
			// aitf.mcp.tool.duration_ms, on every tool call: as
			// encoding/json writes a float64, NaN and infinities (its
			// errors) left to it.
			if f := kv.Value.AsFloat64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
				b = appendFloat(b, f)
				break
			}
			fallthrough
		default:
			var err error
			if b, err = appendJSON(b, kv.Value.AsInterface()); err != nil {
				return nil, err
			}
		}
		b = append(b, "}}"...)
	}
	return append(b, ']'), nil
}

// appendEvents appends span events as encoding/json writes a slice of
// sdktrace.Event, times zeroed.
func appendEvents(b []byte, evs []sdktrace.Event) ([]byte, error) {
	if evs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, ev := range evs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, ev.Name)
		b = append(b, `,"Attributes":`...)
		var err error
		if b, err = appendAttributes(b, ev.Attributes); err != nil {
			return nil, err
		}
		b = append(b, `,"DroppedAttributeCount":`...)
		b = strconv.AppendInt(b, int64(ev.DroppedAttributeCount), 10)
		b = append(b, `,"Time":`...)
		b = append(appendTime(b, ev.Time), '}')
	}
	return append(b, ']'), nil
}

// appendFloat appends f, neither NaN nor infinite, as encoding/json
// writes a float64: the shortest representation, in exponent form only
// below 1e-6 or from 1e21, with an exponent of at least two digits.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSON appends v as encoding/json writes it (the fallback).
func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	return append(b, j...), err
}

// appendString appends s as a JSON string exactly as encoding/json writes
// it by default (HTML characters escaped).
func appendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s, true) }
