package telemetry

// Exporters. Spans reach an sdktrace.SpanExporter from the Recorder's own
// goroutine, in batches (Options.SpanExporter, as the gateway records
// them), or through the OpenTelemetry SDK: sdktrace.WithBatcher, whose
// BatchSpanProcessor has a bounded queue and drops spans when it is full
// (it never blocks the caller unless WithBlocking is set). NewSpanWriter
// gives the JSONL file and stdout span exporters.
//
// OCSF events go through a Queue: Emit puts the event in a bounded buffer
// and returns at once; one goroutine hands events to an EventWriter (a
// JSONL file, or HTTPWriter for an HTTP sink). When the buffer is full the
// event is dropped and counted, so a slow or failing SIEM never delays a
// call. Recorder.End does not even build the events: it queues a function
// that builds an operation's events (EmitDeferred), and the writer
// goroutine calls it. exporters.go builds both kinds from configuration.
//
// The writer goroutine hands the writer batches, not events: a batch goes
// out when it holds MaxBatch events or its first event has waited Delay
// (1 s), and at Close. While a batch fills, the goroutine sleeps until it
// is due or until an Emit finds a batch's worth waiting (which then wakes
// it), so that most Emits are a send to a goroutine that is not woken:
// a few wake-ups per batch, not one per event, nor one per nap. In a
// gateway process, a write(2) per event (what a goroutine woken for each
// one wrote) cost more CPU than encoding the event.
//
//	Recorder.End ─EmitDeferred─▶ [ bounded buffer ] ─▶ writer goroutine: build, batch ─▶ EventWriter
//	                         └─ full: dropped += n           (MaxBatch events, or Delay, or Close)

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/ocsf"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NewSpanWriter returns a span exporter that writes one JSON object per
// span and line to w (a file, or os.Stdout), in the format of the
// OpenTelemetry stdout exporter (stdouttrace): see
// spanwriter.go. Wrap it with sdktrace.WithBatcher so that a slow w never
// blocks a call.
func NewSpanWriter(w io.Writer) (sdktrace.SpanExporter, error) {
	return &spanWriter{w: w}, nil
}

// EventWriter writes a batch of OCSF events somewhere (a file, stdout, an
// HTTP sink). Queue calls it from one goroutine.
type EventWriter interface {
	WriteEvents(ctx context.Context, events []ocsf.Event) error
}

// JSONLWriter is an EventWriter that writes one JSON object per event and
// line to W (ocsf.AppendJSON, encoding/json's bytes without its
// reflection), one Write per batch.
type JSONLWriter struct {
	W io.Writer
}

// WriteEvents implements EventWriter. An event that cannot be encoded
// fails the batch, and nothing of it is written.
func (j JSONLWriter) WriteEvents(ctx context.Context, events []ocsf.Event) error {
	bp := getBatchBuffer()
	defer putBatchBuffer(bp)
	buf, err := appendJSONL((*bp)[:0], events)
	*bp = buf
	if err != nil {
		return err
	}
	_, err = j.W.Write(buf)
	return err
}

// batchBuffers hold the bytes of a batch of events between batches, so
// that a batch's encoding does not allocate (and clear) its buffer anew,
// nor grow it again to a batch's size: a few buffers, kept whatever the
// garbage collector does (a sync.Pool is emptied by every other
// collection, and a busy gateway collects many times a second; then
// every batch grew a new buffer, a tenth of a call's garbage).
var batchBuffers = make(chan *[]byte, 4)

// getBatchBuffer returns a kept buffer, or a new one.
func getBatchBuffer() *[]byte {
	select {
	case bp := <-batchBuffers:
		return bp
	default:
		b := make([]byte, 0, 64<<10)
		return &b
	}
}

// putBatchBuffer keeps bp for the next batch, unless a huge batch grew it
// or enough are kept.
func putBatchBuffer(bp *[]byte) {
	if cap(*bp) > 4<<20 {
		return
	}
	*bp = (*bp)[:0]
	select {
	case batchBuffers <- bp:
	default:
	}
}

// appendJSONL appends events to dst, one JSON object and newline each.
func appendJSONL(dst []byte, events []ocsf.Event) ([]byte, error) {
	var err error
	for _, e := range events {
		if dst, err = ocsf.AppendJSON(dst, e); err != nil {
			return dst, err
		}
		dst = append(dst, '\n')
	}
	return dst, nil
}

// QueueOptions configures a Queue. The zero value is usable.
type QueueOptions struct {
	Size     int // buffered events, or operations' events unbuilt; 0 means 4096
	MaxBatch int // events per WriteEvents (an operation's events are not split); 0 means 256
	// Delay is how long an event may wait for its batch to fill before the
	// batch is written anyway; 0 means 1 s. Close writes what waits.
	Delay   time.Duration
	Timeout time.Duration // per WriteEvents; 0 means 10 s
	Logger  *slog.Logger
}

// QueueStats counts what happened to emitted events.
type QueueStats struct {
	Written, Dropped, Failed uint64
}

// Queue is an EventSink that never blocks: see the file comment. It is
// safe for concurrent use.
type Queue struct {
	// immutable after NewQueue
	w        EventWriter
	ch       chan queued
	maxBatch int
	delay    time.Duration
	timeout  time.Duration
	log      *slog.Logger
	done     chan struct{} // closed when the writer goroutine returns
	full     chan struct{} // a batch's worth waits in ch, or ch is closed

	written, dropped, failed atomic.Uint64

	mu     sync.RWMutex // guards closed against a send on a closed ch
	closed bool         // guarded by mu
}

// NewQueue starts a queue in front of w.
func NewQueue(w EventWriter, opts QueueOptions) *Queue {
	if opts.Size <= 0 {
		opts.Size = 4096
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.Delay <= 0 {
		opts.Delay = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	q := &Queue{w: w, ch: make(chan queued, opts.Size), maxBatch: opts.MaxBatch,
		delay: opts.Delay, timeout: opts.Timeout, log: opts.Logger, done: make(chan struct{}), full: make(chan struct{}, 1)}
	go q.run()
	return q
}

// queued is an event, or n events yet to be built.
type queued struct {
	ev    ocsf.Event
	build func() []ocsf.Event
	n     int
}

// Emit implements EventSink: it queues e, or drops it when the queue is
// full or closed.
func (q *Queue) Emit(e ocsf.Event) { q.put(queued{ev: e, n: 1}) }

// EmitDeferred implements DeferredSink: it queues build, which the writer
// goroutine calls, or drops its n events when the queue is full or closed.
func (q *Queue) EmitDeferred(n int, build func() []ocsf.Event) { q.put(queued{build: build, n: n}) }

func (q *Queue) put(item queued) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed {
		q.dropped.Add(uint64(item.n))
		return
	}
	select {
	case q.ch <- item:
		if len(q.ch) >= q.maxBatch {
			q.wake()
		}
	default:
		if d := q.dropped.Add(uint64(item.n)); d/1000 != (d-uint64(item.n))/1000 || d == uint64(item.n) {
			q.log.Warn("telemetry: OCSF queue full; events dropped", "dropped", d)
		}
	}
}

// appendItem appends the events of item to batch.
func appendItem(batch []ocsf.Event, item queued) []ocsf.Event {
	if item.build == nil {
		return append(batch, item.ev)
	}
	return append(batch, item.build()...)
}

// Stats returns the counters.
func (q *Queue) Stats() QueueStats {
	return QueueStats{Written: q.written.Load(), Dropped: q.dropped.Load(), Failed: q.failed.Load()}
}

// wake tells the writer goroutine that a batch's worth waits, or that the
// queue closed.
func (q *Queue) wake() {
	select {
	case q.full <- struct{}{}:
	default: // already told
	}
}

// run writes the queued events in batches until Close: see the file
// comment.
func (q *Queue) run() {
	defer close(q.done)
	defer q.closeWriter()
	batch := make([]ocsf.Event, 0, q.maxBatch)
	timer := time.NewTimer(q.delay)
	timer.Stop()
	defer timer.Stop()
	for {
		// Idle: the first event wakes the goroutine.
		item, ok := <-q.ch
		if !ok {
			return
		}
		batch = appendItem(batch, item)
		timer.Reset(q.delay)
		// Filling: take what has queued; sleep until a batch's worth
		// waits, the batch is due, or the queue closes.
		closed, due := false, false
		for {
		take:
			for len(batch) < q.maxBatch {
				select {
				case item, ok := <-q.ch:
					if !ok {
						closed = true
						break take
					}
					batch = appendItem(batch, item)
				default:
					break take
				}
			}
			if closed || due || len(batch) >= q.maxBatch {
				break
			}
			select {
			case <-q.full:
			case <-timer.C:
				due = true
			}
		}
		timer.Stop()
		q.write(batch)
		clear(batch) // hold no event
		batch = batch[:0]
		if closed {
			return
		}
	}
}

// write hands batch to the writer, counting its events written or failed.
func (q *Queue) write(batch []ocsf.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	defer cancel()
	if err := q.w.WriteEvents(ctx, batch); err != nil {
		q.failed.Add(uint64(len(batch)))
		q.log.Warn("telemetry: OCSF export failed", "events", len(batch), "err", err)
		return
	}
	q.written.Add(uint64(len(batch)))
}

// closeWriter closes the writer, when it is an io.Closer, after the last
// batch.
func (q *Queue) closeWriter() {
	if c, ok := q.w.(io.Closer); ok {
		if err := c.Close(); err != nil {
			q.log.Warn("telemetry: closing the OCSF exporter", "err", err)
		}
	}
}

// Close stops accepting events and waits until the queued ones are written
// or ctx ends; then the writer is closed if it is an io.Closer (if ctx ends
// first, that happens when the last batch is done). Events that were
// dropped or failed are reported in the log.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.ch)
		q.wake()
	}
	q.mu.Unlock()
	select {
	case <-q.done:
		if s := q.Stats(); s.Dropped > 0 || s.Failed > 0 {
			q.log.Warn("telemetry: OCSF events lost", "written", s.Written, "dropped", s.Dropped, "failed", s.Failed)
		}
		return nil
	case <-ctx.Done():
		return errors.Join(errors.New("telemetry: OCSF queue not drained"), ctx.Err())
	}
}
