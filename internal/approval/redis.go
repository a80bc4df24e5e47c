package approval

// The Redis backend: the queue shared by every gateway on one Redis server.
//
//	warden:approval:req:<id>   hash {pending: JSON, vote:<approver>: JSON}, PEXPIREAT expires+grace
//	warden:approval:dec:<id>   JSON decision, SET NX: the first decision wins
//	warden:approval:index      sorted set of pending ids by creation (List)
//	warden:approval:history    list of the last HistoryLimit outcomes; an
//	                           approved call that ran gets "executed": ms
//	warden:approval:events     pub/sub channel: "submitted|decided|removed <id>"
//
// Settle is one Lua script, so "the request exists, nobody settled it, this
// decision is now its outcome, record it, tell the others" is atomic on the
// server. Pub/sub is at most once (a gateway that reconnects misses what was
// published meanwhile), so waiters also poll their decision key: a missed
// message delays a release by at most Options.Poll, and never loses it.
//
// Durability is the server's: with appendonly yes a held call survives a
// Redis restart; without it a restart forgets every pending request, and
// their waiters refuse their calls ("the approval store lost the pending
// request"). Keys use no hash tags: one server (or a primary with
// replicas), not Redis Cluster.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/storage"
)

const (
	redisPrefix  = "warden:approval:"
	redisIndex   = redisPrefix + "index"
	redisHistory = redisPrefix + "history"
	redisEvents  = redisPrefix + "events"
	// redisGrace keeps a request and its decision past its expiry, so that
	// a waiter whose clock is a little behind the deciding instance's still
	// finds them when it settles its timeout.
	redisGrace = time.Minute
)

// RedisBackend is a Backend on a Redis server. It is safe for concurrent
// use.
type RedisBackend struct {
	// Immutable after OpenRedis.
	client *redis.Client
	pubsub *redis.PubSub
	events chan Event
	done   chan struct{} // closed when the subscription loop returned

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// OpenRedis connects to the Redis server at url (redis://, rediss:// or
// unix://), checks that it answers, and subscribes to the queue's change
// events.
func OpenRedis(ctx context.Context, url string) (*RedisBackend, error) {
	c, ps, err := storage.DialRedis(ctx, url, "approval", redisEvents)
	if err != nil {
		return nil, err
	}
	r := &RedisBackend{client: c, pubsub: ps, events: make(chan Event, 64), done: make(chan struct{})}
	go r.receive()
	return r, nil
}

// receive turns pub/sub messages into events until Close. go-redis
// reconnects and resubscribes by itself; what was published meanwhile is
// lost, which the waiters' polling covers.
func (r *RedisBackend) receive() {
	defer close(r.done)
	for msg := range r.pubsub.Channel() {
		kind, id, ok := strings.Cut(msg.Payload, " ")
		if !ok {
			continue
		}
		select {
		case r.events <- Event{Kind: EventKind(kind), ID: id}:
		default: // the queue is behind: it polls, and subscribers re-read
		}
	}
}

func reqKey(id string) string { return redisPrefix + "req:" + id }
func decKey(id string) string { return redisPrefix + "dec:" + id }

func (r *RedisBackend) check(id string) error {
	if r.closed.Load() {
		return errors.New("approval: redis backend closed")
	}
	if id == "" || len(id) > 256 {
		return ErrUnknown
	}
	return nil
}

// Put implements Backend.
func (r *RedisBackend) Put(ctx context.Context, p Pending) error {
	if err := r.check(p.ID); err != nil {
		return err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	_, err = r.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.HSet(ctx, reqKey(p.ID), "pending", data)
		tx.PExpireAt(ctx, reqKey(p.ID), p.Expires.Add(redisGrace))
		tx.ZAdd(ctx, redisIndex, redis.Z{Score: float64(p.Created.UnixMilli()), Member: p.ID})
		tx.Publish(ctx, redisEvents, string(EventSubmitted)+" "+p.ID)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Load implements Backend.
func (r *RedisBackend) Load(ctx context.Context, id string) (Pending, *Decision, error) {
	if err := r.check(id); err != nil {
		return Pending{}, nil, err
	}
	var req *redis.StringCmd
	var dec *redis.StringCmd
	_, err := r.client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		req = pl.HGet(ctx, reqKey(id), "pending")
		dec = pl.Get(ctx, decKey(id))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Pending{}, nil, fmt.Errorf("redis: %w", err)
	}
	var p Pending
	reqData, rerr := req.Bytes()
	decData, derr := dec.Bytes()
	if errors.Is(rerr, redis.Nil) && errors.Is(derr, redis.Nil) {
		return Pending{}, nil, ErrUnknown
	}
	if rerr == nil {
		if err := jsonrpc.Unmarshal(reqData, &p); err != nil {
			return Pending{}, nil, fmt.Errorf("redis: request %s: %w", id, err)
		}
	} else {
		p.ID = id // settled, and its request already expired
	}
	if errors.Is(derr, redis.Nil) {
		return p, nil, nil
	}
	var d Decision
	if err := jsonrpc.Unmarshal(decData, &d); err != nil {
		return Pending{}, nil, fmt.Errorf("redis: decision %s: %w", id, err)
	}
	return p, &d, nil
}

// settleScript records ARGV[1] as the outcome of the request KEYS[1] in
// KEYS[2] unless it has one: 0 unknown request, -1 already settled, 1 done.
// The decision lives as long as the request, plus ARGV[2] ms. It appends the outcome to the history KEYS[3] and publishes it.
var settleScript = redis.NewScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return 0 end
if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ttl + tonumber(ARGV[2])) then return -1 end
local p = redis.call('HGET', KEYS[1], 'pending')
redis.call('LPUSH', KEYS[3], '{"pending":' .. p .. ',"decision":' .. ARGV[1] .. ',"at":' .. ARGV[3] .. '}')
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
redis.call('PUBLISH', ARGV[5], 'decided ' .. ARGV[6])
return 1
`)

// Settle implements Backend.
func (r *RedisBackend) Settle(ctx context.Context, id string, d Decision, check func(Pending) error) error {
	if err := r.check(id); err != nil {
		return err
	}
	if check != nil {
		// A pending request never changes after Put, so checking it before
		// the atomic settle is as good as checking it inside.
		p, prev, err := r.Load(ctx, id)
		if err != nil {
			return err
		}
		if prev != nil {
			return ErrSettled
		}
		if err := check(p); err != nil {
			return err
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	res, err := settleScript.Run(ctx, r.client, []string{reqKey(id), decKey(id), redisHistory},
		data, redisGrace.Milliseconds(), time.Now().UnixMilli(), HistoryLimit, redisEvents, id).Int()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	switch res {
	case 0:
		return ErrUnknown
	case -1:
		return ErrSettled
	}
	return nil
}

// voteScript adds the vote ARGV[2] of approver ARGV[1] to the request
// KEYS[1] unless it is settled (KEYS[2]) or has that approver's vote:
// 0 unknown request, -1 settled, -2 same approver, else every field of the
// request. It publishes the change.
var voteScript = redis.NewScript(`
if redis.call('PTTL', KEYS[1]) < 0 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return -1 end
if redis.call('HSETNX', KEYS[1], 'vote:' .. ARGV[1], ARGV[2]) == 0 then return -2 end
redis.call('PUBLISH', ARGV[3], 'submitted ' .. ARGV[4])
return redis.call('HGETALL', KEYS[1])
`)

// Vote implements Backend.
func (r *RedisBackend) Vote(ctx context.Context, id string, v Vote, check func(Pending) error) ([]Vote, error) {
	if err := r.check(id); err != nil {
		return nil, err
	}
	if check != nil {
		p, prev, err := r.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			return nil, ErrSettled
		}
		if err := check(p); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	res, err := voteScript.Run(ctx, r.client, []string{reqKey(id), decKey(id)}, v.Approver, data, redisEvents, id).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	switch res {
	case int64(0):
		return nil, ErrUnknown
	case int64(-1):
		return nil, ErrSettled
	case int64(-2):
		return nil, ErrSameApprover
	}
	fields, ok := res.([]any)
	if !ok {
		return nil, fmt.Errorf("redis: vote on %s: unexpected answer %T", id, res)
	}
	kv := map[string]string{}
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		val, _ := fields[i+1].(string)
		kv[k] = val
	}
	return parseVotes(id, kv)
}

// Votes implements Backend.
func (r *RedisBackend) Votes(ctx context.Context, id string) ([]Vote, error) {
	if err := r.check(id); err != nil {
		return nil, err
	}
	kv, err := r.client.HGetAll(ctx, reqKey(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(kv) == 0 {
		return nil, ErrUnknown
	}
	return parseVotes(id, kv)
}

// parseVotes reads the vote:<approver> fields of a request's hash, oldest
// first.
func parseVotes(id string, fields map[string]string) ([]Vote, error) {
	var out []Vote
	for k, val := range fields {
		if !strings.HasPrefix(k, "vote:") {
			continue
		}
		var v Vote
		if err := jsonrpc.Unmarshal([]byte(val), &v); err != nil {
			return nil, fmt.Errorf("redis: vote on %s: %w", id, err)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Vote) int { return a.At.Compare(b.At) })
	return out, nil
}

// Remove implements Backend.
func (r *RedisBackend) Remove(ctx context.Context, id string) error {
	if err := r.check(id); err != nil {
		return err
	}
	_, err := r.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.Del(ctx, reqKey(id), decKey(id))
		tx.ZRem(ctx, redisIndex, id)
		tx.Publish(ctx, redisEvents, string(EventRemoved)+" "+id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// redisListLimit bounds the requests List reads.
const redisListLimit = 10000

// List implements Backend. It drops from the index the requests that
// expired without being removed (their gateway died).
func (r *RedisBackend) List(ctx context.Context) ([]Pending, error) {
	if r.closed.Load() {
		return nil, errors.New("approval: redis backend closed")
	}
	ids, err := r.client.ZRange(ctx, redisIndex, 0, redisListLimit-1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	reqs := make([]*redis.StringCmd, len(ids))
	decs := make([]*redis.IntCmd, len(ids))
	_, err = r.client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, id := range ids {
			reqs[i] = pl.HGet(ctx, reqKey(id), "pending")
			decs[i] = pl.Exists(ctx, decKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redis: %w", err)
	}
	var out []Pending
	var gone []any
	for i, id := range ids {
		data, err := reqs[i].Bytes()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, id)
			continue
		}
		if decs[i].Val() > 0 {
			continue
		}
		var p Pending
		if err := jsonrpc.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("redis: request %s: %w", id, err)
		}
		out = append(out, p)
	}
	if len(gone) > 0 {
		r.client.ZRem(ctx, redisIndex, gone...) // best effort: List is right without it
	}
	return out, nil
}

// executedScript marks the approved outcome of a request in the history
// KEYS[1] as executed at ARGV[2] (ms): the entry that starts with ARGV[1]
// ({"pending":{"ID":<id>,) gets an "executed" member. 1 done (or marked
// already), 0 no such entry, -1 not an approval. The entries are the ones
// settleScript built, so their shape is known: a member name in quotes
// cannot occur inside one of their strings, where quotes are escaped.
var executedScript = redis.NewScript(`
local items = redis.call('LRANGE', KEYS[1], 0, -1)
for i, it in ipairs(items) do
  if string.sub(it, 1, #ARGV[1]) == ARGV[1] then
    if not string.find(it, ',"decision":{"Approved":true,', 1, true) then return -1 end
    if string.find(it, ',"executed":', 1, true) then return 1 end
    redis.call('LSET', KEYS[1], i - 1, string.sub(it, 1, -2) .. ',"executed":' .. ARGV[2] .. '}')
    return 1
  end
end
return 0
`)

// MarkExecuted implements Backend.
func (r *RedisBackend) MarkExecuted(ctx context.Context, id string, at time.Time) error {
	if err := r.check(id); err != nil {
		return err
	}
	quoted, err := json.Marshal(id)
	if err != nil {
		return err
	}
	res, err := executedScript.Run(ctx, r.client, []string{redisHistory},
		`{"pending":{"ID":`+string(quoted)+`,`, at.UnixMilli()).Int()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if res != 1 {
		return ErrUnknown
	}
	return nil
}

// History implements Backend.
func (r *RedisBackend) History(ctx context.Context) ([]Decided, error) {
	if r.closed.Load() {
		return nil, errors.New("approval: redis backend closed")
	}
	items, err := r.client.LRange(ctx, redisHistory, 0, HistoryLimit-1).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	out := make([]Decided, 0, len(items))
	for _, it := range items {
		var rec struct {
			Pending  Pending  `json:"pending"`
			Decision Decision `json:"decision"`
			At       int64    `json:"at"`
			Executed int64    `json:"executed"` // ms, 0 for none
		}
		if err := jsonrpc.Unmarshal([]byte(it), &rec); err != nil {
			return nil, fmt.Errorf("redis: history: %w", err)
		}
		h := Decided{Pending: rec.Pending, Decision: rec.Decision, At: time.UnixMilli(rec.At)}
		if rec.Executed > 0 {
			h.Executed = time.UnixMilli(rec.Executed)
		}
		out = append(out, h)
	}
	return out, nil
}

// Events implements Backend.
func (r *RedisBackend) Events() <-chan Event { return r.events }

// Ping reports whether the server answers.
func (r *RedisBackend) Ping(ctx context.Context) error {
	if r.closed.Load() {
		return errors.New("approval: redis backend closed")
	}
	return r.client.Ping(ctx).Err()
}

// Close implements Backend.
func (r *RedisBackend) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		perr := r.pubsub.Close()
		<-r.done
		r.closeErr = errors.Join(perr, r.client.Close())
	})
	return r.closeErr
}
