package pin

// The Redis store: the pins and pending definitions of every gateway that
// points at one Redis server.
//
//	warden:pin:upstreams           set of the upstreams that have pins or pending definitions
//	warden:pin:pins:<upstream>     hash tool → JSON {hash, def, source, approver, at}
//	warden:pin:pending:<upstream>  hash tool → JSON {kind, old_hash, old, new_hash, new, seen, rejected, decider, decided}
//	warden:pin:events              pub/sub channel: "<writer> <upstream>" after each write
//
// No key expires: a pin lasts until a manifest or a person replaces it, as
// in SQLite. Times are Unix milliseconds, definitions base64 (the JSON
// encoding of []byte).
//
// PinFirst is one script (HSETNX, then HGET): of two gateways that see a
// tool first at the same moment, one pins it and both get that pin back.
// Hold, Approve and Reject read the pending entry, decide in Go, and write
// with a compare-and-set script that applies only if the entry is still
// exactly what was read; on a conflict they read again. Approve moves the
// definition from pending to the pins in that one script.
//
// Every write publishes on the events channel. Changed turns the other
// writers' messages into a signal, so that each gateway's Pinner reloads its
// copy within a round trip of a change made elsewhere. Pub/sub is at most
// once: a reconnection (which re-subscribes) is signalled too, since
// messages may have been lost meanwhile, and a gateway also reads the store
// at every tools/list answer it checks.
//
// Durability is the server's (appendonly yes, as for the replay store): a
// Redis that loses its data loses the pins, and the next tools/list answer
// pins on first use again. Keys use no hash tags: one server (or a primary
// with replicas), not Redis Cluster.

import (
	"context"
	"crypto/rand"
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
	redisPrefix    = "warden:pin:"
	redisUpstreams = redisPrefix + "upstreams"
	redisEvents    = redisPrefix + "events"
	// redisCASAttempts bounds the retries of a compare-and-set that lost
	// to another writer.
	redisCASAttempts = 16
)

func pinsKey(upstream string) string    { return redisPrefix + "pins:" + upstream }
func pendingKey(upstream string) string { return redisPrefix + "pending:" + upstream }

// Redis is a Store on a Redis server, shared by several gateways. It is safe
// for concurrent use.
type Redis struct {
	// Immutable after OpenRedis.
	client  *redis.Client
	pubsub  *redis.PubSub
	writer  string        // this store's id in the events it publishes
	changed chan struct{} // Changed; closed after done
	done    chan struct{} // closed when receive returned

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ Shared = (*Redis)(nil)

// OpenRedis connects to the server at url (redis://, rediss:// or unix://,
// as parsed by redis.ParseURL), checks that it answers, and subscribes to
// the other writers' changes.
func OpenRedis(ctx context.Context, url string) (*Redis, error) {
	c, ps, err := storage.DialRedis(ctx, url, "pin", redisEvents)
	if err != nil {
		return nil, err
	}
	r := &Redis{client: c, pubsub: ps, writer: rand.Text(), changed: make(chan struct{}, 1), done: make(chan struct{})}
	go r.receive()
	return r, nil
}

// receive turns the other writers' messages, and re-subscriptions after a
// lost connection, into coalesced signals on r.changed, until Close.
func (r *Redis) receive() {
	defer close(r.done)
	for msg := range r.pubsub.ChannelWithSubscriptions() {
		if m, ok := msg.(*redis.Message); ok {
			if writer, _, _ := strings.Cut(m.Payload, " "); writer == r.writer {
				continue
			}
		}
		select {
		case r.changed <- struct{}{}:
		default: // a signal is already waiting
		}
	}
}

// Changed implements Shared.
func (r *Redis) Changed() <-chan struct{} { return r.changed }

// Close implements Store.
func (r *Redis) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		err := r.pubsub.Close()
		<-r.done
		close(r.changed)
		r.closeErr = errors.Join(err, r.client.Close())
	})
	return r.closeErr
}

// Ping reports whether the server answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	return r.fail(r.client.Ping(ctx).Err())
}

func (r *Redis) check(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	return ctx.Err()
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
	return fmt.Errorf("pin: redis: %w", err)
}

// event is the payload of a change to upstream.
func (r *Redis) event(upstream string) string { return r.writer + " " + upstream }

// redisPin is a Record as stored; upstream and tool are its key and field.
type redisPin struct {
	Hash     string `json:"hash"`
	Def      []byte `json:"def,omitempty"`
	Source   Source `json:"source"`
	Approver string `json:"approver,omitempty"`
	At       int64  `json:"at"`
}

// redisPending is a Pending as stored.
type redisPending struct {
	Kind     Kind   `json:"kind"`
	OldHash  string `json:"old_hash,omitempty"`
	Old      []byte `json:"old,omitempty"`
	NewHash  string `json:"new_hash"`
	New      []byte `json:"new,omitempty"`
	Seen     int64  `json:"seen"`
	Rejected bool   `json:"rejected,omitempty"`
	Decider  string `json:"decider,omitempty"`
	Decided  int64  `json:"decided,omitempty"`
}

func encodePin(r Record) string {
	b, _ := json.Marshal(redisPin{Hash: r.Hash, Def: r.Definition, Source: r.Source, Approver: r.Approver, At: millis(r.At)})
	return string(b)
}

func decodePin(upstream, tool, s string) (Record, error) {
	var w redisPin
	if err := jsonrpc.Unmarshal([]byte(s), &w); err != nil {
		return Record{}, fmt.Errorf("pin: redis: the pin of %s/%s: %w", upstream, tool, err)
	}
	return Record{Upstream: upstream, Tool: tool, Hash: w.Hash, Definition: w.Def, Source: w.Source,
		Approver: w.Approver, At: fromMillis(w.At)}, nil
}

func encodePending(p Pending) string {
	b, _ := json.Marshal(redisPending{Kind: p.Kind, OldHash: p.OldHash, Old: p.Old, NewHash: p.NewHash, New: p.New,
		Seen: millis(p.Seen), Rejected: p.Rejected, Decider: p.Decider, Decided: millis(p.Decided)})
	return string(b)
}

func decodePending(upstream, tool, s string) (Pending, error) {
	var w redisPending
	if err := jsonrpc.Unmarshal([]byte(s), &w); err != nil {
		return Pending{}, fmt.Errorf("pin: redis: the pending definition of %s/%s: %w", upstream, tool, err)
	}
	return Pending{Upstream: upstream, Tool: tool, Kind: w.Kind, OldHash: w.OldHash, Old: w.Old, NewHash: w.NewHash,
		New: w.New, Seen: fromMillis(w.Seen), Rejected: w.Rejected, Decider: w.Decider, Decided: fromMillis(w.Decided)}, nil
}

// fromMillis is the inverse of millis.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// hashes returns the hash of each upstream (all of them when upstream is
// ""), read in one pipeline, by upstream.
func (r *Redis) hashes(ctx context.Context, key func(string) string, upstream string) (map[string]map[string]string, error) {
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	ups := []string{upstream}
	if upstream == "" {
		var err error
		if ups, err = r.client.SMembers(ctx, redisUpstreams).Result(); err != nil {
			return nil, r.fail(err)
		}
	}
	cmds := make([]*redis.MapStringStringCmd, len(ups))
	_, err := r.client.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, u := range ups {
			cmds[i] = pl.HGetAll(ctx, key(u))
		}
		return nil
	})
	if err != nil {
		return nil, r.fail(err)
	}
	out := make(map[string]map[string]string, len(ups))
	for i, u := range ups {
		out[u] = cmds[i].Val()
	}
	return out, nil
}

// Pins implements Store.
func (r *Redis) Pins(ctx context.Context, upstream string) ([]Record, error) {
	out, err := decodeAll(ctx, r, pinsKey, upstream, decodePin)
	sortRecords(out)
	return out, err
}

// Pendings implements Store.
func (r *Redis) Pendings(ctx context.Context, upstream string) ([]Pending, error) {
	out, err := decodeAll(ctx, r, pendingKey, upstream, decodePending)
	sortPendings(out)
	return out, err
}

// decodeAll reads the hashes that key names (of upstream, or of every
// upstream when it is "") and decodes each of their entries.
func decodeAll[T any](ctx context.Context, r *Redis, key func(string) string, upstream string,
	decode func(upstream, tool, s string) (T, error)) ([]T, error) {
	all, err := r.hashes(ctx, key, upstream)
	if err != nil {
		return nil, err
	}
	var out []T
	for u, tools := range all {
		for t, s := range tools {
			v, err := decode(u, t, s)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// pinFirstScript pins ARGV[2] as tool ARGV[1] in KEYS[1] unless it has a
// pin, and returns {1 if it did, the pin stored}. On insertion it records
// the upstream ARGV[3] in KEYS[2] and publishes ARGV[5] on ARGV[4].
var pinFirstScript = redis.NewScript(`
local inserted = redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
if inserted == 1 then
  redis.call('SADD', KEYS[2], ARGV[3])
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return {inserted, redis.call('HGET', KEYS[1], ARGV[1])}
`)

// PinFirst implements Store.
func (r *Redis) PinFirst(ctx context.Context, rec Record) (Record, bool, error) {
	if err := checkRecord(rec); err != nil {
		return Record{}, false, err
	}
	if err := r.check(ctx); err != nil {
		return Record{}, false, err
	}
	res, err := pinFirstScript.Run(ctx, r.client, []string{pinsKey(rec.Upstream), redisUpstreams},
		rec.Tool, encodePin(rec), rec.Upstream, redisEvents, r.event(rec.Upstream)).Slice()
	if err != nil {
		return Record{}, false, r.fail(err)
	}
	if len(res) != 2 {
		return Record{}, false, fmt.Errorf("pin: redis: unexpected reply %v", res)
	}
	inserted, _ := res[0].(int64)
	s, ok := res[1].(string)
	if !ok {
		return Record{}, false, fmt.Errorf("pin: redis: unexpected reply %v", res)
	}
	stored, err := decodePin(rec.Upstream, rec.Tool, s)
	if err != nil {
		return Record{}, false, err
	}
	return stored, inserted == 1, nil
}

// SetPin implements Store.
func (r *Redis) SetPin(ctx context.Context, rec Record) error {
	if err := checkRecord(rec); err != nil {
		return err
	}
	if err := r.check(ctx); err != nil {
		return err
	}
	_, err := r.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.HSet(ctx, pinsKey(rec.Upstream), rec.Tool, encodePin(rec))
		tx.SAdd(ctx, redisUpstreams, rec.Upstream)
		tx.Publish(ctx, redisEvents, r.event(rec.Upstream))
		return nil
	})
	return r.fail(err)
}

// remove deletes tool from the hash key(upstream) and tells the others.
func (r *Redis) remove(ctx context.Context, key func(string) string, upstream, tool string) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	_, err := r.client.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		tx.HDel(ctx, key(upstream), tool)
		tx.Publish(ctx, redisEvents, r.event(upstream))
		return nil
	})
	return r.fail(err)
}

// DeletePin implements Store.
func (r *Redis) DeletePin(ctx context.Context, upstream, tool string) error {
	return r.remove(ctx, pinsKey, upstream, tool)
}

// DropPending implements Store.
func (r *Redis) DropPending(ctx context.Context, upstream, tool string) error {
	return r.remove(ctx, pendingKey, upstream, tool)
}

// casScript replaces the pending entry ARGV[1] of KEYS[1] if it is still
// exactly ARGV[2] ("" for none): by ARGV[3], or deletes it when ARGV[3] is
// "". A non-empty ARGV[4] is pinned as the tool in KEYS[2] in the same step.
// It records the upstream ARGV[5] in KEYS[3], publishes ARGV[7] on ARGV[6]
// and returns 1; it returns 0, and changes nothing, if the entry changed.
var casScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if cur ~= ARGV[2] then return 0 end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[1], ARGV[4]) end
redis.call('SADD', KEYS[3], ARGV[5])
redis.call('PUBLISH', ARGV[6], ARGV[7])
return 1
`)

// pendingEntry reads the pending entry of (upstream, tool): its stored
// text ("" when there is none) and its value.
func (r *Redis) pendingEntry(ctx context.Context, upstream, tool string) (string, Pending, error) {
	s, err := r.client.HGet(ctx, pendingKey(upstream), tool).Result()
	if errors.Is(err, redis.Nil) {
		return "", Pending{}, nil
	}
	if err != nil {
		return "", Pending{}, r.fail(err)
	}
	p, err := decodePending(upstream, tool, s)
	return s, p, err
}

// update runs decide on the pending entry of (upstream, tool) and applies
// what it returns (the new pending text, "" to delete it, and a pin text or
// "") only if the entry did not change meanwhile; otherwise it reads again.
// decide returns done to stop without writing.
func (r *Redis) update(ctx context.Context, upstream, tool string,
	decide func(cur string, p Pending) (next, pin string, done bool, err error)) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	for range redisCASAttempts {
		cur, p, err := r.pendingEntry(ctx, upstream, tool)
		if err != nil {
			return err
		}
		next, pin, done, err := decide(cur, p)
		if err != nil || done {
			return err
		}
		n, err := casScript.Run(ctx, r.client, []string{pendingKey(upstream), pinsKey(upstream), redisUpstreams},
			tool, cur, next, pin, upstream, redisEvents, r.event(upstream)).Int()
		if err != nil {
			return r.fail(err)
		}
		if n == 1 {
			return nil
		}
	}
	return fmt.Errorf("pin: redis: the pending definition of %s/%s kept changing; try again", upstream, tool)
}

// Hold implements Store.
func (r *Redis) Hold(ctx context.Context, p Pending) (Pending, error) {
	if err := checkPending(p); err != nil {
		return Pending{}, err
	}
	var stored Pending
	err := r.update(ctx, p.Upstream, p.Tool, func(cur string, old Pending) (string, string, bool, error) {
		if cur != "" && old.NewHash == p.NewHash {
			stored = old
			return "", "", true, nil
		}
		stored = clonePending(p)
		return encodePending(p), "", false, nil
	})
	if err != nil {
		return Pending{}, err
	}
	return stored, nil
}

// waiting checks that a pending entry (cur its text) waits with hash.
func waiting(cur string, p Pending, tool, hash string) error {
	if cur == "" {
		return ErrNoPending
	}
	if p.NewHash != hash {
		return fmt.Errorf("%w: %s waits with %s", ErrHashMismatch, tool, p.NewHash)
	}
	return nil
}

// Approve implements Store.
func (r *Redis) Approve(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Record, error) {
	if strings.TrimSpace(approver) == "" {
		return Record{}, ErrApprover
	}
	var rec Record
	err := r.update(ctx, upstream, tool, func(cur string, p Pending) (string, string, bool, error) {
		if err := waiting(cur, p, tool, hash); err != nil {
			return "", "", false, err
		}
		rec = Record{Upstream: upstream, Tool: tool, Hash: p.NewHash, Definition: slices.Clone(p.New),
			Source: SourceApproved, Approver: approver, At: at}
		return "", encodePin(rec), false, nil
	})
	if err != nil {
		return Record{}, err
	}
	return rec, nil
}

// Reject implements Store.
func (r *Redis) Reject(ctx context.Context, upstream, tool, hash, approver string, at time.Time) (Pending, error) {
	if strings.TrimSpace(approver) == "" {
		return Pending{}, ErrApprover
	}
	var out Pending
	err := r.update(ctx, upstream, tool, func(cur string, p Pending) (string, string, bool, error) {
		if err := waiting(cur, p, tool, hash); err != nil {
			return "", "", false, err
		}
		p.Rejected, p.Decider, p.Decided = true, approver, at
		out = p
		return encodePending(p), "", false, nil
	})
	if err != nil {
		return Pending{}, err
	}
	return out, nil
}
