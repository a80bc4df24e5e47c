package gateway

// Request timeouts with one timer per relay, not one per request.
//
// A timer set per request costs more than its allocation: the Go runtime's
// network poller sleeps until the earliest timer, so setting one while the
// poller sleeps wakes it (an eventfd write and read, an epoll_wait and a
// thread switch) on every call, which measured a fifth of the stdio relay's
// CPU beyond a byte pipe's. Every request of a relay gets the same timeout,
// so a request tracked while the timer is set has a later deadline than the
// one the timer is set for: tracking it changes nothing. When the timer
// fires, expireDue times out the requests whose deadline has passed and sets
// the timer again for the earliest deadline still pending.
//
//	track ──► p.due = now + timeout ──► armExpiry: set the timer unless it is set
//	timer ──► expireDue: expire each p with p.due ≤ now (oldest first),
//	                     set the timer for the next p.due, if any

import (
	"cmp"
	"slices"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// expiry is the relay's one request-timeout timer; guarded by Relay.mu.
type expiry struct {
	timer *time.Timer // created by the first armExpiry
	set   bool        // timer will fire and call expireDue
}

// armExpiry makes sure the timer is set, after a request with a deadline
// was tracked. Called with r.mu held.
func (r *Relay) armExpiry() {
	if r.expiry.set || r.closed {
		return
	}
	r.expiry.set = true
	if r.expiry.timer == nil {
		r.expiry.timer = time.AfterFunc(r.timeout, r.expireDue)
		return
	}
	r.expiry.timer.Reset(r.timeout)
}

// stopExpiry stops the timer when no request can be pending any more.
// Called with r.mu held.
func (r *Relay) stopExpiry() {
	if r.expiry.timer != nil {
		r.expiry.timer.Stop()
	}
	r.expiry.set = false
}

// expireDue times out the pending requests whose deadline has passed, in
// the order they were sent, and sets the timer for the next deadline.
func (r *Relay) expireDue() {
	now := time.Since(r.born)
	r.mu.Lock()
	var due []pendingCall
	var next time.Duration
	for _, p := range r.pending {
		switch {
		case p.due == 0:
		case p.due <= now:
			due = append(due, p)
		case next == 0 || p.due < next:
			next = p.due
		}
	}
	r.expiry.set = next != 0 && !r.closed
	if r.expiry.set {
		r.expiry.timer.Reset(next - now)
	}
	slices.SortFunc(due, func(a, b pendingCall) int { return cmp.Compare(a.due, b.due) })
	ids := make([]jsonrpc.ID, len(due))
	for i, p := range due {
		ids[i] = p.id
	}
	r.mu.Unlock()
	for _, id := range ids {
		r.expire(id) // answers it unless its answer came meanwhile
	}
}
