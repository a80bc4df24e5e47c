package revoke

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

// Redis is a Registry on a Redis server, shared by every gateway that
// points at it: a revocation made through one instance is refused by all
// of them from the moment Revoke returns.
//
//	warden:revoke:<kind>:<id>   hash {before, at, until, by, reason}, PEXPIREAT until
//	warden:revoke:bind:<jti>    session id, PEXPIREAT the token's expiry
//
// Revoke is one Lua script (revoking again never narrows: the later before
// and until win); Check is one pipelined round trip, and a second only for
// a token bound to another session than the one it is presented on.
// Durability is the server's (appendonly yes); see the package doc for why
// an empty restart does not re-open revoked tokens when the replay store
// shares the server.
type Redis struct {
	client *redis.Client // immutable after OpenRedis

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

const redisPrefix = "warden:revoke:"

func redisKey(k Kind, id string) string { return redisPrefix + string(k) + ":" + id }
func bindKey(jti string) string         { return redisPrefix + "bind:" + jti }

// OpenRedis connects to the server at url (redis://, rediss:// or unix://)
// and checks that it answers.
func OpenRedis(ctx context.Context, url string) (*Redis, error) {
	c, _, err := storage.DialRedis(ctx, url, "revoke")
	if err != nil {
		return nil, err
	}
	return &Redis{client: c}, nil
}

// revokeScript merges a revocation into KEYS[1]: ARGV before, at, until
// (Unix ms), by, reason.
var revokeScript = redis.NewScript(`
local old = redis.call('HMGET', KEYS[1], 'before', 'until')
local before, untl = tonumber(ARGV[1]), tonumber(ARGV[3])
if old[1] and tonumber(old[1]) > before then before = tonumber(old[1]) end
if old[2] and tonumber(old[2]) > untl then untl = tonumber(old[2]) end
redis.call('HSET', KEYS[1], 'before', before, 'at', ARGV[2], 'until', untl, 'by', ARGV[4], 'reason', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], untl)
return 1
`)

// Revoke implements Registry.
func (r *Redis) Revoke(ctx context.Context, rv Revocation) error {
	if r.closed.Load() {
		return ErrClosed
	}
	rv, err := normalize(rv, time.Now())
	if err != nil {
		return err
	}
	err = revokeScript.Run(ctx, r.client, []string{redisKey(rv.Kind, rv.ID)},
		rv.Before.UnixMilli(), rv.At.UnixMilli(), rv.Until.UnixMilli(), rv.By, rv.Reason).Err()
	return r.fail(err)
}

// Bind implements Registry.
func (r *Redis) Bind(ctx context.Context, session, jti string, until time.Time) error {
	if r.closed.Load() {
		return ErrClosed
	}
	if err := checkBind(ctx, session, jti, until); err != nil {
		return err
	}
	return r.fail(r.client.Do(ctx, "SET", bindKey(jti), session, "PXAT", until.UnixMilli()).Err())
}

var revocationFields = []string{"before", "at", "until", "by", "reason"}

// Check implements Registry.
func (r *Redis) Check(ctx context.Context, t Token) (bool, string, error) {
	if r.closed.Load() {
		return undecided(ErrClosed)
	}
	if err := checkToken(ctx, t); err != nil {
		return undecided(err)
	}
	type probe struct {
		kind Kind
		id   string
		cmd  *redis.SliceCmd
	}
	probes := []*probe{{kind: KindToken, id: t.ID}}
	if t.Subject != "" {
		probes = append(probes, &probe{kind: KindSubject, id: t.Subject})
	}
	if t.Session != "" {
		probes = append(probes, &probe{kind: KindSession, id: t.Session})
	}
	var bind *redis.StringCmd
	_, err := r.client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, p := range probes {
			p.cmd = pl.HMGet(ctx, redisKey(p.kind, p.id), revocationFields...)
		}
		bind = pl.Get(ctx, bindKey(t.ID))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return undecided(r.fail(err))
	}
	bound, err := bind.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return undecided(r.fail(err))
	}
	if bound != "" && bound != t.Session {
		probes = append(probes, &probe{kind: KindSession, id: bound, cmd: r.client.HMGet(ctx, redisKey(KindSession, bound), revocationFields...)})
	}
	now := time.Now()
	for _, p := range probes {
		vals, err := p.cmd.Result()
		if err != nil {
			return undecided(r.fail(err))
		}
		rv, ok, err := parseRevocation(p.kind, p.id, vals)
		if err != nil {
			return undecided(err)
		}
		if ok && rv.Until.After(now) && covers(rv, t, bound) {
			return true, reasonOf(rv), nil
		}
	}
	return false, "", nil
}

// parseRevocation decodes the HMGET of revocationFields; ok is false when
// the key does not exist.
func parseRevocation(kind Kind, id string, vals []any) (Revocation, bool, error) {
	if len(vals) != len(revocationFields) || vals[0] == nil {
		return Revocation{}, false, nil
	}
	var ms [3]int64
	for i := range ms {
		s, _ := vals[i].(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Revocation{}, false, fmt.Errorf("revoke: redis: %s %s: field %s: %q", kind, id, revocationFields[i], s)
		}
		ms[i] = n
	}
	by, _ := vals[3].(string)
	reason, _ := vals[4].(string)
	return Revocation{Kind: kind, ID: id, Before: time.UnixMilli(ms[0]), At: time.UnixMilli(ms[1]), Until: time.UnixMilli(ms[2]),
		By: by, Reason: reason}, true, nil
}

// redisListLimit bounds the revocations List reads.
const redisListLimit = 10000

// List implements Registry.
func (r *Redis) List(ctx context.Context) ([]Revocation, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	var out []Revocation
	for _, kind := range []Kind{KindToken, KindSubject, KindSession} {
		prefix := redisKey(kind, "")
		iter := r.client.Scan(ctx, 0, prefix+"*", 500).Iterator()
		for iter.Next(ctx) && len(out) < redisListLimit {
			key := iter.Val()
			vals, err := r.client.HMGet(ctx, key, revocationFields...).Result()
			if err != nil {
				return nil, r.fail(err)
			}
			rv, ok, err := parseRevocation(kind, key[len(prefix):], vals)
			if err != nil {
				return nil, err
			}
			if ok && rv.Until.After(time.Now()) {
				out = append(out, rv)
			}
		}
		if err := iter.Err(); err != nil {
			return nil, r.fail(err)
		}
	}
	sortNewestFirst(out)
	return out, nil
}

// Ping reports whether the server answers.
func (r *Redis) Ping(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	return r.client.Ping(ctx).Err()
}

// Close implements Registry.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		r.closeErr = r.client.Close()
	})
	return r.closeErr
}

func (r *Redis) fail(err error) error {
	switch {
	case err == nil:
		return nil
	case r.closed.Load():
		return ErrClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("revoke: redis: %w", err)
}
