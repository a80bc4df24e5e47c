package approval

import (
	"errors"
	"time"
)

// HistoryLimit is how many outcomes a Queue remembers for History.
const HistoryLimit = 1000

// Decided is the outcome of a request that left the queue: decided by a
// person, timed out, or cancelled with its call.
type Decided struct {
	Pending
	Decision
	At time.Time // when the outcome was settled
}

// Outcome is the outcome in a word: "approved", "denied", "timed out" or
// "cancelled".
func (d Decided) Outcome() string {
	switch {
	case d.Approved:
		return "approved"
	case d.Approver != "":
		return "denied"
	case d.TimedOut:
		return "timed out"
	}
	return "cancelled"
}

// History returns the last HistoryLimit outcomes, newest first. It is kept
// in memory only: the audit log is the durable record.
func (q *Queue) History() []Decided {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Decided, len(q.history))
	for i, d := range q.history {
		out[len(out)-1-i] = d
	}
	return out
}

// recordLocked appends an outcome to the history. q.mu is held.
func (q *Queue) recordLocked(p Pending, d Decision) {
	if len(q.history) >= HistoryLimit {
		n := copy(q.history, q.history[len(q.history)-HistoryLimit+1:])
		clear(q.history[n:])
		q.history = q.history[:n]
	}
	q.history = append(q.history, Decided{Pending: p, Decision: d, At: time.Now()})
}

// ErrHash is returned by DecideExact when the parameters_hash the approver
// saw is not the pending request's.
var ErrHash = errors.New("approval: the parameters_hash does not match the pending request's")

// DecideExact is Decide for an approver who was shown a particular request:
// it decides only if the pending request id still has parameters_hash hash,
// so that a decision cannot be replayed onto other arguments. It returns
// ErrUnknown for an unknown or settled id and ErrHash for another hash.
func (q *Queue) DecideExact(id, hash string, approve bool, approver, reason string) error {
	return q.decide(id, func(p Pending) error {
		if p.Hash != hash || hash == "" {
			return ErrHash
		}
		return nil
	}, approve, approver, reason)
}
