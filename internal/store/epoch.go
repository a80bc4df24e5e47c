package store

// Epochs: the instant since which a store's memory of consumed ids is
// complete. A credential issued before it may have been consumed in a state
// the store has since lost (a memory store after a restart, a Redis server
// that restarted empty or was replaced), so the verifier refuses it: nothing
// can be accepted twice.
//
//	Memory   the store's creation: every gateway restart starts a new epoch
//	SQLite   the database's creation, kept in it (warden_meta)
//	Redis    the value of warden:epoch, created when missing; read and
//	         written in the same script as the consumption, so a reset
//	         between the two is impossible
//
// Epochs are kept in milliseconds, rounded up: an epoch is never earlier
// than the instant the store's memory really began.
//
// # Which credentials an epoch refuses
//
// A credential could have been consumed in the lost state only if it was
// issued before the epoch. Its iat is in whole seconds, read from the
// issuer's clock: the reading at the real issue instant r lies in
// [iat, iat+1), and the issuer's clock may run up to skew ahead of the
// clocks that set the epoch and verify (the gateways'), so
//
//	r ≥ iat − skew
//
// and r < epoch is possible exactly when iat − skew < epoch. [IssuedBefore]
// therefore refuses iat < epoch + skew: with no skew, a token issued in the
// epoch's own second, before the epoch, is refused (comparing whole seconds
// let it through), and with an issuer clock ahead by up to skew, a token it
// stamped after the epoch but really issued before is refused too. An
// issuer clock that runs behind only lowers iat, so it is refused sooner,
// never later. The price is a window of up to skew (plus the rest of the
// epoch's second) after a new epoch in which no credential issued before
// it is accepted, and fresh credentials are accepted only once their iat
// reaches epoch + skew: after a memory store's restart, or when a Redis
// server comes back empty, clients must wait that long or get refusals.

import (
	"context"
	"time"
)

// IssuedBefore reports whether a credential whose iat (Unix seconds) is iat
// may have been issued before epoch by an issuer whose clock runs up to
// skew ahead: iat < epoch + skew (see the reasoning above). A zero epoch
// (a store that keeps none) refuses nothing.
func IssuedBefore(iat int64, epoch time.Time, skew time.Duration) bool {
	if epoch.IsZero() {
		return false
	}
	return time.Unix(iat, 0).Before(epoch.Add(max(skew, 0)))
}

// EpochStore is a Store that knows its epoch.
type EpochStore interface {
	Store
	// ConsumeSince is Consume, and returns the store's epoch as of the
	// consumption, atomically with it. A caller must refuse a credential
	// issued before the epoch (allowing for clock skew) even when ok is true.
	ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (ok bool, epoch time.Time, err error)
}

// Pinger is a store that can report whether it is reachable (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
}

// ConsumeSince implements EpochStore: a memory store's epoch is its
// creation, since it forgets everything when its process ends.
func (m *Memory) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	ok, err := m.Consume(ctx, ns, id, expires)
	return ok, m.epoch, err
}

// Ping implements Pinger.
func (m *Memory) Ping(context.Context) error {
	if m.closed.Load() {
		return ErrClosed
	}
	return nil
}
