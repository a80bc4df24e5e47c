package telemetry

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/ocsf"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// spanView is what an exporter sees of a span, ids aside.
type spanView struct {
	Name, Kind, Status string
	Start, End         time.Time
	Attrs              []string
	Events             []string
}

func viewOf(s sdktrace.ReadOnlySpan) spanView {
	v := spanView{Name: s.Name(), Kind: s.SpanKind().String(), Status: fmt.Sprint(s.Status()), Start: s.StartTime(), End: s.EndTime()}
	for _, a := range s.Attributes() {
		v.Attrs = append(v.Attrs, string(a.Key)+"="+a.Value.String())
	}
	slices.Sort(v.Attrs)
	for _, e := range s.Events() {
		ev := e.Name + "@" + e.Time.Format(time.RFC3339Nano)
		for _, a := range e.Attributes {
			ev += " " + string(a.Key) + "=" + a.Value.String()
		}
		v.Events = append(v.Events, ev)
	}
	return v
}

// eventSink collects OCSF events as JSON, and can be held still.
type eventSink struct {
	mu  sync.Mutex
	out []string
}

func (s *eventSink) Emit(e ocsf.Event) {
	b, _ := ocsf.AppendJSON(nil, e)
	s.mu.Lock()
	s.out = append(s.out, string(b))
	s.mu.Unlock()
}

// TestDeferredEndRecordsTheSame: a Recorder that ends spans on its own
// goroutine exports, for every seed span type, a denial and an error, the
// same span and the same OCSF events as one that ends them on the caller's.
func TestDeferredEndRecordsTheSame(t *testing.T) {
	ops := map[string]*Operation{}
	for name, g := range goldens {
		ops[name] = g.op
	}
	ops["denied"] = &Operation{Method: "tools/call", Tool: "get_env", Start: start, End: start.Add(time.Millisecond),
		Denial: &Denial{Stage: "policy", Rule: "deny-list", Reason: "no"}}
	ops["error"] = &Operation{Method: "tools/call", Tool: "t", Start: start, End: start.Add(time.Millisecond),
		Error: &RPCError{Code: -32602, Message: "bad"}}
	run := func(deferred int, op Operation) (spanView, []string) {
		sr := tracetest.NewSpanRecorder()
		sink := &eventSink{}
		r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr)),
			OCSFSink: sink, Deferred: deferred})
		r.Record(context.Background(), &op)
		if err := r.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		spans := sr.Ended()
		if len(spans) != 1 {
			t.Fatalf("%d spans ended, want 1", len(spans))
		}
		return viewOf(spans[0]), sink.out
	}
	for name, op := range ops {
		if op.Start.IsZero() {
			op.Start, op.End = start, start.Add(2*time.Millisecond)
		}
		inline, inlineEvents := run(0, *op)
		deferred, deferredEvents := run(8, *op)
		if !reflect.DeepEqual(inline, deferred) {
			t.Errorf("%s: deferred span\n%+v\nwant\n%+v", name, deferred, inline)
		}
		if len(inlineEvents) == 0 || !slices.Equal(scrubIDs(inlineEvents), scrubIDs(deferredEvents)) {
			t.Errorf("%s: deferred OCSF events\n%v\nwant\n%v", name, deferredEvents, inlineEvents)
		}
	}
}

// hexIDs are trace and span ids, and the activity uids made of them.
var hexIDs = regexp.MustCompile(`[0-9a-f]{32}|[0-9a-f]{16}`)

// scrubIDs blanks the trace and span ids, which differ between two
// recordings of one operation.
func scrubIDs(evs []string) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = hexIDs.ReplaceAllString(e, "ID")
	}
	return out
}

// blockingProcessor holds every span's end until release is closed, and
// says on entered when the first end is held.
type blockingProcessor struct {
	sdktrace.SpanProcessor
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (p *blockingProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	p.once.Do(func() { close(p.entered) })
	<-p.release
	p.SpanProcessor.OnEnd(s)
}

// TestDeferredEndDropsAndCounts: with the Recorder's goroutine held (an
// exporter that does not move), End still returns at once; the queue's
// worth of spans is exported once it moves, and the rest are dropped and
// counted, as are spans ended after Close.
func TestDeferredEndDropsAndCounts(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	bp := &blockingProcessor{SpanProcessor: sr, entered: make(chan struct{}), release: make(chan struct{})}
	r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp)), Deferred: 2})
	ctx := context.Background()
	op := func(i int) *Operation {
		return &Operation{Method: "tools/call", Tool: fmt.Sprint("t", i), Start: start, End: start}
	}
	r.Record(ctx, op(0))
	<-bp.entered // the goroutine holds span 0
	began := time.Now()
	for i := 1; i < 10; i++ {
		r.Record(ctx, op(i))
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("nine Records took %v with the exporter held", d)
	}
	if st := r.Stats(); st.Dropped != 7 || st.Ended != 0 {
		t.Errorf("held: %+v, want 7 dropped (2 queued, 1 being ended), 0 ended", st)
	}
	close(bp.release)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, s := range sr.Ended() {
		tools = append(tools, s.Name())
	}
	if want := []string{"mcp.tool.invoke t0", "mcp.tool.invoke t1", "mcp.tool.invoke t2"}; !slices.Equal(tools, want) {
		t.Errorf("exported %v, want %v", tools, want)
	}
	r.Record(ctx, op(10))
	if st := r.Stats(); st.Dropped != 8 || st.Ended != 3 {
		t.Errorf("after Close: %+v, want 8 dropped, 3 ended", st)
	}
}

// TestDeferredEndKeepsTheOperationAsEnded: what the caller changes in an
// operation after End does not reach the span, which ends as it was.
func TestDeferredEndKeepsTheOperationAsEnded(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	bp := &blockingProcessor{SpanProcessor: sr, entered: make(chan struct{}), release: make(chan struct{})}
	r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp)), Deferred: 4})
	ctx := context.Background()
	r.Record(ctx, &Operation{Method: "ping", Start: start, End: start})
	<-bp.entered
	op := &Operation{Method: "tools/call", Tool: "t", Start: start, End: start}
	r.Record(ctx, op)
	op.Denial = &Denial{Stage: "audit", Rule: "write"}
	op.Tool = "changed"
	close(bp.release)
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	if s := viewOf(spans[1]); s.Name != "mcp.tool.invoke t" || s.Status != "{Unset }" {
		t.Errorf("span %s, status %s: want mcp.tool.invoke t, unset (as ended)", s.Name, s.Status)
	}
}

// TestCloseOfAHeldRecorderTimesOut: Close gives up when its context ends
// before the queue drains.
func TestCloseOfAHeldRecorderTimesOut(t *testing.T) {
	bp := &blockingProcessor{SpanProcessor: tracetest.NewSpanRecorder(), entered: make(chan struct{}), release: make(chan struct{})}
	defer close(bp.release)
	r := NewRecorder(Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp)), Deferred: 1})
	r.Record(context.Background(), &Operation{Method: "ping", Start: start})
	<-bp.entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := r.Close(ctx); err == nil {
		t.Error("Close returned nil with a span still being ended")
	}
}
