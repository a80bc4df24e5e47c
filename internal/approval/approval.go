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
// never run other arguments. The queue is in memory; sharing it between
// gateway instances comes with the Redis store.
package approval

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
}

// Errors of Decide.
var (
	ErrUnknown  = errors.New("approval: no pending request with that id")
	ErrApprover = errors.New("approval: an approver identity is required")
)

// Queue is the set of pending requests. It is safe for concurrent use.
type Queue struct {
	// Immutable after New.
	timeout time.Duration

	mu       sync.Mutex
	pending  map[string]*entry      // guarded by mu
	watchers map[chan struct{}]bool // Subscribe's channels; guarded by mu (watch.go)
	history  []Decided              // the last HistoryLimit outcomes, oldest first; guarded by mu (history.go)
}

type entry struct {
	p       Pending
	done    chan Decision // receives exactly one decision, buffered
	decided bool          // a decision was sent on done; guarded by Queue.mu
}

// New returns a queue whose requests time out after timeout (0: 5 minutes).
func New(timeout time.Duration) *Queue {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	return &Queue{timeout: timeout, pending: map[string]*entry{}}
}

// Submit adds r to the queue and returns its pending entry.
func (q *Queue) Submit(r Request) Pending {
	now := time.Now()
	e := &entry{p: Pending{ID: newID(), Request: r, Created: now, Expires: now.Add(q.timeout)},
		done: make(chan Decision, 1)}
	q.mu.Lock()
	q.pending[e.p.ID] = e
	q.notifyLocked()
	q.mu.Unlock()
	return e.p
}

// Wait blocks until the request id is decided, times out, or ctx ends, and
// removes it from the queue. A timeout or cancellation is a denial. A
// decision made before Wait was called is not lost.
func (q *Queue) Wait(ctx context.Context, id string) Decision {
	q.mu.Lock()
	e := q.pending[id]
	q.mu.Unlock()
	if e == nil {
		return Decision{Reason: "no such pending request"}
	}
	defer func() {
		q.mu.Lock()
		delete(q.pending, id)
		q.notifyLocked()
		q.mu.Unlock()
	}()
	timer := time.NewTimer(time.Until(e.p.Expires))
	defer timer.Stop()
	var giveUp Decision
	select {
	case d := <-e.done:
		return d
	case <-timer.C:
		giveUp = Decision{TimedOut: true, Reason: fmt.Sprintf("no decision within %s", q.timeout)}
	case <-ctx.Done():
		giveUp = Decision{Reason: "the call was cancelled while waiting for approval"}
	}
	// Whoever settles the entry first owns the outcome. If Decide did, its
	// decision is on the channel and wins: an approver must never be told
	// "approved" for a call that was refused.
	q.mu.Lock()
	decided := e.decided
	e.decided = true
	if !decided {
		q.recordLocked(e.p, giveUp)
	}
	q.mu.Unlock()
	if decided {
		return <-e.done
	}
	return giveUp
}

// Decide approves or denies the request id. approver must name who decides.
func (q *Queue) Decide(id string, approve bool, approver, reason string) error {
	return q.decide(id, nil, approve, approver, reason)
}

// decide settles the pending request id with a decision, after check (when
// not nil) accepted the request under the lock.
func (q *Queue) decide(id string, check func(Pending) error, approve bool, approver, reason string) error {
	if approver == "" {
		return ErrApprover
	}
	d := Decision{Approved: approve, Approver: approver, Reason: reason}
	q.mu.Lock()
	e := q.pending[id]
	if e == nil || e.decided {
		q.mu.Unlock()
		return ErrUnknown
	}
	if check != nil {
		if err := check(e.p); err != nil {
			q.mu.Unlock()
			return err
		}
	}
	e.decided = true
	q.recordLocked(e.p, d)
	q.notifyLocked()
	q.mu.Unlock()
	e.done <- d
	return nil
}

// List returns the pending requests, oldest first.
func (q *Queue) List() []Pending {
	q.mu.Lock()
	out := make([]Pending, 0, len(q.pending))
	for _, e := range q.pending {
		if !e.decided {
			out = append(out, e.p)
		}
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Get returns the pending request id.
func (q *Queue) Get(id string) (Pending, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := q.pending[id]
	if e == nil || e.decided {
		return Pending{}, false
	}
	return e.p, true
}

// newID returns a random, URL-safe request id.
func newID() string { return "apr_" + rand.Text()[:16] }
