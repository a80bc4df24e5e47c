package gateway

// Notifications from the upstream, when their records are durable writes
// (the audit log): each may leave only once its record is durable, but
// waiting for each record before reading the next message would relay one
// notification per commit (about a thousand a second on a disk that
// fsyncs in a millisecond), however many the upstream sends, and would hold
// the session's other messages behind them. Instead the relay queues each
// notification's record at once (PipelinedRecorder.Begin, in order) and
// hands the notification to the session's note writer, which waits for
// each record in turn and then writes the notification to the client:
//
//	upstream ─► upstreamMessage ─► Begin (record queued) ─► notes (≤ 256) ─► writer: wait ─► client
//
// Records of one flood so share group commits. Order is kept: the records
// are queued in the order the notifications came, the writer writes in that
// order, and any other upstream message (a response, a request, a
// list_changed) first waits until the notifications before it were
// written (flushNotes), so a call's progress still reaches the client
// before its answer. The queue is bounded: a full queue holds up this
// session's upstream reader, and no one else.

import (
	"context"
	"sync"
)

// A PipelinedRecorder is a Recorder that can queue a record without
// waiting for it to be kept.
type PipelinedRecorder interface {
	Recorder
	// Begin queues d's record and returns a function that waits for it and
	// returns what Record would have; wait is called once, and d not
	// touched by the caller until it returns. Records are kept in the
	// order of the Begin calls.
	Begin(ctx context.Context, d *Decision) (wait func() error)
	// Waits reports whether keeping a record waits for I/O (a durable
	// write): only then is it worth queueing records.
	Waits() bool
}

// Waits implements PipelinedRecorder: only the audit log's writes wait.
func (rs *Records) Waits() bool { return rs.Audit != nil }

// notesQueued bounds the notifications of a session waiting for their
// records.
const notesQueued = 256

// noteQueue is a session's queue of upstream notifications waiting for
// their records.
type noteQueue struct {
	start sync.Once
	stop  sync.Once
	quit  chan struct{} // closed when the session ends
	mu    sync.Mutex    // held across Begin and the send, so records and writes have one order
	ch    chan queuedNote
}

// queuedNote is a notification and the wait for its record, or, with
// flushed set, a barrier that the writer closes once it is reached.
type queuedNote struct {
	d       *Decision
	wait    func() error
	flushed chan struct{}
}

// queueNote relays an upstream notification through the note writer when
// the Recorder's records wait for I/O; false means it did nothing, and the
// caller relays the notification itself.
func (r *Relay) queueNote(ctx context.Context, d *Decision) bool {
	pr, ok := r.recorder.(PipelinedRecorder)
	if !ok || !pr.Waits() {
		return false
	}
	r.notes.start.Do(func() {
		r.notes.mu.Lock()
		r.notes.quit = make(chan struct{})
		r.notes.ch = make(chan queuedNote, notesQueued)
		r.notes.mu.Unlock()
		go r.writeNotes(ctx)
	})
	r.emit(*d)
	queued := new(Decision) // the queue keeps it: d stays the caller's (keep)
	*queued = *d
	r.notes.mu.Lock()
	defer r.notes.mu.Unlock()
	n := queuedNote{d: queued, wait: pr.Begin(context.WithoutCancel(ctx), queued)}
	select {
	case r.notes.ch <- n:
	case <-ctx.Done(): // the session is ending: the notification is not sent
		_ = n.wait()
	case <-r.notes.quit:
		_ = n.wait()
	}
	return true
}

// writeNotes writes each queued notification to the client once its record
// is kept, in order, until the session ends.
func (r *Relay) writeNotes(ctx context.Context) {
	for {
		select {
		case n := <-r.notes.ch:
			if n.flushed != nil {
				close(n.flushed)
				continue
			}
			if err := n.wait(); err != nil {
				r.log.Error("the record of a message could not be kept; it does not go through", "decision", *n.d, "err", err)
				continue
			}
			r.writeClient(ctx, n.d.Msg)
		case <-r.notes.quit:
			return
		}
	}
}

// flushNotes returns once every notification queued before it was written
// (or the session ended).
func (r *Relay) flushNotes(ctx context.Context) {
	r.notes.mu.Lock()
	if r.notes.ch == nil {
		r.notes.mu.Unlock()
		return
	}
	flushed := make(chan struct{})
	select {
	case r.notes.ch <- queuedNote{flushed: flushed}:
	case <-ctx.Done():
	case <-r.notes.quit:
	}
	r.notes.mu.Unlock()
	select {
	case <-flushed:
	case <-ctx.Done():
	case <-r.notes.quit:
	}
}

// stopNotes ends the note writer, if it started.
func (r *Relay) stopNotes() {
	r.notes.mu.Lock()
	started := r.notes.ch != nil
	r.notes.mu.Unlock()
	if started {
		r.notes.stop.Do(func() { close(r.notes.quit) })
	}
}
