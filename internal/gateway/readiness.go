package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/store"
)

// NamedStore is a store /readyz checks, by the name its failure carries.
type NamedStore struct {
	Name  string
	Store any // checked when it is a store.Pinger; nil or not, it is skipped
}

// Readiness returns the Options.Ready of stores: every one of them that can
// be pinged answers (the replay store, the revocation registry in Redis,
// the pin store in Redis, and the audit log, whose file must still be where
// it was opened: audit.Log.Ping). They are pinged at once, so one that
// hangs does not use the others' time, and every failure is reported, each
// named. It returns nil when none can be pinged (the gateway keeps no
// state a probe could miss).
//
// The approval queue is not pinged: approval.Queue does not expose its
// backend. With store redis it is on the same redis_url as the replay
// store and the revocation registry, whose pings cover that server.
func Readiness(stores ...NamedStore) func(context.Context) error {
	ns := make([]namedStore, len(stores))
	for i, s := range stores {
		ns[i] = namedStore{s.Name, s.Store}
	}
	return readiness(ns...)
}

// namedStore is NamedStore, as the package's tests write it.
type namedStore struct {
	name  string
	store any
}

// readiness is Readiness.
func readiness(stores ...namedStore) func(context.Context) error {
	var names []string
	var pingers []store.Pinger
	for _, s := range stores {
		if p, ok := s.store.(store.Pinger); ok {
			names, pingers = append(names, s.name), append(pingers, p)
		}
	}
	if len(pingers) == 0 {
		return nil
	}
	return func(ctx context.Context) error {
		errs := make([]error, len(pingers))
		var wg sync.WaitGroup
		for i, p := range pingers {
			wg.Go(func() {
				if err := p.Ping(ctx); err != nil {
					errs[i] = &storeDown{name: names[i], err: err}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// storeDown is a store that did not answer its readiness ping.
type storeDown struct {
	name string
	err  error
}

func (e *storeDown) Error() string { return e.name + ": " + e.err.Error() }
func (e *storeDown) Unwrap() error { return e.err }

// downStores names the stores in a readiness error, without their errors:
// what /readyz tells anyone who asks, since a store's error may carry an
// internal address (a Redis host and port). The log has the whole error.
func downStores(err error) string {
	var names []string
	var walk func(error)
	walk = func(err error) {
		if d, ok := err.(*storeDown); ok {
			state := "not answering"
			if errors.Is(d.err, audit.ErrLost) {
				state = "lost" // its file was deleted or replaced (docs/audit.md)
			}
			names = append(names, d.name+": "+state)
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	if len(names) == 0 {
		return "a store does not answer"
	}
	return strings.Join(names, "; ")
}
