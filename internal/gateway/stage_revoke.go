package gateway

// Revocation (AASM P8) inside the zero-trust stage. A token that passed
// INV-1..3, DPoP and the client signature is checked against the
// revocation registry (by jti, by subject issued before a time, by the
// session it is used on) before it is consumed, so a revoked token is
// refused without being burnt, and a registry that cannot decide refuses
// the call (fail-secure). It runs between verification and INV-4, which
// must stay last, so it is a step of the zero-trust stage rather than an
// entry of StageTable; its refusals carry stage zero-trust, rules revoked
// and revocation-store (docs/errors.md).
//
// EndSession is P8 for a session that ended: its held calls are cancelled
// and its credentials revoked (internal/revoke).

import (
	"context"
	"time"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// checkRevoked refuses a token that was revoked (P8), or that the registry
// cannot decide on (fail-secure).
// session is the session the call is bound to (bindingSession): a token
// bound to a session verified only on it, so it is also the token's.
func (z ZeroTrust) checkRevoked(ctx context.Context, session string, claims *zerotrust.Claims) *Denial {
	if z.Revocations == nil {
		return nil
	}
	revoked, reason, err := z.Revocations.Check(ctx, revoke.Token{ID: claims.ID, Subject: claims.Subject,
		IssuedAt: time.Unix(claims.IssuedAt, 0), Session: session})
	switch {
	case err != nil:
		return &Denial{Rule: deny.RuleRevocationStore, Reason: "P8 credential revocation: the revocation registry could not decide, so the call is refused", Cause: err.Error()}
	case revoked:
		return &Denial{Rule: deny.RuleRevoked, Reason: "P8 credential revocation: " + reason}
	}
	return nil
}

// EndSession is AASM P8 for a session that closed (DELETE, idle timeout,
// the upstream's exit): its held calls are cancelled, on every instance,
// and its credentials revoked.
func (z ZeroTrust) EndSession(ctx context.Context, session string) error {
	return endSession(ctx, z.Approvals, z.Revocations, session)
}
