package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store on a Redis server, shared by every gateway that points at
// it. Consume is one command,
//
//	SET warden:<ns>:<id> 1 NX PXAT <expires in Unix ms>
//
// which Redis executes atomically: "OK" means first use, a nil reply means
// replay, and anything else (connection refused, timeout, a READONLY
// replica, an unexpected reply) is an error and the caller denies. Redis
// expires the key itself, so no sweeper is needed.
//
// Durability is the server's: only with appendonly yes does a consumed id
// survive a server restart (appendfsync always also survives power loss).
// Without persistence a restarted Redis forgets every live id, which
// re-opens replay for tokens that have not yet expired. The expiry is
// judged by the server's clock; keep it in sync with the gateways' (and
// include the verifier's clock skew in expires).
type Redis struct {
	// immutable after OpenRedis
	client *redis.Client

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// redisKeyPrefix starts every key warden writes.
const redisKeyPrefix = "warden:"

// OpenRedis connects to the server at url (redis://, rediss:// or unix://,
// as parsed by redis.ParseURL) and checks it answers PING.
func OpenRedis(ctx context.Context, url string) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("store: redis url: %w", err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("store: redis %s: %w", opts.Addr, err)
	}
	return &Redis{client: c}, nil
}

// Consume implements Store.
func (r *Redis) Consume(ctx context.Context, ns, id string, expires time.Time) (bool, error) {
	if r.closed.Load() {
		return false, ErrClosed
	}
	if err := check(ctx, ns, id, expires, time.Now()); err != nil {
		return false, err
	}
	key := redisKeyPrefix + ns + ":" + id
	// go-redis's SetArgs would send EXAT (whole seconds, rounded down) for
	// an expiry without a millisecond part; PXAT rounded up never forgets
	// early.
	reply, err := r.client.Do(ctx, "SET", key, "1", "NX", "PXAT", ceilMilli(expires)).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		if r.closed.Load() {
			return false, ErrClosed
		}
		return false, fmt.Errorf("store: redis consume: %w", err)
	case reply != "OK":
		return false, fmt.Errorf("store: redis consume: unexpected reply %q", reply)
	}
	return true, nil
}

// Close closes the connection pool. Consume after Close returns ErrClosed.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		r.closeErr = r.client.Close()
	})
	return r.closeErr
}
