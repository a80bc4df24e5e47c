package telemetry

// warden's own span records (Options.SpanExporter). On the call's path a
// span is a few words: its ids, made here as the SDK makes them, its
// parent, name and kind. Its attributes, events and status are built when it
// ends (on the Recorder's goroutine with Options.Deferred), into a
// tracetest.SpanStub whose Snapshot is the sdktrace.ReadOnlySpan an SDK
// span would have given its exporter; the goroutine hands them over in
// batches. No SDK span, attribute set or span processor is on the way.
//
//	Start: ids, parent ─▶ Span ─▶ InjectMeta (traceparent)
//	End ─▶ [ ends: bounded, drops counted ] ─▶ goroutine: attributes, events,
//	       status ─▶ SpanStub.Snapshot ─▶ batch (exportBatch spans, or
//	       exportDelay old) ─▶ SpanExporter.ExportSpans
//
// What the SDK would have done with the same span, this does too
// (TestNativeSpansAreTheSDKs holds the two to each other): the parent-based
// always-on sampler (a span under an unsampled parent is not exported, but
// its context is still propagated), trace flags and trace state from the
// parent, sdktrace.NewSpanLimits (attribute, event and per-event attribute
// counts, the attribute value length; OTEL_SPAN_* environment variables
// included), invalid attributes dropped, a repeated key's last value kept
// in its first place, and the dropped counts.

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Batching of exported spans: at most exportBatch spans per ExportSpans,
// and no span waits longer than exportDelay for its batch to fill (the
// SDK's BatchSpanProcessor defaults are 512 and 5 s).
const (
	exportBatch = 512
	exportDelay = time.Second
)

// NoSpans is a SpanExporter for a Recorder whose operations need span
// contexts (for propagation and OCSF's trace and span ids) but whose spans
// go nowhere: given it as Options.SpanExporter, the Recorder makes ids and
// builds no span.
var NoSpans sdktrace.SpanExporter = noSpans{}

type noSpans struct{}

func (noSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (noSpans) Shutdown(context.Context) error                             { return nil }

// nativeSpans is the Recorder's span record keeping when Options.SpanExporter
// is set. Its fields are immutable after NewRecorder, except batch, which
// only the goroutine that ends spans touches (the Recorder's, or, without
// Options.Deferred, the caller's under mu).
type nativeSpans struct {
	exp    sdktrace.SpanExporter
	res    *resource.Resource
	scope  instrumentation.Scope
	ids    sdktrace.IDGenerator // nil: randomIDs
	limits sdktrace.SpanLimits
}

// newIDs returns the ids of a span under parent, as the SDK's tracer does:
// the parent's trace id if it has one, and always a new span id.
func (n *nativeSpans) newIDs(ctx context.Context, parent trace.SpanContext) (trace.TraceID, trace.SpanID) {
	if n.ids != nil {
		if parent.TraceID().IsValid() {
			return parent.TraceID(), n.ids.NewSpanID(ctx, parent.TraceID())
		}
		return n.ids.NewIDs(ctx)
	}
	var tid trace.TraceID
	if parent.TraceID().IsValid() {
		tid = parent.TraceID()
	}
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return tid, sid
}

// start returns the span of an operation that starts now under parent
// (ParentBased(AlwaysSample): sampled unless its parent is valid and not
// sampled).
func (n *nativeSpans) start(ctx context.Context, parent trace.SpanContext, typ SpanType, name string, kind trace.SpanKind) *Span {
	tid, sid := n.newIDs(ctx, parent)
	flags := parent.TraceFlags() | trace.FlagsSampled
	if parent.IsValid() && !parent.IsSampled() {
		flags = parent.TraceFlags() &^ trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, TraceState: parent.TraceState()})
	return &Span{typ: typ, sc: sc, parent: parent, name: name, kind: kind}
}

// stub is what the SDK would have exported of s ended with b's attributes
// and events, extra (Operation.Attributes) and op's events and status.
func (n *nativeSpans) stub(s *Span, b *spanBuilder, op *Operation, aitf bool) tracetest.SpanStub {
	st := tracetest.SpanStub{
		Name: s.name, SpanContext: s.sc, Parent: s.parent, SpanKind: s.kind,
		StartTime: op.Start, EndTime: op.End,
		Resource: n.res, InstrumentationScope: n.scope,
	}
	st.Attributes, st.DroppedAttributes = n.limitAttributes(b.attrs, op.Attributes)
	nev := len(op.Events)
	if aitf {
		nev += len(b.events)
	}
	if nev > 0 {
		evs := make([]sdktrace.Event, 0, nev)
		if aitf {
			for _, e := range b.events {
				evs = append(evs, n.event(e.name, e.attrs, eventTime(e, op)))
			}
		}
		for _, e := range op.Events {
			ts := e.Time
			if ts.IsZero() {
				ts = op.Start
			}
			evs = append(evs, n.event(e.Name, e.Attributes, ts))
		}
		// The SDK keeps the last EventCountLimit events.
		if lim := n.limits.EventCountLimit; lim >= 0 && len(evs) > lim {
			st.DroppedEvents = len(evs) - lim
			evs = evs[len(evs)-lim:]
		}
		st.Events = evs
	}
	if op.failed() {
		st.Status = sdktrace.Status{Code: codes.Error, Description: statusDescription(b, op)}
	}
	return st
}

// event is an event as the SDK's AddEvent records it.
func (n *nativeSpans) event(name string, attrs []attribute.KeyValue, at time.Time) sdktrace.Event {
	e := sdktrace.Event{Name: name, Attributes: attrs, Time: at}
	if lim := n.limits.AttributePerEventCountLimit; lim >= 0 && len(attrs) > lim {
		e.DroppedAttributeCount = len(attrs) - lim
		e.Attributes = attrs[:lim]
	}
	return e
}

// eventTime is when a seed event happened: its own time, else the
// operation's end for output and capabilities, its start for the others.
func eventTime(e event, op *Operation) time.Time {
	switch {
	case !e.at.IsZero():
		return e.at
	case e.name == EventToolOutput || e.name == EventCapabilities:
		return op.End
	}
	return op.Start
}

// limitAttributes returns a and then extra as the SDK's SetAttributes(a...),
// SetAttributes(extra...) leave them, with the count it dropped: invalid
// ones dropped, a repeated key's last value in its first place, at most
// AttributeCountLimit keys (later new keys dropped), strings cut to
// AttributeValueLengthLimit characters. The result is a new slice.
func (n *nativeSpans) limitAttributes(a, extra []attribute.KeyValue) ([]attribute.KeyValue, int) {
	total := len(a) + len(extra)
	if total == 0 {
		return nil, 0
	}
	lim := n.limits.AttributeCountLimit
	if lim == 0 {
		return nil, total
	}
	cut := n.limits.AttributeValueLengthLimit >= 0
	if !cut && (lim < 0 || total <= lim) && validDistinct(a, extra) {
		// What a span of warden's almost always is, under the default
		// limits: nothing to drop, merge or cut, so a copy.
		out := make([]attribute.KeyValue, total)
		copy(out[copy(out, a):], extra)
		return out, 0
	}
	out := make([]attribute.KeyValue, 0, total)
	dropped := 0
	for _, src := range [2][]attribute.KeyValue{a, extra} {
		for i := range src {
			kv := &src[i]
			if !kv.Valid() {
				dropped++
				continue
			}
			if j := indexOfKey(out, kv.Key); j >= 0 {
				out[j] = n.truncate(*kv, cut)
				continue
			}
			if lim > 0 && len(out) >= lim {
				dropped++
				continue
			}
			out = append(out, n.truncate(*kv, cut))
		}
	}
	if len(out) == 0 {
		return nil, dropped
	}
	return out, dropped
}

// validDistinct reports whether every attribute of a and extra is valid
// and their keys are distinct, comparing only keys that share a slot of a
// small table (by length, first and last byte): keys that differ there,
// most of a span's, are never compared byte by byte. Too many attributes
// for the table report false, and the caller takes the general path.
func validDistinct(a, extra []attribute.KeyValue) bool {
	const slots = 128
	if len(a)+len(extra) > slots/2 {
		return false
	}
	var table [slots]uint8 // index+1 of the first attribute in the slot, or 0
	var next [slots / 2]uint8
	var keys [slots / 2]attribute.Key
	n := 0
	for _, src := range [2][]attribute.KeyValue{a, extra} {
		for i := range src {
			kv := &src[i]
			if !kv.Valid() {
				return false
			}
			k := kv.Key
			h := (uint(len(k))*31 + uint(k[0])*7 + uint(k[len(k)-1])) % slots
			for j := table[h]; j != 0; j = next[j-1] {
				if keys[j-1] == k {
					return false
				}
			}
			keys[n] = k
			next[n] = table[h]
			n++
			table[h] = uint8(n)
		}
	}
	return true
}

// indexOfKey is the index of key in kvs, -1 if absent. A span has a few
// tens of attributes: a scan is cheaper than a map.
func indexOfKey(kvs []attribute.KeyValue, key attribute.Key) int {
	for i := range kvs {
		if kvs[i].Key == key {
			return i
		}
	}
	return -1
}

// truncate cuts kv's string values to AttributeValueLengthLimit characters
// when cut (the limit is not negative, the default), as the SDK does.
func (n *nativeSpans) truncate(kv attribute.KeyValue, cut bool) attribute.KeyValue {
	if !cut {
		return kv
	}
	lim := n.limits.AttributeValueLengthLimit
	switch kv.Value.Type() {
	case attribute.STRING:
		kv.Value = attribute.StringValue(cutRunes(kv.Value.AsString(), lim))
	case attribute.STRINGSLICE:
		ss := kv.Value.AsStringSlice()
		for i := range ss {
			ss[i] = cutRunes(ss[i], lim)
		}
		kv.Value = attribute.StringSliceValue(ss)
	}
	return kv
}

// cutRunes returns the first lim characters of s (valid UTF-8 as warden's
// attribute values are: they come from the strict decoder or are its own).
func cutRunes(s string, lim int) string {
	if len(s) <= lim {
		return s
	}
	count := 0
	for i := range s {
		if count == lim {
			return s[:i]
		}
		count++
	}
	return s
}

// export hands batch to the exporter, counting what it could not take.
func (r *Recorder) export(batch []sdktrace.ReadOnlySpan) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.native.exp.ExportSpans(ctx, batch); err != nil {
		if f := r.failed.Add(uint64(len(batch))); f == uint64(len(batch)) || f/1000 != (f-uint64(len(batch)))/1000 {
			r.log.Warn("telemetry: span export failed", "spans", len(batch), "failed", f, "err", err)
		}
	}
}
