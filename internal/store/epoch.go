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

import (
	"context"
	"time"
)

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
