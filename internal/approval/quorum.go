package approval

// The two-person rule: a request of a classification level listed in
// Options.Approvers runs only once that many distinct approvers approved
// it. Each approval before the last is a Vote, kept with the request in the
// backend (so every gateway instance counts the same votes); the approval
// that completes the count settles the request, approved by all of them.
// One denial by anyone settles it at once, as denied.
//
//	approve (alice) ─ Vote ─► votes [alice]          ─► *MoreApprovals{1 of 2}
//	approve (alice) ─ Vote ─► ErrSameApprover            (nothing changes)
//	approve (bob)   ─ Vote ─► votes [alice, bob] ─ Settle(approved by "alice, bob")
//	deny (anyone)   ───────── Settle(denied)

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Vote is one approver's approval of a request that needs several.
type Vote struct {
	Approver string    `json:"approver"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// ErrSameApprover is returned when an approver approves a request that
// already has their approval and needs another person's.
var ErrSameApprover = errors.New("approval: you already approved this call; it needs another person's approval")

// MoreApprovals is the error of an approval that was recorded but does not
// yet complete the number of approvers the request needs: nothing runs yet.
type MoreApprovals struct {
	Votes []Vote // the approvals so far, oldest first, this one included
	Need  int    // distinct approvers the request needs
}

func (m *MoreApprovals) Error() string {
	names := make([]string, len(m.Votes))
	for i, v := range m.Votes {
		names[i] = v.Approver
	}
	return fmt.Sprintf("approval recorded: %d of the %d approvers this call needs (%s); it runs once %d more approve",
		len(m.Votes), m.Need, strings.Join(names, ", "), m.Need-len(m.Votes))
}

// Needs returns how many distinct approvers p needs: at least 1.
func (q *Queue) Needs(p Pending) int { return max(1, q.approvers[p.Classification]) }

// Votes returns the approvals recorded so far for the pending request id,
// oldest first.
func (q *Queue) Votes(id string) ([]Vote, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return q.backend.Votes(ctx, id)
}

// vote records an approval of id, which needs need approvers, and settles
// the request when it completes their number.
func (q *Queue) vote(ctx context.Context, id string, need int, check func(Pending) error, v Vote) error {
	votes, err := q.backend.Vote(ctx, id, v, check)
	switch {
	case errors.Is(err, ErrSettled), errors.Is(err, ErrUnknown):
		return ErrUnknown
	case err != nil:
		return err
	}
	if len(votes) < need {
		q.changed("")
		return &MoreApprovals{Votes: votes, Need: need}
	}
	d := Decision{Approved: true}
	var names, reasons []string
	for _, v := range votes {
		names = append(names, v.Approver)
		if v.Reason != "" {
			reasons = append(reasons, v.Approver+": "+v.Reason)
		}
	}
	d.Approver, d.Reason = strings.Join(names, ", "), strings.Join(reasons, "; ")
	err = q.backend.Settle(ctx, id, d, nil)
	if errors.Is(err, ErrSettled) {
		// Another approver completed the count at the same moment: the
		// call is approved unless someone denied it first.
		if _, prev, lerr := q.backend.Load(ctx, id); lerr == nil && prev != nil && prev.Approved {
			return nil
		}
		return ErrUnknown
	}
	if errors.Is(err, ErrUnknown) {
		return ErrUnknown
	}
	if err != nil {
		return err
	}
	q.changed(id)
	return nil
}
