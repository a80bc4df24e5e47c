package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/storage"
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
	c, _, err := storage.DialRedis(ctx, url, "store")
	if err != nil {
		return nil, err
	}
	// The epoch begins when the first gateway opens the data, not at its
	// first consumption: a token issued in between is one the data has
	// seen the whole life of. SET NX keeps an epoch that already exists.
	if err := c.SetNX(ctx, redisEpochKey, ceilMilli(time.Now()), 0).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("store: redis %s: starting the epoch: %w", c.Options().Addr, err)
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

// redisEpochKey holds the Unix milliseconds of the Redis data's epoch.
const redisEpochKey = redisKeyPrefix + "epoch"

// consumeScript consumes KEYS[1] until ARGV[1] (Unix ms) and returns
// {consumed (1/0), epoch (ms)}. The epoch key is read, and created with
// ARGV[2] (now) when missing, in the same atomic step: if the server lost
// its data, the consumption that follows already sees the new epoch.
var consumeScript = redis.NewScript(`
local e = redis.call('GET', KEYS[2])
if not e then
  redis.call('SET', KEYS[2], ARGV[2])
  e = ARGV[2]
end
local ok = redis.call('SET', KEYS[1], '1', 'NX', 'PXAT', ARGV[1])
if ok then return {1, e} end
return {0, e}
`)

// ConsumeSince implements EpochStore.
func (r *Redis) ConsumeSince(ctx context.Context, ns, id string, expires time.Time) (bool, time.Time, error) {
	if r.closed.Load() {
		return false, time.Time{}, ErrClosed
	}
	now := time.Now()
	if err := check(ctx, ns, id, expires, now); err != nil {
		return false, time.Time{}, err
	}
	key := redisKeyPrefix + ns + ":" + id
	res, err := consumeScript.Run(ctx, r.client, []string{key, redisEpochKey}, ceilMilli(expires), ceilMilli(now)).Slice()
	if err != nil {
		if r.closed.Load() {
			return false, time.Time{}, ErrClosed
		}
		return false, time.Time{}, fmt.Errorf("store: redis consume: %w", err)
	}
	if len(res) != 2 {
		return false, time.Time{}, fmt.Errorf("store: redis consume: unexpected reply %v", res)
	}
	consumed, _ := res[0].(int64)
	var epochMs int64
	switch e := res[1].(type) {
	case string:
		epochMs, err = strconv.ParseInt(e, 10, 64)
	case int64:
		epochMs = e
	default:
		err = fmt.Errorf("epoch of type %T", e)
	}
	if err != nil {
		return false, time.Time{}, fmt.Errorf("store: redis epoch: %w", err)
	}
	return consumed == 1, time.UnixMilli(epochMs), nil
}

// Ping implements Pinger.
func (r *Redis) Ping(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	return r.client.Ping(ctx).Err()
}
