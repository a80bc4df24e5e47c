package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Backend stores a chain of records and its anchor. Log is its only writer
// in a process; Write is called from one goroutine at a time, but Tail and
// Scan may run concurrently with Write and with each other.
type Backend interface {
	// Tail returns the last stored record (ok false when there is none) and
	// the stored anchor (zero when there is none).
	Tail(ctx context.Context) (last Record, ok bool, anchor Anchor, err error)
	// Write durably stores batch, whose records follow the last stored record
	// in order, and sets the anchor to the batch's last record. It is all or
	// nothing: after an error no record of batch is stored, or the backend
	// returns ErrBroken from then on.
	Write(ctx context.Context, batch []Record) error
	// Scan calls fn for every stored record in storage order, stopping at the
	// first error fn returns, and reports the anchor as it was when the scan
	// began (every record up to it is included in the scan). A record that
	// cannot be read is reported as a *ReadError.
	Scan(ctx context.Context, fn func(Record) error) (Anchor, error)
	// Close releases the backend.
	Close() error
}

// tailCutter is a Backend whose storage may end in a torn write (a crash
// during a write that was never acknowledged) and in space grown ahead of
// the records, which New cuts off once it has checked the records before
// them.
type tailCutter interface {
	// tornTail durably removes the torn tail and the space after it, if
	// any, and reports the offset it began at and how many bytes of it
	// were a torn write (0: none, or only zeros).
	tornTail() (at, n int64, err error)
}

// unwriter is a Backend that can durably take back the last batch it
// wrote (JSONL: cut the file back), which Log does when it finds, after
// the batch's write, that its file was lost: so it need not check the
// file before each write too (one system call less per batch).
type unwriter interface {
	unwrite() error
}

// anchorFlusher is a Backend whose anchor lags its records (JSONL); the
// writer moves it forward while idle.
type anchorFlusher interface {
	flushAnchor() error
}

// ReadError is a stored record that could not be decoded; Scan passes it to
// its caller as the error.
type ReadError struct {
	Index int // 0-based position in storage order
	Err   error
}

func (e *ReadError) Error() string { return fmt.Sprintf("audit: record #%d: %v", e.Index+1, e.Err) }
func (e *ReadError) Unwrap() error { return e.Err }

// Options configures a Log. The zero value is ready to use.
type Options struct {
	// MaxBatch bounds the records written in one durable step; 0 means 1024.
	MaxBatch int
	Logger   *slog.Logger
	// WatchInterval is how often an idle log checks that its path still
	// names its file (lost.go); every batch is checked as it is written.
	// 0 means DefaultWatchInterval; negative, only at writes and Ping.
	WatchInterval time.Duration
	// Checkpoint makes the log sign checkpoints (checkpoint.go); its zero
	// value writes none.
	Checkpoint CheckpointOptions
}

// Log is an open audit log. It is safe for concurrent use.
type Log struct {
	// immutable after New
	b        Backend
	maxBatch int
	watch    time.Duration // ≤ 0: no ticker
	log      *slog.Logger
	reqs     chan *appendReq   // to the writer, which answers every request queued
	stop     chan struct{}     // closed by Close, once nothing more can be queued
	done     chan struct{}     // closed when the writer returns
	ck       CheckpointOptions // Key nil: no checkpoints; Every and Interval resolved
	// With a witness: the checkpoints for it, the goroutine that hands
	// them over (closes witnessDone when it returns), and its cancel.
	witnessQ      chan Checkpoint
	witnessDone   chan struct{}
	witnessCancel context.CancelFunc

	mu       sync.Mutex
	head     Anchor // last durable record; guarded by mu, written only by the writer
	lost     error  // set once the file is lost (wraps ErrLost); guarded by mu, never cleared
	writeErr error  // the last batch's write error, nil after a success; guarded by mu

	steps, written atomic.Uint64 // durable steps (batches) written, and their records: Stats

	marked     bool // the loss record was attempted; the writer's alone
	unattested int  // records after the last checkpoint; the writer's alone

	// queueing is held shared while a request is queued, and by Close to
	// set closed: no request is queued after the writer's last drain.
	queueing  sync.RWMutex
	closed    atomic.Bool // set under queueing
	closeOnce sync.Once
	closeErr  error
}

type appendReq struct {
	rec   Record
	reply chan appendReply
}

type appendReply struct {
	rec Record
	err error
}

// Kind names a backend for Open.
type Kind string

// The backends Open knows. KindAuto opens an existing SQLite database as
// KindSQLite, and anything else (a JSONL log, an empty or new file) as
// KindJSONL: the group-commit file is the default, and a log written
// before it was goes on in its own format.
const (
	KindAuto   Kind = ""
	KindJSONL  Kind = "jsonl"
	KindSQLite Kind = "sqlite"
)

// sqliteMagic begins every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// DetectKind is the backend of the log at path for KindAuto: KindSQLite
// if the file begins as an SQLite database does, else KindJSONL (a
// missing or empty file included).
func DetectKind(path string) (Kind, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return KindJSONL, nil
	}
	if err != nil {
		return "", fmt.Errorf("audit: %w", err)
	}
	defer f.Close()
	var head [len(sqliteMagic)]byte
	if _, err := io.ReadFull(f, head[:]); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", fmt.Errorf("audit: %w", err)
	}
	if string(head[:]) == sqliteMagic {
		return KindSQLite, nil
	}
	return KindJSONL, nil
}

// OpenBackend opens the backend of kind at path (KindAuto: DetectKind),
// without checking the chain: for verify and export.
func OpenBackend(kind Kind, path string) (Backend, error) {
	if kind == KindAuto {
		var err error
		if kind, err = DetectKind(path); err != nil {
			return nil, err
		}
	}
	switch kind {
	case KindSQLite:
		return NewSQLite(path)
	case KindJSONL:
		return NewJSONL(path)
	}
	return nil, fmt.Errorf("audit: unknown backend %q (want jsonl or sqlite)", kind)
}

// Open opens the log of kind at path for appending; see New.
func Open(ctx context.Context, kind Kind, path string, opts Options) (*Log, error) {
	b, err := OpenBackend(kind, path)
	if err != nil {
		return nil, err
	}
	l, err := New(ctx, b, opts)
	if err != nil {
		b.Close()
		return nil, err
	}
	return l, nil
}

// New starts a log on b, continuing its chain: the next record gets the
// stored last seq plus one and its hash as prev_hash. It first verifies the
// records from the last checkpoint to the tail (and the checkpoint's
// signature, with opts.Checkpoint.Key), and that the records reach the
// anchor, and fails with ErrBroken naming the first record that does not;
// `warden audit verify` then says more. With a key, when records follow the
// last checkpoint (warden stopped without closing the log, or someone else
// appended them), it signs a checkpoint of rule "open" that says so. Close
// closes b.
func New(ctx context.Context, b Backend, opts Options) (*Log, error) {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.WatchInterval == 0 {
		opts.WatchInterval = DefaultWatchInterval
	}
	if opts.Checkpoint.Every <= 0 {
		opts.Checkpoint.Every = DefaultCheckpointEvery
	}
	if opts.Checkpoint.Interval == 0 {
		opts.Checkpoint.Interval = DefaultCheckpointInterval
	}
	var key *VerifyKey
	if opts.Checkpoint.Key != nil {
		key = opts.Checkpoint.Key.Public()
	}
	// The check reads the records up to the last complete line, so a torn
	// tail is cut only from a log that passed it.
	st, err := checkOpen(ctx, b, key, opts.Checkpoint.Witnessed)
	if err != nil {
		return nil, err
	}
	if tc, ok := b.(tailCutter); ok {
		at, n, err := tc.tornTail()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			opts.Logger.Warn("audit: cut a torn tail off the log: the last write was cut short by a crash before it was synced, so no call waited for it",
				"offset", at, "bytes", n)
		}
	}
	l := &Log{
		b:        b,
		maxBatch: opts.MaxBatch,
		watch:    opts.WatchInterval,
		log:      opts.Logger,
		reqs:     make(chan *appendReq, opts.MaxBatch), // Submit does not wait for the commit in progress
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		ck:       opts.Checkpoint,
		head:     st.head,
	}
	if l.ck.Witness != nil {
		var ctx context.Context
		ctx, l.witnessCancel = context.WithCancel(context.Background())
		l.witnessQ, l.witnessDone = make(chan Checkpoint, 64), make(chan struct{})
		go l.witnessLoop(ctx)
	}
	if l.ck.Key != nil && st.unattested > 0 {
		l.unattested = st.unattested
		reason := fmt.Sprintf("records %d..%d followed the last checkpoint (seq %d) when the log was opened: warden stopped without closing the log, or they were appended by someone else; they were not attested before this checkpoint",
			st.head.Seq-uint64(st.unattested)+1, st.head.Seq, st.lastCheckpoint)
		if st.lastCheckpoint == 0 {
			reason = fmt.Sprintf("records 1..%d were written without a checkpoint before the log was opened with an audit key; they were not attested before this checkpoint", st.head.Seq)
		}
		if err := l.writeCheckpoint(CheckpointOpen, reason); err != nil {
			l.stopWitness()
			return nil, fmt.Errorf("audit: the opening checkpoint: %w", err)
		}
	}
	go l.writeLoop()
	return l, nil
}

// Append chains rec onto the log and returns it as stored (with Seq, Time,
// PrevHash and Hash set) once it is durable. A zero Time is set to now. An
// error means the record may not be stored, and the gateway must deny the
// call. If ctx ends first, Append returns ctx.Err() although the record may
// still be written: pass a context that outlives the request
// (context.WithoutCancel) so that a cancelled call cannot lose its record.
func (l *Log) Append(ctx context.Context, rec Record) (Record, error) {
	// Submit's wait, without the closure, and with a request from a pool:
	// every call appends two records, so this is the hot path.
	req := reqPool.Get().(*appendReq)
	if err := l.enqueue(ctx, rec, req); err != nil {
		reqPool.Put(req)
		return Record{}, err
	}
	r, answered := l.await(ctx, req)
	if answered { // else the writer may still answer it: not reused
		req.rec = Record{}
		reqPool.Put(req)
	}
	return r.rec, r.err
}

// reqPool holds answered append requests, their reply channels empty.
var reqPool = sync.Pool{New: func() any { return &appendReq{reply: make(chan appendReply, 1)} }}

// Submit queues rec as Append does and returns a function that waits for
// it, returning what Append would. Records submitted one after another are
// chained in that order, so a caller that must not wait for each record
// before the next (a stream of notifications, each of which may leave only
// once its record is durable) submits them in order and waits for each
// later: they share group commits. Wait is to be called once.
func (l *Log) Submit(ctx context.Context, rec Record) (wait func() (Record, error)) {
	req := &appendReq{reply: make(chan appendReply, 1)}
	if err := l.enqueue(ctx, rec, req); err != nil {
		return func() (Record, error) { return Record{}, err }
	}
	return func() (Record, error) {
		r, _ := l.await(ctx, req)
		return r.rec, r.err
	}
}

// enqueue checks rec, puts it in req and queues req for the writer.
func (l *Log) enqueue(ctx context.Context, rec Record, req *appendReq) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if rec.Time.IsZero() {
		rec.Time = time.Now()
	}
	if rec.Kind != "" || rec.KeyID != "" || rec.Sig != "" {
		return errors.New("audit: kind, kid and sig are the log's own (checkpoints), not a caller's")
	}
	if err := rec.normalize(); err != nil {
		return err
	}
	req.rec = rec
	// No select on channels every appender shares (stop, done): with many
	// appenders their locks are contended, per record. The writer answers
	// every request queued, and none is queued once Close set closed.
	l.queueing.RLock()
	defer l.queueing.RUnlock()
	if l.closed.Load() {
		return ErrClosed
	}
	select {
	case l.reqs <- req:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await waits for the writer's answer to a queued req; answered is false
// when ctx ended first.
func (l *Log) await(ctx context.Context, req *appendReq) (r appendReply, answered bool) {
	select {
	case r := <-req.reply:
		return r, true
	case <-ctx.Done():
		return appendReply{err: ctx.Err()}, false
	}
}

// Head returns the seq and hash of the last durable record ({0, ZeroHash}
// for an empty log).
func (l *Log) Head() Anchor {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Stats counts what the log has made durable since it was opened.
type Stats struct {
	Steps   uint64 // durable steps: batches written (one fdatasync each for JSONL), checkpoints written alone included
	Records uint64 // records in them, checkpoints included
}

// Stats returns the durable steps and records written so far: Records ÷
// Steps is how many records share an fdatasync.
func (l *Log) Stats() Stats {
	return Stats{Steps: l.steps.Load(), Records: l.written.Load()}
}

// Verify checks the whole chain; see the package function Verify.
func (l *Log) Verify(ctx context.Context) (Report, error) { return Verify(ctx, l.b, Anchor{}) }

// VerifyWith checks the whole chain and its checkpoints; see the package
// function VerifyWith.
func (l *Log) VerifyWith(ctx context.Context, opts VerifyOptions) (Report, error) {
	return VerifyWith(ctx, l.b, opts)
}

// Export writes every record as JSON Lines; see the package function Export.
func (l *Log) Export(ctx context.Context, w io.Writer) error { return Export(ctx, l.b, w) }

// Close waits for the batch being written, refuses further Appends,
// writes a checkpoint when records are unattested (with a key), and closes
// the backend and the witness.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.queueing.Lock()
		l.closed.Store(true)
		l.queueing.Unlock()
		close(l.stop)
		<-l.done
		l.closeErr = errors.Join(l.b.Close(), l.stopWitness())
	})
	return l.closeErr
}

// writeLoop chains and writes queued records in batches until Close.
func (l *Log) writeLoop() {
	defer close(l.done)
	batch := make([]*appendReq, 0, l.maxBatch)
	recs := make([]Record, 0, l.maxBatch)
	active := 0                       // appenders the last batch released, and those queued meanwhile
	var tick, ckTick <-chan time.Time // nil: never
	if _, ok := l.b.(fileBackend); ok && l.watch > 0 {
		t := time.NewTicker(l.watch)
		defer t.Stop()
		tick = t.C
	}
	if l.ck.Key != nil && l.ck.Interval > 0 {
		t := time.NewTicker(l.ck.Interval)
		defer t.Stop()
		ckTick = t.C
	}
	for {
		select {
		case <-l.stop:
			if l.ck.Key != nil && l.unattested > 0 {
				if err := l.writeCheckpoint(CheckpointClose, ""); err != nil {
					l.log.Error("audit: the closing checkpoint could not be written; the last records stay unattested", "err", err)
				}
			}
			for { // what was queued before Close: refused, as after it
				select {
				case r := <-l.reqs:
					r.reply <- appendReply{err: ErrClosed}
				default:
					return
				}
			}
		case <-ckTick:
			if l.unattested > 0 {
				// A lost log was reported when it was lost, once.
				if err := l.writeCheckpoint(CheckpointInterval, ""); err != nil && !errors.Is(err, ErrLost) {
					l.log.Error("audit: a checkpoint could not be written", "err", err)
				}
			}
			continue
		case <-tick:
			if err := l.lostNow(true); err != nil {
				l.markOnce(err)
			} else if af, ok := l.b.(anchorFlusher); ok {
				if err := af.flushAnchor(); err != nil {
					l.log.Error("audit: the anchor could not be moved to the last record", "err", err)
				}
			}
			continue
		case r := <-l.reqs:
			batch = append(batch[:0], r)
		}
		l.gather(len(batch), active)
	fill:
		for len(batch) < l.maxBatch {
			select {
			case r := <-l.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		recs = l.commit(batch, recs[:0])
		active = len(batch) + len(l.reqs)
		clear(batch)
	}
}

// gather gives the appenders the last batch released the chance to queue
// their next records before a batch is taken. The batch has have records;
// active is how many appenders were known when the last batch was
// answered (its own, and those that queued during its write). While fewer
// are queued, it yields the processor (runtime.Gosched), as long as each
// yield brought at least one more record: it does not wait for appenders
// that are not coming back at once (a relay's session that forwards its
// call and waits for the upstream's answer), and sets no timer.
//
// Without it, appenders released together come back one by one, and the
// first one back is written alone: with 8 appenders that append in a
// loop, batches alternated 1, 7, 1, 7 (two fdatasyncs per 8 records
// instead of one; TestBatchesFill).
func (l *Log) gather(have, active int) {
	for range active {
		n := len(l.reqs)
		if have+n >= active || n >= cap(l.reqs) {
			return
		}
		runtime.Gosched()
		if len(l.reqs) == n {
			return
		}
	}
}

// commit chains batch onto the head, writes it, and answers every request.
// The head moves only when the write succeeded and the path still names
// the file written (lost.go), so a failed batch leaves no gap in the chain.
func (l *Log) commit(batch []*appendReq, recs []Record) []Record {
	// The file is checked after the write (below), for a loss before or
	// during it. A backend that can take a batch back (JSONL) cuts the
	// batch of a loss found then, so records of refused calls do not stay
	// in the lost file; the others are checked before the write too, for
	// a loss before it. A loss already found refuses the batch here.
	uw, canUndo := l.b.(unwriter)
	pre := l.lostErr
	if !canUndo {
		pre = func() error { return l.lostNow(false) }
	}
	if err := pre(); err != nil {
		l.markOnce(err)
		refuse(batch, err)
		return recs
	}
	head := l.Head()
	seq, prev := head.Seq, head.Hash
	for _, r := range batch {
		rec := r.rec
		seq++
		rec.Seq, rec.PrevHash = seq, prev
		rec.Hash = rec.ComputeHash()
		prev = rec.Hash
		recs = append(recs, rec)
	}
	// A checkpoint that falls due goes into the same durable step.
	due := l.ck.Key != nil && l.unattested+len(batch) >= l.ck.Every
	if due {
		seq++
		ck := l.checkpointRecord(seq, prev, CheckpointCount, "")
		prev = ck.Hash
		recs = append(recs, ck)
	}
	// The write is not tied to any caller's context: a caller that stops
	// waiting must not abort the others' records. Nor has it a deadline:
	// modernc.org/sqlite watches a cancellable context with a goroutine per
	// statement, which cost about a third of a commit's CPU; the backends
	// bound their own lock waits, and nothing can interrupt an fsync.
	err := l.b.Write(context.Background(), recs)
	l.mu.Lock()
	l.writeErr = err
	l.mu.Unlock()
	if err != nil {
		l.log.Error("audit: write failed; the calls are denied", "records", len(recs), "first_seq", recs[0].Seq, "err", err)
		refuse(batch, fmt.Errorf("audit: append: %w", err))
		return recs
	}
	// Durable, but perhaps in a file no one can find any more.
	if err := l.lostNow(false); err != nil {
		if canUndo {
			if uerr := uw.unwrite(); uerr != nil {
				l.log.Error("audit: the refused batch could not be cut from the lost file", "first_seq", recs[0].Seq, "err", uerr)
			}
		}
		l.markOnce(err)
		refuse(batch, err)
		return recs
	}
	l.steps.Add(1)
	l.written.Add(uint64(len(recs)))
	l.mu.Lock()
	l.head = Anchor{Seq: seq, Hash: prev}
	l.mu.Unlock()
	for i, r := range batch {
		r.reply <- appendReply{rec: recs[i]}
	}
	if due {
		l.unattested = 0
		l.witness(recs[len(recs)-1])
	} else {
		l.unattested += len(batch)
	}
	return recs
}

// checkpointRecord returns the checkpoint record of rule at seq, signing
// the chain up to prev (the hash of the record at seq-1).
func (l *Log) checkpointRecord(seq uint64, prev, rule, reason string) Record {
	c := l.ck.Key.sign(seq-1, prev, time.Now().UTC().Round(0))
	rec := Record{Seq: seq, Time: c.Time, PrevHash: prev, Decision: Allow, Stage: "audit", Rule: rule,
		Direction: "warden", Reason: reason, Kind: CheckpointKind, KeyID: c.KeyID, Sig: c.Sig}
	rec.Hash = rec.ComputeHash()
	return rec
}

// writeCheckpoint writes a checkpoint of rule on its own, then hands it to
// the witness. Only the writer calls it (or New, before the writer runs).
func (l *Log) writeCheckpoint(rule, reason string) error {
	if err := l.lostNow(false); err != nil {
		return err
	}
	head := l.Head()
	rec := l.checkpointRecord(head.Seq+1, head.Hash, rule, reason)
	if err := l.b.Write(context.Background(), []Record{rec}); err != nil {
		return err
	}
	if err := l.lostNow(false); err != nil {
		return err
	}
	l.steps.Add(1)
	l.written.Add(1)
	l.mu.Lock()
	l.head = Anchor{Seq: rec.Seq, Hash: rec.Hash}
	l.mu.Unlock()
	l.unattested = 0
	l.witness(rec)
	return nil
}

// witness queues checkpoint record rec for the witness, if any, without
// waiting: a slow or absent witness must not hold up the records. A full
// queue drops the checkpoint, logged; the log itself holds it.
func (l *Log) witness(rec Record) {
	if l.witnessQ == nil {
		return
	}
	select {
	case l.witnessQ <- rec.Checkpoint():
	default:
		l.log.Error("audit: the witness is behind; a checkpoint was not sent to it", "seq", rec.Seq)
	}
}

// witnessTimeout bounds one hand-off to the witness, and how long Close
// waits for the queue to drain.
const witnessTimeout = 10 * time.Second

// witnessLoop hands queued checkpoints to the witness until the queue is
// closed or ctx ends.
func (l *Log) witnessLoop(ctx context.Context) {
	defer close(l.witnessDone)
	for c := range l.witnessQ {
		wctx, cancel := context.WithTimeout(ctx, witnessTimeout)
		err := l.ck.Witness.Witness(wctx, c)
		cancel()
		if err != nil {
			l.log.Error("audit: the witness did not take a checkpoint", "seq", c.Seq+1, "err", err)
		}
	}
}

// stopWitness drains the witness queue (for at most witnessTimeout) and
// closes the witness.
func (l *Log) stopWitness() error {
	if l.witnessQ == nil {
		return nil
	}
	close(l.witnessQ)
	select {
	case <-l.witnessDone:
	case <-time.After(witnessTimeout):
		l.witnessCancel()
		<-l.witnessDone
	}
	l.witnessCancel()
	return l.ck.Witness.Close()
}

// refuse answers every request of batch with err.
func refuse(batch []*appendReq, err error) {
	for _, r := range batch {
		r.reply <- appendReply{err: err}
	}
}

var errStop = errors.New("stop")
