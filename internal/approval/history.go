package approval

import (
	"context"
	"errors"
	"fmt"
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
	// Executed is when the gateway reported that the approved call ran:
	// it was forwarded and the upstream answered it without error
	// (MarkExecuted). Zero for a call that did not run, or not yet, and
	// for every outcome but an approval.
	Executed time.Time
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

// History returns the last HistoryLimit outcomes, newest first: kept in
// memory, or in the shared backend for every instance. It is not the
// durable record (the audit log is); a backend that cannot be read yields
// none.
func (q *Queue) History() []Decided {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	h, err := q.backend.History(ctx)
	if err != nil {
		q.log.Warn("approval store: cannot read the history", "err", err)
	}
	return h
}

// MarkExecuted records that the approved request id ran: the gateway
// forwarded it and the upstream answered without error. An approval whose
// call then never ran (the session ended first, the upstream was
// unreachable or answered with an error) stays unmarked, so the console
// never shows it as what was last allowed to run. It returns ErrUnknown
// when the history holds no approved outcome of id. Marking twice keeps
// the first time.
func (q *Queue) MarkExecuted(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := q.backend.MarkExecuted(ctx, id, time.Now()); err != nil {
		if !errors.Is(err, ErrUnknown) {
			q.log.Warn("approval store: cannot record that an approved call ran", "id", id, "err", err)
		}
		return fmt.Errorf("approval store: %w", err)
	}
	q.changed("") // a page comparing a waiting call with the history shows the new baseline
	return nil
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
