package gateway

// The revocation stage (AASM P8). A token that the zero-trust stage
// verified (INV-1..3, DPoP, the client signature) is checked against the
// revocation registry (by jti, by subject issued before a time, by the
// session it is used on) before the zero-trust stage's commit half
// consumes it, so a revoked token is refused without being burnt, and a
// registry that cannot decide refuses the call (fail-secure). Its
// refusals carry stage zero-trust, like the token's, and rules revoked and
// revocation-store (docs/errors.md).
//
// EndSession is P8 for a session that ended: its held calls are cancelled
// and its credentials revoked (internal/revoke).

import (
	"context"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/revoke"
)

// Revocation is the "revocation" stage. NewPipeline makes it from a
// ZeroTrust with a registry (ZeroTrust.entries).
type Revocation struct {
	// Registry is the revocation registry; nil lets every call pass.
	Registry revoke.Registry
}

// Name implements Stage.
func (Revocation) Name() string { return "revocation" }

// Check implements Stage: it refuses a verified token that was revoked,
// or that the registry cannot decide on (fail-secure). A call without a
// verified token passes.
func (s Revocation) Check(ctx context.Context, c *Call) *Denial {
	v := c.verified
	if s.Registry == nil || v == nil {
		return nil
	}
	// v.session is the session the call is bound to (bindingSession): a
	// token bound to a session verified only on it, so it is also the
	// token's.
	revoked, reason, err := s.Registry.Check(ctx, revoke.Token{ID: v.claims.ID, Subject: v.claims.Subject,
		IssuedAt: time.Unix(v.claims.IssuedAt, 0), Session: v.session})
	switch {
	case err != nil:
		return &Denial{Stage: stageZeroTrust, Rule: deny.RuleRevocationStore, Reason: "P8 credential revocation: the revocation registry could not decide, so the call is refused", Cause: err.Error()}
	case revoked:
		return &Denial{Stage: stageZeroTrust, Rule: deny.RuleRevoked, Reason: "P8 credential revocation: " + reason}
	}
	return nil
}

// EndSession is AASM P8 for a session that closed (DELETE, idle timeout,
// the upstream's exit): its held calls are cancelled, on every instance,
// and its credentials revoked.
func (z ZeroTrust) EndSession(ctx context.Context, session string) error {
	return endSession(ctx, z.Approvals, z.Revocations, session)
}
