// Package store consumes single-use ids atomically: the replay guard behind
// INV-4 (an ephemeral token is used at most once) and behind DPoP proof
// replay detection.
//
// # Contract
//
// Every implementation of [Store] guarantees, for a namespace ns and an id:
//
//   - The first Consume(ctx, ns, id, expires) returns ok == true; every later
//     one returns ok == false, until expires has passed. This holds across
//     goroutines, and for the persistent backends across processes sharing
//     the store ([SQLite] on one file, [Redis] on one server) and across
//     restarts ([SQLite] always, [Redis] when the server runs with AOF).
//   - Namespaces are independent: the same id may be consumed once as a
//     token id ([NSToken]) and once as a proof id ([NSProof]).
//   - After expires the entry may be forgotten (bounded storage): the token
//     or proof it belongs to is dead by then. An unexpired entry is never
//     forgotten. Callers pass the last instant at which the verifier would
//     still accept the credential, that is exp plus the allowed clock skew.
//
// # Fail-secure
//
// A non-nil error means the store could not decide, and ok is then always
// false. Callers MUST deny the request on any error: a cancelled context, a
// store that is down, closed or busy, or invalid input (see [ErrInvalid],
// [ErrExpired], [ErrClosed]). There is no path on which an error yields
// ok == true.
//
// Consume is the last check before forwarding (zerotrust.md D4): it runs
// after signature, binding and DPoP verification, so someone holding a token
// without its key cannot burn it.
//
//	ok, err := st.Consume(ctx, store.NSToken, claims.ID, claims.Expiry.Add(skew))
//	if err != nil || !ok {
//		return deny("replay") // err: store undecided, deny anyway
//	}
//
// # Backends
//
//	Memory   mutex-sharded map + expiry heap   one process, lost on restart
//	SQLite   INSERT … ON CONFLICT, WAL, FULL   several processes on one file
//	Redis    SET key 1 NX PXAT expires         several gateways on one server
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Store consumes single-use ids atomically. Implementations are safe for
// concurrent use by multiple goroutines.
type Store interface {
	// Consume marks id used in namespace ns until expires (after which it
	// may be forgotten, since the token it belongs to is dead anyway). ok is
	// false if it was already used. err means the store could not decide:
	// ok is then false and callers MUST deny (fail-secure).
	Consume(ctx context.Context, ns, id string, expires time.Time) (ok bool, err error)
	// Close releases the store's resources. Consume after Close returns
	// ErrClosed.
	Close() error
}

// Namespaces used by warden.
const (
	NSToken = "jti"  // ephemeral token ids (INV-4)
	NSProof = "dpop" // DPoP proof ids (RFC 9449 §11.1)
)

// MaxIDLen bounds the id accepted by Consume, so that a hostile jti cannot
// make the store hold arbitrarily large keys.
const MaxIDLen = 1024

var (
	// ErrClosed is returned by Consume after Close.
	ErrClosed = errors.New("store: closed")
	// ErrInvalid is returned for an empty or malformed namespace or id.
	ErrInvalid = errors.New("store: invalid namespace or id")
	// ErrExpired is returned when expires is not in the future: the store
	// could not remember such an id at all, so it refuses to decide.
	ErrExpired = errors.New("store: expiry is not in the future")
)

// check validates the arguments shared by every backend. A namespace must be
// non-empty and free of ':' (Redis keys are "warden:" + ns + ":" + id, and a
// colon in ns would let two (ns, id) pairs share a key).
func check(ctx context.Context, ns, id string, expires, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ns == "" || strings.ContainsRune(ns, ':') {
		return fmt.Errorf("%w: namespace %q", ErrInvalid, ns)
	}
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%w: id of %d bytes", ErrInvalid, len(id))
	}
	if !expires.After(now) {
		return fmt.Errorf("%w: %s", ErrExpired, expires.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// ceilMilli is t in Unix milliseconds, rounded up so that storage at
// millisecond precision never forgets an entry earlier than asked.
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}
