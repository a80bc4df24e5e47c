// Package approval holds tool calls until a person decides on them: the
// standard's ad-hoc mode ("personaEndUser approves params") for MCP clients
// that cannot obtain tokens themselves.
//
//	gateway ─ Submit(call) ─► Pending{id, tool, canonical arguments, hash}
//	        ─ Wait(ctx) ◄──── Decide(id, approve/deny, approver, reason)   (CLI, API, console)
//	                     ◄──── timeout / ctx cancelled                       (a clear denial)
//
// What a person approves is the canonical arguments and their hash: the
// gateway then issues a token bound to exactly that hash, so an approval can
// never run other arguments. The queue keeps its requests in a [Backend]:
// in memory for one gateway (New), or in Redis (OpenRedis) so that a call
// held on one gateway instance can be decided through any other.
//
// # Concurrency
//
// A Queue is safe for concurrent use. Its lock (Queue.mu) guards only the
// in-process waiters, subscribers and failed submissions, and is never held
// while calling the backend; the backend serialises the requests themselves.
package approval

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Request is a call waiting for a decision.
type Request struct {
	Upstream  string
	Session   string
	Subject   string // whom the call acts for
	Tool      string
	Arguments []byte // canonical (RFC 8785) arguments
	Hash      string // parameters_hash of Arguments

	// What the approver should know about the call, when known.
	Description    string   // the tool's description from the upstream's tools/list
	Classification int      // data classification level, 1..5; 0 unclassified
	Tier           int      // the standard's tier that level requires; 0 none
	ClassRule      string   // the classification rule that matched
	Findings       []string // security-processor findings and pin warnings, one line each
}

// Pending is a request in the queue.
type Pending struct {
	ID string
	Request
	Created time.Time
	Expires time.Time
}

// Decision is the outcome of a pending request.
type Decision struct {
	Approved bool
	Approver string // who decided; empty on timeout or cancellation
	Reason   string
	TimedOut bool
	// Cause is the store error behind a refusal the queue made itself:
	// for warden's log and the audit record, never for the client (it
	// may name the store's address). Not stored.
	Cause string `json:"-"`
}

// Errors of Decide.
var (
	ErrUnknown  = errors.New("approval: no pending request with that id")
	ErrApprover = errors.New("approval: an approver identity is required")
)

// Options configures a Queue made by NewQueue. The zero value is a queue in
// memory whose requests time out after 5 minutes.
type Options struct {
	// Timeout is how long a request waits for a decision; 0 means 5 minutes.
	Timeout time.Duration
	// Backend stores the requests; nil means memory (this process only).
	Backend Backend
	// Poll is how often a waiter re-reads its request's outcome, in case
	// the backend's change event was lost (Redis pub/sub delivers at most
	// once). 0 means 500ms for a backend with Events, never for one without.
	Poll time.Duration
	// Revocations, if set, returns the handler of the revocation API
	// (internal/revoke) for the admin token; Handler serves it at
	// /v1/revocations, behind the same checks as the approval API.
	Revocations func(token string) http.Handler
	// Approvers is the two-person rule (quorum.go): for a classification
	// level, how many distinct approvers must approve a request of that
	// level before it runs. Levels not listed, and unclassified requests,
	// need one. One denial by anyone denies.
	Approvers map[int]int
	// Logger receives backend failures; nil discards them.
	Logger *slog.Logger
}

// storeTimeout bounds a backend operation that has no caller's deadline.
const storeTimeout = 5 * time.Second

// Queue is the set of pending requests. It is safe for concurrent use.
type Queue struct {
	// Immutable after NewQueue.
	timeout     time.Duration
	poll        time.Duration
	backend     Backend
	revocations func(token string) http.Handler
	approvers   map[int]int // classification level → distinct approvers needed
	log         *slog.Logger
	stop        chan struct{} // closed by Close: ends the event loop
	loopDone    chan struct{} // closed when the event loop returned
	closeOnce   sync.Once

	mu       sync.Mutex
	waiters  map[string]chan struct{} // Wait's wake-up channels by request id; guarded by mu
	watchers map[chan struct{}]bool   // Subscribe's channels; guarded by mu (watch.go)
	failed   map[string]error         // Submits the backend refused, until their Wait; guarded by mu
}

// New returns a queue in memory whose requests time out after timeout (0: 5
// minutes).
func New(timeout time.Duration) *Queue { return NewQueue(Options{Timeout: timeout}) }

// NewQueue returns a queue configured by o. Close it to stop following the
// backend's events and to close the backend.
func NewQueue(o Options) *Queue {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Backend == nil {
		o.Backend = NewMemoryBackend()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	events := o.Backend.Events()
	if o.Poll <= 0 && events != nil {
		o.Poll = 500 * time.Millisecond
	}
	approvers := map[int]int{}
	for level, n := range o.Approvers {
		approvers[level] = n
	}
	q := &Queue{timeout: o.Timeout, poll: o.Poll, backend: o.Backend, revocations: o.Revocations, approvers: approvers, log: o.Logger,
		stop: make(chan struct{}), loopDone: make(chan struct{}),
		waiters: map[string]chan struct{}{}, failed: map[string]error{}}
	go q.follow(events)
	return q
}

// Close stops following the backend's events and closes the backend. A
// Wait in progress then ends with a denial when it next reads the backend.
func (q *Queue) Close() error {
	var err error
	q.closeOnce.Do(func() {
		close(q.stop)
		<-q.loopDone
		err = q.backend.Close()
	})
	return err
}

// follow relays the backend's events to local waiters and subscribers.
func (q *Queue) follow(events <-chan Event) {
	defer close(q.loopDone)
	if events == nil {
		return
	}
	for {
		select {
		case <-q.stop:
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			id := ""
			if ev.Kind == EventDecided {
				id = ev.ID
			}
			q.changed(id)
		}
	}
}

// Submit adds r to the queue and returns its pending entry. If the backend
// cannot store it, Wait on the entry returns a denial that says why.
func (q *Queue) Submit(r Request) Pending {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	p, err := q.SubmitContext(ctx, r)
	if err != nil {
		q.mu.Lock()
		q.failed[p.ID] = err
		q.mu.Unlock()
	}
	return p
}

// SubmitContext is Submit, and reports a backend that could not store the
// request: the call must then be refused.
func (q *Queue) SubmitContext(ctx context.Context, r Request) (Pending, error) {
	now := time.Now()
	p := Pending{ID: newID(), Request: r, Created: now, Expires: now.Add(q.timeout)}
	if err := q.backend.Put(ctx, p); err != nil {
		q.log.Warn("approval store: cannot hold a call", "id", p.ID, "err", err)
		return p, fmt.Errorf("approval store: %w", err)
	}
	q.changed("")
	return p, nil
}

// Wait blocks until the request id is decided, times out, or ctx ends, and
// removes it from the queue. A timeout or cancellation is a denial, and so
// is a backend that fails or lost the request. A decision made before Wait
// was called is not lost.
func (q *Queue) Wait(ctx context.Context, id string) Decision {
	wake := make(chan struct{}, 1)
	q.mu.Lock()
	failed := q.failed[id]
	delete(q.failed, id)
	if failed == nil {
		q.waiters[id] = wake
	}
	q.mu.Unlock()
	if failed != nil {
		return Decision{Reason: "the call could not be held for approval: the approval store failed", Cause: failed.Error()}
	}
	defer func() {
		q.mu.Lock()
		delete(q.waiters, id)
		q.mu.Unlock()
	}()
	// The backend is used without the caller's cancellation: a cancelled
	// call must still settle its request as cancelled.
	bg := context.WithoutCancel(ctx)
	p, d, err := q.load(bg, id)
	if errors.Is(err, ErrUnknown) {
		return Decision{Reason: "no such pending request"}
	}
	if err != nil {
		return Decision{Reason: "the approval store could not be read, so the call is refused", Cause: err.Error()}
	}
	defer q.remove(bg, id)
	timer := time.NewTimer(time.Until(p.Expires))
	defer timer.Stop()
	var tick <-chan time.Time
	if q.poll > 0 {
		t := time.NewTicker(q.poll)
		defer t.Stop()
		tick = t.C
	}
	for d == nil {
		select {
		case <-wake:
		case <-tick:
		case <-timer.C:
			return q.giveUp(bg, id, Decision{TimedOut: true, Reason: fmt.Sprintf("no decision within %s", q.timeout)})
		case <-ctx.Done():
			return q.giveUp(bg, id, Decision{Reason: "the call was cancelled while waiting for approval"})
		}
		_, d, err = q.load(bg, id)
		switch {
		case errors.Is(err, ErrUnknown):
			// The store forgot the request (a Redis that restarted empty):
			// nobody can decide on it any more.
			return Decision{Reason: "the approval store lost the pending request, so the call is refused"}
		case err != nil:
			// Keep waiting: the store may come back before the timeout,
			// which then settles the request or reports the failure.
			q.log.Warn("approval store: cannot read a pending call", "id", id, "err", err)
		}
	}
	return *d
}

// giveUp settles id with the waiter's own outcome (a timeout or a
// cancellation). If a decision got there first it wins: an approver must
// never be told "approved" for a call that was refused.
func (q *Queue) giveUp(ctx context.Context, id string, mine Decision) Decision {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	err := q.backend.Settle(sctx, id, mine, nil)
	if err == nil {
		return mine
	}
	if errors.Is(err, ErrSettled) || errors.Is(err, ErrUnknown) {
		if _, d, lerr := q.load(ctx, id); lerr == nil && d != nil {
			return *d
		}
		if errors.Is(err, ErrUnknown) {
			return mine
		}
	}
	return Decision{TimedOut: mine.TimedOut,
		Reason: mine.Reason + "; the approval store could not record it", Cause: err.Error()}
}

func (q *Queue) load(ctx context.Context, id string) (Pending, *Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return q.backend.Load(ctx, id)
}

func (q *Queue) remove(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := q.backend.Remove(ctx, id); err != nil {
		q.log.Warn("approval store: cannot remove a settled call (it expires by itself)", "id", id, "err", err)
	}
	q.changed("")
}

// changed wakes the waiter of id (if any, in this process; "" for none) and
// signals the subscribers.
func (q *Queue) changed(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ch := q.waiters[id]; ch != nil {
		select {
		case ch <- struct{}{}:
		default: // a wake-up is already waiting
		}
	}
	q.notifyLocked()
}

// Decide approves or denies the request id. approver must name who decides.
// An approval of a request that needs several approvers (Options.Approvers)
// returns a *MoreApprovals until the last of them approves, and
// ErrSameApprover when the same approver approves twice.
func (q *Queue) Decide(id string, approve bool, approver, reason string) error {
	return q.decide(id, nil, approve, approver, reason)
}

// decide settles the pending request id with a decision, after check (when
// not nil) accepted the request.
func (q *Queue) decide(id string, check func(Pending) error, approve bool, approver, reason string) error {
	if approver == "" {
		return ErrApprover
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if approve && len(q.approvers) > 0 {
		p, d, err := q.backend.Load(ctx, id)
		switch {
		case errors.Is(err, ErrUnknown), err == nil && d != nil:
			return ErrUnknown
		case err != nil:
			return err
		}
		if need := q.Needs(p); need > 1 {
			return q.vote(ctx, id, need, check, Vote{Approver: approver, Reason: reason, At: time.Now()})
		}
	}
	err := q.backend.Settle(ctx, id, Decision{Approved: approve, Approver: approver, Reason: reason}, check)
	switch {
	case errors.Is(err, ErrSettled), errors.Is(err, ErrUnknown):
		return ErrUnknown
	case err != nil:
		return err
	}
	q.changed(id)
	return nil
}

// CancelSession settles every pending request of session as cancelled (AASM
// P8: a closed session's approvals end with it) and returns how many it
// cancelled. With a shared backend it reaches requests held on any instance.
func (q *Queue) CancelSession(ctx context.Context, session string) (int, error) {
	if session == "" {
		return 0, nil
	}
	list, err := q.backend.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("approval store: %w", err)
	}
	n := 0
	var errs []error
	for _, p := range list {
		if p.Session != session {
			continue
		}
		switch err := q.backend.Settle(ctx, p.ID, Decision{Reason: "the session " + session + " closed"}, nil); {
		case err == nil:
			n++
			q.changed(p.ID)
		case errors.Is(err, ErrSettled), errors.Is(err, ErrUnknown):
		default:
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}

// List returns the pending requests, oldest first. A backend that cannot be
// read yields none; ListContext reports its error.
func (q *Queue) List() []Pending {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	out, err := q.ListContext(ctx)
	if err != nil {
		q.log.Warn("approval store: cannot list pending calls", "err", err)
	}
	return out
}

// ListContext is List, and reports a backend that cannot be read.
func (q *Queue) ListContext(ctx context.Context) ([]Pending, error) {
	out, err := q.backend.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("approval store: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Get returns the pending request id, if it has no outcome yet.
func (q *Queue) Get(id string) (Pending, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	p, d, err := q.backend.Load(ctx, id)
	if err != nil || d != nil {
		return Pending{}, false
	}
	return p, true
}

// newID returns a random, URL-safe request id.
func newID() string { return "apr_" + rand.Text()[:16] }
