// Package telemetry turns every MCP operation that passes through warden
// into an OpenTelemetry span and, optionally, OCSF events, following the
// AITF MCP span conventions (the seed: eight span types with their names,
// kinds, attributes and events) and the OpenTelemetry MCP semantic
// conventions. Both conventions are on by default; Options.Conventions
// selects them.
//
// The seam with the gateway is an Operation, filled per request/response
// pair, and a Recorder:
//
//	ctx, sp := rec.Start(ctx, op)              // when the request arrives
//	params, _ = telemetry.InjectMeta(params, sp.Context()) // before forwarding
//	…                                          // response, or denial
//	rec.End(sp, op)                            // span ends, OCSF events emitted
//
// or rec.Record(ctx, op) for an operation that is over already (a denial,
// a notification). The client's trace context is read from
// params._meta.traceparent, so the client's span, warden's and the
// upstream's join one trace.
//
// # Names
//
// With the AITF convention on, a span has the seed's name and kind
// ("mcp.tool.invoke read_file", CLIENT; sampling SERVER) and the seed's
// aitf.* attributes and events (mcp.server.capabilities, mcp.tool.input,
// mcp.tool.output, mcp.tool.approval). With OTel only, the name is
// "{mcp.method.name} {target}" ("tools/call read_file") and the kind is
// SERVER for the client's requests, CLIENT for the upstream's. The OTel
// attributes (mcp.method.name, jsonrpc.request.id, mcp.session.id,
// gen_ai.tool.name, gen_ai.operation.name, error.type, …) go on the same
// span. gen_ai.usage.* is set on sampling spans under either convention.
// warden.* attributes (decision, stage, rule, invariant, params hash, jti,
// audit seq) are always set.
//
// # Sensitive content
//
// Tool inputs and outputs, prompt arguments and error messages pass through
// Options.Capture before they reach a span or an event: redacted and capped
// at 4 KiB by default, or full, capped, hash only, or off.
package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/ocsf"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Convention names a set of attribute names.
type Convention string

// The conventions.
const (
	ConventionAITF Convention = "aitf" // the seed's names
	ConventionOTel Convention = "otel" // OpenTelemetry MCP semantic conventions
)

// ScopeName is the instrumentation scope of warden's spans.
const ScopeName = "github.com/agentwarden/warden/internal/telemetry"

// EventSink receives OCSF events. Emit must not block: an exporter queues
// the event or drops it (see Queue).
type EventSink interface {
	Emit(ocsf.Event)
}

// A DeferredSink is an EventSink that also takes an operation's events
// unbuilt: Recorder.End hands it build, which returns the n events, and the
// sink calls it on its own goroutine, off the call's path (Queue does).
// EmitDeferred must not block either.
type DeferredSink interface {
	EventSink
	EmitDeferred(n int, build func() []ocsf.Event)
}

// Options configures a Recorder. The zero value records both conventions
// with the global tracer provider, redacts content, and emits no OCSF.
type Options struct {
	// TracerProvider makes the operations' spans, unless SpanExporter is
	// set, and StartGroup's always. nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider

	// SpanExporter, when set, receives the operations' spans from the
	// Recorder itself, with no SDK span on the way (spanrecord.go): it
	// makes their ids, builds each as the SDK would have
	// (sdktrace.ReadOnlySpan) when it ends and, with Deferred, hands them
	// over in batches from its goroutine (without Deferred, one by one on
	// the caller's). The Recorder owns the exporter: Close shuts it down.
	// Resource is the spans' resource (nil means NewTracerProvider's:
	// service.name warden), IDGenerator makes their ids (nil means random,
	// as the SDK's default).
	SpanExporter sdktrace.SpanExporter
	Resource     *resource.Resource
	IDGenerator  sdktrace.IDGenerator

	Conventions []Convention // nil or empty means both
	Capture     Capture

	// OCSFSink, when set, receives the OCSF events of every operation in
	// OCSFProfile (default standard), built with Product.
	OCSFSink    EventSink
	OCSFProfile ocsf.Profile
	Product     ocsf.Product

	Logger *slog.Logger

	// Deferred, when positive, takes the end of each span off the
	// caller's goroutine: End (and Record) queue the operation, up to
	// Deferred of them, and one goroutine of the Recorder builds the
	// span's attributes and events, ends it and hands its OCSF events to
	// the sink. When the queue is full the operation is dropped: its span
	// is never ended, so never exported, and its OCSF events are never
	// built; Stats counts it, and the log says so at the first drop and
	// every 1000th. Close drains the queue. 0 ends each span on the
	// caller's goroutine, which tests that read a span at once rely on.
	Deferred int
}

// Recorder records operations. Its configuration is immutable after
// NewRecorder, and it is safe for concurrent use. With Options.Deferred it
// runs one goroutine, which Close stops:
//
//	End ─▶ [ ends: bounded ] ─▶ goroutine: attributes, events, span.End, OCSF hand-off
//	   └─ full or closed: dropped++
type Recorder struct {
	// immutable after NewRecorder
	tracer     trace.Tracer
	aitf, otel bool
	capture    Capture
	sink       EventSink
	builder    ocsf.Builder
	log        *slog.Logger
	native     *nativeSpans  // nil unless Options.SpanExporter
	ends       chan ending   // nil unless Options.Deferred
	wakeEnds   chan struct{} // endWake operations wait in ends, or it is closed
	done       chan struct{} // closed when the ending goroutine returns

	ended, dropped, failed atomic.Uint64

	mu     sync.RWMutex // guards closed against a send on a closed ends
	closed bool         // guarded by mu
}

// ending is a span to end with its operation, a copy the caller no longer
// touches.
type ending struct {
	span *Span
	op   *Operation
}

// RecorderStats counts what happened to the spans a Recorder ended: Ended
// on its goroutine (Options.Deferred) or the caller's, Dropped by its
// full queue, Failed: handed to Options.SpanExporter, which failed to
// export them (not retried). OCSF is the OCSF sink's counts when it is a
// Queue.
type RecorderStats struct {
	Ended, Dropped, Failed uint64
	OCSF                   QueueStats
}

// NewRecorder returns a Recorder.
func NewRecorder(opts Options) *Recorder {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	r := &Recorder{
		tracer:  tp.Tracer(ScopeName),
		capture: opts.Capture,
		sink:    opts.OCSFSink,
		builder: ocsf.Builder{Profile: opts.OCSFProfile, Product: opts.Product},
		log:     opts.Logger,
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if opts.SpanExporter != nil {
		r.native = &nativeSpans{exp: opts.SpanExporter, res: opts.Resource, ids: opts.IDGenerator,
			scope: instrumentation.Scope{Name: ScopeName}, limits: sdktrace.NewSpanLimits()}
		if r.native.res == nil {
			r.native.res = wardenResource()
		}
	}
	if opts.Deferred > 0 {
		r.ends = make(chan ending, opts.Deferred)
		r.wakeEnds = make(chan struct{}, 1)
		r.done = make(chan struct{})
		go r.run()
	}
	if len(opts.Conventions) == 0 {
		r.aitf, r.otel = true, true
	}
	for _, c := range opts.Conventions {
		switch c {
		case ConventionAITF:
			r.aitf = true
		case ConventionOTel:
			r.otel = true
		default:
			r.log.Warn("telemetry: unknown convention ignored", "convention", c)
		}
	}
	return r
}

// Span is an operation's span between Start and End: an SDK span, or
// (Options.SpanExporter) the Recorder's own record of one.
type Span struct {
	span trace.Span // nil for the Recorder's own
	typ  SpanType

	// the Recorder's own
	sc, parent trace.SpanContext
	name       string
	kind       trace.SpanKind
}

// Context returns the span's context, to inject into the upstream request.
func (s *Span) Context() trace.SpanContext {
	if s.span == nil {
		return s.sc
	}
	return s.span.SpanContext()
}

// Start starts op's span as a child of the trace context in op.Params'
// _meta if there is one, else of ctx's span. op needs its method, tool,
// params and start time; the rest may be filled before End. The returned
// context carries the span.
func (r *Recorder) Start(ctx context.Context, op *Operation) (context.Context, *Span) {
	if op.Start.IsZero() {
		op.Start = time.Now()
	}
	t := op.spanType()
	parent := ContextFromParams(ctx, op.Params)
	if r.native != nil {
		s := r.native.start(ctx, trace.SpanContextFromContext(parent), t, r.spanName(t, op), r.spanKind(t, op))
		return trace.ContextWithSpanContext(parent, s.sc), s
	}
	ctx, span := r.tracer.Start(parent, r.spanName(t, op),
		trace.WithSpanKind(r.spanKind(t, op)), trace.WithTimestamp(op.Start))
	return ctx, &Span{span: span, typ: t}
}

// StartSpan is Start for a caller that needs the span only (its Context
// to inject, and to end it), not a context carrying it: with
// Options.SpanExporter it builds no context, so it costs the span alone
// on the call's path.
func (r *Recorder) StartSpan(ctx context.Context, op *Operation) *Span {
	if r.native == nil {
		_, s := r.Start(ctx, op)
		return s
	}
	if op.Start.IsZero() {
		op.Start = time.Now()
	}
	t := op.spanType()
	parent := trace.SpanContextFromContext(ContextFromParams(ctx, op.Params))
	return r.native.start(ctx, parent, t, r.spanName(t, op), r.spanKind(t, op))
}

// End sets the span's attributes and events from op, ends it at op.End (now
// if zero), and hands op's OCSF events to the sink (to be built on the
// sink's own goroutine when it is a DeferredSink, as a Queue is). With
// Options.Deferred all of that is done on the Recorder's goroutine, from a
// copy of op made now.
func (r *Recorder) End(s *Span, op *Operation) {
	if op.End.IsZero() {
		op.End = time.Now()
	}
	if r.ends == nil {
		r.EndOwned(s, op)
		return
	}
	cp := *op
	r.EndOwned(s, &cp)
}

// EndOwned is End for a caller that hands op over: it neither reads nor
// changes op (nor what its slices hold) once EndOwned is called, so that
// with Options.Deferred op is queued as it is, without End's copy (an
// Operation is some 600 bytes, copied on the call's path).
func (r *Recorder) EndOwned(s *Span, op *Operation) {
	if op.End.IsZero() {
		op.End = time.Now()
	}
	if r.ends == nil {
		if ro := r.end(s, op); ro != nil {
			r.export([]sdktrace.ReadOnlySpan{ro})
		}
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.closed {
		select {
		case r.ends <- ending{s, op}:
			if len(r.ends) >= endWake {
				r.wake()
			}
			return
		default:
		}
	}
	if d := r.dropped.Add(1); d%1000 == 1 {
		r.log.Warn("telemetry: span queue full; spans and their OCSF events dropped", "dropped", d)
	}
}

// While calls keep coming, the Recorder's goroutine lets their operations
// queue up for endWait before it takes them, or until endWake of them
// wait (the End that queues the endWake-th wakes it): a wake-up per
// endWait or per endWake calls, not per call, nor per nap of a goroutine
// that polls.
const (
	endWait = 50 * time.Millisecond
	endWake = 256
)

// wake tells the Recorder's goroutine that endWake operations wait, or
// that the queue closed.
func (r *Recorder) wake() {
	select {
	case r.wakeEnds <- struct{}{}:
	default: // already told
	}
}

// run ends the queued spans, until Close, and exports the Recorder's own
// in batches: exportBatch at a time, or what there is after exportDelay.
func (r *Recorder) run() {
	defer close(r.done)
	var batch []sdktrace.ReadOnlySpan
	timer := time.NewTimer(exportDelay)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time // the timer's, while batch is not empty
	wait := time.NewTimer(endWait)
	wait.Stop()
	defer wait.Stop()
	flush := func() {
		r.export(batch)
		clear(batch) // hold no span
		batch, due = batch[:0], nil
		timer.Stop()
	}
	take := func(e ending) {
		ro := r.end(e.span, e.op)
		if ro == nil {
			return
		}
		batch = append(batch, ro)
		switch {
		case len(batch) >= exportBatch:
			flush()
		case len(batch) == 1:
			timer.Reset(exportDelay)
			due = timer.C
		}
	}
	for {
		// Idle: the first operation (or the batch's deadline) wakes the
		// goroutine.
		select {
		case e, ok := <-r.ends:
			if !ok {
				flush()
				return
			}
			take(e)
		case <-due:
			flush()
			continue
		}
		// Busy: wait for more (endWait, or endWake of them) instead of
		// parking on the queue, so that the next calls' Ends are sends to
		// a goroutine that is not woken, then take what has queued; back
		// to idle when a wait brought nothing.
		for {
			wait.Reset(endWait)
			select {
			case <-wait.C:
			case <-r.wakeEnds:
				wait.Stop()
			case <-due:
				wait.Stop()
				flush()
			}
			n := 0
		drain:
			for {
				select {
				case e, ok := <-r.ends:
					if !ok {
						flush()
						return
					}
					take(e)
					n++
				default:
					break drain
				}
			}
			if n == 0 {
				break
			}
		}
	}
}

// Close stops a Recorder with Options.Deferred from taking spans, and waits
// until the queued ones are ended or ctx ends. Spans ended afterwards are
// dropped and counted. Close the Recorder before the tracer provider and
// the OCSF sink, so that they get its last spans and events.
func (r *Recorder) Close(ctx context.Context) error {
	if r.ends == nil {
		return r.shutdownExporter(ctx)
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.ends)
		r.wake()
	}
	r.mu.Unlock()
	select {
	case <-r.done:
		if d := r.dropped.Load(); d > 0 {
			r.log.Warn("telemetry: spans lost", "ended", r.ended.Load(), "dropped", d)
		}
		return r.shutdownExporter(ctx)
	case <-ctx.Done():
		return errors.Join(errors.New("telemetry: span queue not drained"), ctx.Err())
	}
}

// shutdownExporter shuts Options.SpanExporter down, if there is one.
func (r *Recorder) shutdownExporter(ctx context.Context) error {
	if r.native == nil {
		return nil
	}
	return r.native.exp.Shutdown(ctx)
}

// Stats returns the counters.
func (r *Recorder) Stats() RecorderStats {
	st := RecorderStats{Ended: r.ended.Load(), Dropped: r.dropped.Load(), Failed: r.failed.Load()}
	if q, ok := r.sink.(*Queue); ok {
		st.OCSF = q.Stats()
	}
	return st
}

// attrBuffers hold spans' attribute buffers between spans (end).
var attrBuffers = sync.Pool{New: func() any { b := make([]attribute.KeyValue, 0, 32); return &b }}

// end does End's work on the goroutine that calls it, and returns the
// Recorder's own span to export (nil for an SDK span, or one not sampled).
func (r *Recorder) end(s *Span, op *Operation) sdktrace.ReadOnlySpan {
	// Sized for a tools/call in both conventions, so that none grows. The
	// attributes' buffer is reused: SetAttributes copies them.
	ab := attrBuffers.Get().(*[]attribute.KeyValue)
	b := spanBuilder{capture: r.capture, attrs: (*ab)[:0],
		seed: make([]string, 0, 16), events: make([]event, 0, 4), memo: make([]captured, 0, 4)}
	if r.aitf {
		r.aitfAttributes(&b, s.typ, op)
	}
	if r.otel {
		r.otelAttributes(&b, s.typ, op)
	}
	if s.typ == SpanSamplingRequest {
		usageAttributes(&b, op)
	}
	wardenAttributes(&b, op)
	var ro sdktrace.ReadOnlySpan
	if s.span == nil {
		if s.sc.IsSampled() && r.native.exp != NoSpans {
			ro = r.native.stub(s, &b, op, r.aitf).Snapshot() // copies b.attrs
		}
		clear(b.attrs) // hold no content in the pool
		*ab, b.attrs = b.attrs[:0], nil
		attrBuffers.Put(ab)
	} else {
		r.sdkEnd(s, &b, ab, op)
	}
	r.ended.Add(1)
	if r.sink != nil {
		r.emitEvents(ocsfCall(&b, s, op), op.Findings)
	}
	return ro
}

// sdkEnd sets an SDK span's attributes, events and status and ends it.
func (r *Recorder) sdkEnd(s *Span, b *spanBuilder, ab *[]attribute.KeyValue, op *Operation) {
	s.span.SetAttributes(b.attrs...)
	clear(b.attrs) // hold no content in the pool
	*ab, b.attrs = b.attrs[:0], nil
	attrBuffers.Put(ab)
	s.span.SetAttributes(op.Attributes...)
	if r.aitf {
		for _, e := range b.events {
			s.span.AddEvent(e.name, trace.WithAttributes(e.attrs...), trace.WithTimestamp(eventTime(e, op)))
		}
	}
	for _, e := range op.Events {
		ts := e.Time
		if ts.IsZero() {
			ts = op.Start
		}
		s.span.AddEvent(e.Name, trace.WithAttributes(e.Attributes...), trace.WithTimestamp(ts))
	}
	if op.failed() {
		s.span.SetStatus(codes.Error, statusDescription(b, op))
	}
	s.span.End(trace.WithTimestamp(op.End))
}

// emitEvents sends the OCSF events of call and its findings to the sink:
// built there when it is a DeferredSink (call holds captured copies of the
// operation's content, nothing the caller keeps using), else here.
func (r *Recorder) emitEvents(call *ocsf.Call, findings []ocsf.Finding) {
	builder := r.builder
	build := func() []ocsf.Event {
		evs := builder.Events(call)
		for _, f := range findings {
			evs = append(evs, builder.Finding(call, f))
		}
		return evs
	}
	if ds, ok := r.sink.(DeferredSink); ok {
		n := 1 + len(findings)
		if call.Denial != nil {
			n++ // its Detection Finding
		}
		ds.EmitDeferred(n, build)
		return
	}
	for _, ev := range build() {
		r.sink.Emit(ev)
	}
}

// StartGroup starts an INTERNAL span named name that groups operations
// (one conformance probe, say): the operations started with the returned
// context are its children. The caller ends it.
func (r *Recorder) StartGroup(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return r.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// Record starts and ends op's span at once, for an operation that is over
// (a denial, a notification), and returns the span's context.
func (r *Recorder) Record(ctx context.Context, op *Operation) trace.SpanContext {
	_, s := r.Start(ctx, op)
	r.End(s, op)
	return s.Context()
}

// RecordOwned is Record for a caller that hands op over, as to EndOwned.
func (r *Recorder) RecordOwned(ctx context.Context, op *Operation) trace.SpanContext {
	s := r.StartSpan(ctx, op)
	r.EndOwned(s, op)
	return s.Context()
}

func statusDescription(b *spanBuilder, op *Operation) string {
	var msg string
	switch {
	case op.Denial != nil:
		msg = "denied by " + op.Denial.Stage + " (" + op.Denial.Rule + ")"
	case op.Error != nil:
		msg = op.Error.Message
	default:
		msg = "tool_error"
	}
	if s, ok := b.captured(msg); ok {
		return s
	}
	return "error"
}

// ocsfCall maps op to the OCSF builders' input, with content captured as
// for spans.
func ocsfCall(b *spanBuilder, s *Span, op *Operation) *ocsf.Call {
	sc := s.Context()
	method := op.Method
	if method == "" && s.typ == SpanServerDisconnect {
		// No MCP method ends a session; OCSF requires an operation name.
		method = "mcp.server.disconnect"
	}
	c := &ocsf.Call{
		SeedSpan: s.typ.Seed(), SeedFields: b.seed,
		Method: method, RequestID: op.RequestID, Session: op.Session, Actor: op.Actor, Client: op.Client,
		ClientIP: op.ClientIP, Upstream: op.Upstream, UpstreamVersion: op.UpstreamVersion,
		UpstreamURL: op.UpstreamURL, Transport: op.serverTransport(), ClientTransport: op.Transport, ProtocolVersion: op.ProtocolVersion,
		Tool: op.Tool, ResourceURI: lookupString(op.Params, "uri"),
		ToolError: op.toolError(), Approval: op.Approval, Approver: op.Approver,
		ParamsHash: op.ParamsHash, JTI: op.JTI, AuditSeq: op.AuditSeq, AuditHash: op.AuditHash,
		TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), Start: op.Start, End: op.End,
	}
	if s.typ == SpanPromptGet {
		c.Prompt = lookupString(op.Params, "name")
	}
	args := op.Arguments
	if args == nil && op.Method != "tools/call" {
		args, _ = lookup(op.Params, "arguments")
	}
	if v, ok := b.captured(string(args)); ok {
		c.Arguments = rawOrString(v)
	}
	if out, _ := b.toolOutput(op); out != "" && s.typ == SpanToolInvoke {
		if v, ok := b.captured(out); ok {
			c.Result = rawOrString(v)
		}
	}
	if op.Error != nil {
		c.ErrorCode = op.Error.Code
		c.ErrorMessage, _ = b.captured(op.Error.Message)
	}
	if d := op.Denial; d != nil {
		reason, _ := b.captured(d.Reason)
		c.Denial = &ocsf.Denial{Stage: d.Stage, Rule: d.Rule, Invariant: d.Invariant, Reason: reason}
	}
	return c
}

// rawOrString returns s as JSON: itself when it is valid JSON (captured
// JSON that was neither cut nor hashed), else as a JSON string.
func rawOrString(s string) json.RawMessage {
	if mayBeJSON(s) && json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return jsonrpc.Quote(s)
}

// mayBeJSON reports whether s starts, after white space, as a JSON value
// can: text that cannot is quoted without asking json.Valid, whose
// refusal allocates.
func mayBeJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[', '"', '-', 't', 'f', 'n':
			return true
		default:
			return c >= '0' && c <= '9'
		}
	}
	return false
}
