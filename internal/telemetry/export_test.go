package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/ocsf"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// stuckWriter blocks in WriteEvents until release is closed, and says when
// it has taken its first batch.
type stuckWriter struct {
	started chan struct{}
	release chan struct{}
	n       int
}

func (w *stuckWriter) WriteEvents(ctx context.Context, evs []ocsf.Event) error {
	if w.n == 0 {
		close(w.started)
		<-w.release
	}
	w.n += len(evs)
	return nil
}

// TestSlowExporterNeverBlocks: with the writer stuck, Emit keeps returning;
// what does not fit in the queue is dropped and counted.
func TestSlowExporterNeverBlocks(t *testing.T) {
	w := &stuckWriter{started: make(chan struct{}), release: make(chan struct{})}
	const size = 8
	q := NewQueue(w, QueueOptions{Size: size, MaxBatch: 1})
	ev := ocsf.Builder{}.APIActivity(&ocsf.Call{Method: "ping"})
	q.Emit(ev)
	<-w.started // the writer holds one event and is stuck
	const more = 100
	for range more {
		q.Emit(ev) // must not block: the test would hang here
	}
	if s := q.Stats(); s.Dropped != more-size {
		t.Errorf("dropped %d, want %d (queue of %d full)", s.Dropped, more-size, size)
	}
	close(w.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := q.Stats(); s.Written != 1+size || w.n != 1+size {
		t.Errorf("written %d (writer saw %d), want %d", s.Written, w.n, 1+size)
	}
	q.Emit(ev)
	if s := q.Stats(); s.Dropped != more-size+1 {
		t.Errorf("Emit after Close: dropped %d, want it counted", s.Dropped)
	}
}

// The Recorder leaves building an operation's OCSF events to the queue's
// goroutine: End returns while the events are still being built, and a full
// queue drops (and counts) all of an operation's events.
func TestQueueBuildsDeferredEvents(t *testing.T) {
	w := &stuckWriter{started: make(chan struct{}), release: make(chan struct{})}
	q := NewQueue(w, QueueOptions{Size: 1, MaxBatch: 1})
	r := NewRecorder(Options{OCSFSink: q})
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.Denial = &Denial{Stage: "policy", Rule: "deny write_*"}
	r.Record(context.Background(), &op) // taken by the writer, which sticks
	<-w.started
	building := make(chan struct{})
	q.EmitDeferred(1, func() []ocsf.Event { // queued: the writer is stuck
		close(building)
		return []ocsf.Event{ocsf.Builder{}.APIActivity(&ocsf.Call{Method: "ping"})}
	})
	r.Record(context.Background(), &op) // the queue is full: an activity and its finding dropped
	select {
	case <-building:
		t.Fatal("events were built on the caller's goroutine")
	default:
	}
	if s := q.Stats(); s.Dropped != 2 {
		t.Errorf("dropped %d, want the denied operation's 2 events", s.Dropped)
	}
	close(w.release)
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-building
	if s := q.Stats(); s.Written != 3 || w.n != 3 {
		t.Errorf("written %d (writer saw %d), want 3: the first operation's 2 events and the deferred one", s.Written, w.n)
	}
}

type failingWriter struct{}

func (failingWriter) WriteEvents(context.Context, []ocsf.Event) error { return errors.New("SIEM down") }

func TestFailingExporterIsCounted(t *testing.T) {
	q := NewQueue(failingWriter{}, QueueOptions{})
	for range 5 {
		q.Emit(ocsf.Builder{}.APIActivity(&ocsf.Call{Method: "ping"}))
	}
	q.Close(context.Background())
	if s := q.Stats(); s.Failed != 5 || s.Written != 0 {
		t.Errorf("stats = %+v, want 5 failed", s)
	}
}

// TestJSONLExports records an operation through the JSONL span writer and
// the OCSF JSONL queue and reads both files back.
func TestJSONLExports(t *testing.T) {
	var spans, events bytes.Buffer
	exp, err := NewSpanWriter(&spans)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	q := NewQueue(JSONLWriter{W: &events}, QueueOptions{})
	r := NewRecorder(Options{TracerProvider: tp, OCSFSink: q})
	op := *goldens["aitf.mcp.tool.invoke"].op
	op.Denial = &Denial{Stage: "policy", Rule: "deny write_*"}
	r.Record(context.Background(), &op)
	q.Close(context.Background())
	tp.Shutdown(context.Background())

	var s struct{ Name string }
	if err := json.Unmarshal(bytes.TrimSpace(spans.Bytes()), &s); err != nil || s.Name != "mcp.tool.invoke write_file" {
		t.Errorf("span line = %q (%v)", spans.String(), err)
	}
	var classes []float64
	sc := bufio.NewScanner(&events)
	for sc.Scan() {
		if errs := ocsf.Validate(sc.Bytes()); errs != nil {
			t.Errorf("invalid OCSF line: %v", errs)
		}
		var m map[string]any
		json.Unmarshal(sc.Bytes(), &m)
		classes = append(classes, m["class_uid"].(float64))
	}
	if len(classes) != 2 || classes[0] != 6003 || classes[1] != 2004 {
		t.Errorf("OCSF classes = %v, want [6003 2004]", classes)
	}
}

// countingWriter counts the batches and events it is given, and keeps the
// request ids of the events in the order written.
type countingWriter struct {
	mu      sync.Mutex
	batches int
	ids     []string
}

func (w *countingWriter) WriteEvents(_ context.Context, evs []ocsf.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.batches++
	for _, e := range evs {
		w.ids = append(w.ids, e.(*ocsf.APIActivity).API.Request.UID)
	}
	return nil
}

func (w *countingWriter) counts() (batches, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.batches, len(w.ids)
}

// TestQueueWritesBatchesNotEvents: events that come one by one, as a
// gateway's calls do, are written together, not a write each (in a
// gateway process a write(2) per event cost more than encoding it), and
// Close writes the batch still filling.
func TestQueueWritesBatchesNotEvents(t *testing.T) {
	w := &countingWriter{}
	q := NewQueue(w, QueueOptions{Delay: time.Minute})
	evs := testEvents(20)
	for _, e := range evs {
		q.Emit(e)
		time.Sleep(2 * time.Millisecond) // the writer goroutine has time to take each alone
	}
	if b, n := w.counts(); b != 0 || n != 0 {
		t.Errorf("before Close, %d events written in %d batches; want none before the batch is full or due", n, b)
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, n := w.counts(); b != 1 || n != len(evs) {
		t.Errorf("%d events written in %d batches, want %d in 1", n, b, len(evs))
	}
	if s := q.Stats(); s.Written != uint64(len(evs)) {
		t.Errorf("stats %+v, want %d written", s, len(evs))
	}
}

// TestQueueWritesWithinDelay: a batch that does not fill is written once
// its first event has waited Delay, without Close; a full one at once.
func TestQueueWritesWithinDelay(t *testing.T) {
	w := &countingWriter{}
	q := NewQueue(w, QueueOptions{Delay: 50 * time.Millisecond, MaxBatch: 4})
	defer q.Close(context.Background())
	evs := testEvents(6)
	start := time.Now()
	for _, e := range evs {
		q.Emit(e)
	}
	for {
		if _, n := w.counts(); n == len(evs) {
			break
		}
		if time.Since(start) > 10*time.Second {
			b, n := w.counts()
			t.Fatalf("after 10 s, %d of %d events written (%d batches); want them all within the 50 ms delay", n, len(evs), b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b, _ := w.counts(); b != 2 {
		t.Errorf("%d batches, want 2: a full one of 4, then the 2 left when due", b)
	}
	if !slices.Equal(w.ids, []string{"0", "1", "2", "3", "4", "5"}) {
		t.Errorf("events written in the order %v", w.ids)
	}
}

// TestOCSFFileHasTheLastEventsAfterClose: what was emitted before Close is
// in the JSONL file when Close returns, in order, the last event included,
// however the batches fell.
func TestOCSFFileHasTheLastEventsAfterClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ocsf.jsonl")
	q, err := NewOCSFQueue(OCSFExport{Kind: OCSFExporterJSONL, Path: path}, QueueOptions{Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const n = 700 // two full batches of 256 and one filling
	for i, e := range testEvents(n) {
		q.Emit(e)
		if i%100 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if err := q.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines in the OCSF file after Close, want %d", len(lines), n)
	}
	for i, l := range lines {
		var e struct {
			API struct{ Request struct{ UID string } }
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.API.Request.UID != fmt.Sprint(i) {
			t.Fatalf("line %d: request uid %q (%v), want %d", i+1, e.API.Request.UID, err, i)
		}
	}
}
