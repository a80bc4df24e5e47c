// Package revoke is the revocation registry of AASM P8 (credential
// revocation): the token ids, subjects and sessions whose credentials the
// gateway must refuse from now on, even while they are otherwise valid.
//
//	warden token revoke --jti ID      one token
//	warden token revoke --sub ALICE   every token of alice issued before now
//	session close (DELETE, stdio exit, idle timeout)
//	                                  every token bound to that session, and
//	                                  every call still arriving on it
//
// The zero-trust stage asks the registry after a token verified and before
// it is consumed:
//
//	revoked, reason, err := reg.Check(ctx, revoke.Token{ID: claims.ID,
//		Subject: claims.Subject, IssuedAt: time.Unix(claims.IssuedAt, 0), Session: c.Session})
//	if err != nil || revoked {
//		return deny(reason) // err: the registry could not decide, deny anyway
//	}
//
// # Contract
//
// Every [Registry] guarantees, for the handles that share its storage (one
// process for [Memory], one file for [SQLite], one server for [Redis]):
//
//   - After Revoke returned nil, every Check that starts later reports a
//     token it covers as revoked, until the revocation's Until.
//   - A subject's revocation covers the tokens issued before its Before
//     (token iat has second precision: a token issued in Before's second is
//     covered too). Revoking a subject again never moves Before back.
//   - A session's revocation covers the tokens bound to it (Bind) and every
//     token presented on it (Token.Session).
//   - Check returns a non-nil error when it cannot decide; revoked is then
//     true, and callers MUST deny (fail-secure).
//
// # Retention and data loss
//
// A revocation is kept until its Until (default: DefaultRetention after it
// was made), which must outlive every token it covers; warden's tokens live
// 30 seconds unless UnsafeMaxTTL raises the cap. A Redis server that loses
// its data loses its revocations, but not their effect when the replay store
// is on the same server: the store's epoch then refuses every token issued
// before the loss, which includes every token a lost revocation covered.
// Keep the registry and the replay store together (warden does: both follow
// zero_trust.store).
package revoke

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind is what a revocation names.
type Kind string

// Kinds of revocation.
const (
	KindToken   Kind = "jti"     // one token, by its id
	KindSubject Kind = "sub"     // every token of a principal issued before a time
	KindSession Kind = "session" // every token bound to or presented on a session
)

// DefaultRetention is how long a revocation is kept when it names no Until.
const DefaultRetention = 24 * time.Hour

// MaxIDLen bounds the ids a registry accepts.
const MaxIDLen = 1024

// Revocation is one entry of the registry.
type Revocation struct {
	Kind Kind   `json:"kind"`
	ID   string `json:"id"` // the token id, subject or session id
	// Before, for a subject, is the instant before which its tokens were
	// issued; zero means At. It is At for the other kinds.
	Before time.Time `json:"before"`
	At     time.Time `json:"at"`    // when it was revoked; zero means now
	Until  time.Time `json:"until"` // when it may be forgotten; zero means At + DefaultRetention
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Token is what Check needs of a presented token.
type Token struct {
	ID       string    // jti
	Subject  string    // sub
	IssuedAt time.Time // iat
	// Session is the session the token is presented on; "" for none (stdio,
	// stateless requests).
	Session string
}

// Registry records revocations and answers whether a token is revoked.
// Implementations are safe for concurrent use.
type Registry interface {
	// Revoke records r (see Revocation for its defaults).
	Revoke(ctx context.Context, r Revocation) error
	// Bind records that the token jti was issued for session, until until
	// (the token's expiry): revoking the session revokes it, wherever it is
	// presented.
	Bind(ctx context.Context, session, jti string, until time.Time) error
	// Check reports whether t is revoked, and why. An error means the
	// registry could not decide: revoked is then true, and the caller MUST
	// deny.
	Check(ctx context.Context, t Token) (revoked bool, reason string, err error)
	// List returns the revocations in force, newest first.
	List(ctx context.Context) ([]Revocation, error)
	// Close releases the registry; its methods fail afterwards.
	Close() error
}

// Errors of the registries.
var (
	ErrInvalid = errors.New("revoke: invalid revocation")
	ErrClosed  = errors.New("revoke: closed")
)

// normalize fills r's defaults and validates it.
func normalize(r Revocation, now time.Time) (Revocation, error) {
	switch r.Kind {
	case KindToken, KindSubject, KindSession:
	default:
		return r, fmt.Errorf("%w: kind %q (want jti, sub or session)", ErrInvalid, r.Kind)
	}
	if r.ID == "" || len(r.ID) > MaxIDLen {
		return r, fmt.Errorf("%w: %s of %d bytes", ErrInvalid, r.Kind, len(r.ID))
	}
	if r.At.IsZero() {
		r.At = now
	}
	if r.Kind != KindSubject || r.Before.IsZero() {
		r.Before = r.At
	}
	if r.Until.IsZero() {
		r.Until = r.At.Add(DefaultRetention)
	}
	if !r.Until.After(now) {
		return r, fmt.Errorf("%w: until %s is not in the future", ErrInvalid, r.Until.UTC().Format(time.RFC3339))
	}
	return r, nil
}

// covers reports whether the revocation r (in force) covers t, given the
// session bound is the session t's id was bound to ("" for none).
func covers(r Revocation, t Token, bound string) bool {
	switch r.Kind {
	case KindToken:
		return r.ID == t.ID
	case KindSubject:
		// iat has second precision: a token issued in Before's second is
		// covered, whether it came before or after within it.
		return r.ID == t.Subject && t.IssuedAt.Before(r.Before.Truncate(time.Second).Add(time.Second))
	case KindSession:
		return r.ID != "" && (r.ID == t.Session || r.ID == bound)
	}
	return false
}

// reasonOf says why r revokes a token.
func reasonOf(r Revocation) string {
	var s string
	switch r.Kind {
	case KindToken:
		s = "token " + r.ID + " was revoked"
	case KindSubject:
		s = "every token of " + r.ID + " issued before " + r.Before.UTC().Format(time.RFC3339) + " was revoked"
	case KindSession:
		s = "the session " + r.ID + " was closed, and its credentials revoked"
	}
	s += " at " + r.At.UTC().Format(time.RFC3339)
	if r.By != "" {
		s += " by " + r.By
	}
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// checkToken validates the token Check is asked about.
func checkToken(ctx context.Context, t Token) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.ID == "" || len(t.ID) > MaxIDLen || len(t.Subject) > MaxIDLen || len(t.Session) > MaxIDLen {
		return fmt.Errorf("%w: token id, subject or session of the wrong size", ErrInvalid)
	}
	return nil
}

// undecided is Check's answer when it could not decide. The reason may be
// shown to a client, so it names no address: the error carries that.
func undecided(err error) (bool, string, error) {
	return true, "the revocation registry could not decide", err
}
