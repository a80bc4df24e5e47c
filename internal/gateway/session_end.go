package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/revoke"
)

// sessionRevocationRetention is how long a closed session's revocation is
// kept: longer than any token bound to it lives (30 s by default).
const sessionRevocationRetention = time.Hour

// endSession is AASM P8 for a session that closed (DELETE, stdio exit, idle
// timeout): its pending approvals are cancelled, on every instance, and its
// credentials revoked. Either may be nil. It runs every step and reports
// every failure.
func endSession(ctx context.Context, q *approval.Queue, reg revoke.Registry, session string) error {
	if session == "" {
		return nil
	}
	var errs []error
	if q != nil {
		if _, err := q.CancelSession(ctx, session); err != nil {
			errs = append(errs, err)
		}
	}
	if reg != nil {
		err := reg.Revoke(ctx, revoke.Revocation{Kind: revoke.KindSession, ID: session, By: "gateway",
			Reason: "the session ended", Until: time.Now().Add(sessionRevocationRetention)})
		if err != nil {
			errs = append(errs, fmt.Errorf("revoking the session's credentials: %w", err))
		}
	}
	return errors.Join(errs...)
}
