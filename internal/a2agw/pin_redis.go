package a2agw

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/storage"
)

// redisPinPrefix is the key of an upstream's pinned card hash:
//
//	warden:a2a:pin:<upstream>   the hex SHA-256 of its pinned card
const redisPinPrefix = "warden:a2a:pin:"

// RedisPins is a PinStore in Redis, shared by every gateway that uses the
// same server: a card pinned or approved through one gateway is pinned or
// approved on all of them. Close it when done.
type RedisPins struct {
	c *redis.Client
}

// OpenRedisPins connects to the Redis server at url (redis://, rediss:// or
// unix://) and checks that it answers.
func OpenRedisPins(ctx context.Context, url string) (*RedisPins, error) {
	c, _, err := storage.DialRedis(ctx, url, "a2agw: card pins")
	if err != nil {
		return nil, err
	}
	return &RedisPins{c: c}, nil
}

// Pin implements PinStore. SET NX makes the first use atomic across
// gateways: of two first uses, one wins and both read its hash.
func (r *RedisPins) Pin(ctx context.Context, upstream, hash string) (string, bool, error) {
	key := redisPinPrefix + upstream
	ok, err := r.c.SetNX(ctx, key, hash, 0).Result()
	if err != nil {
		return "", false, fmt.Errorf("a2agw: pin: %w", err)
	}
	if ok {
		return hash, true, nil
	}
	pinned, err := r.c.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		// Deleted between the two commands by an operator: pin again.
		return r.Pin(ctx, upstream, hash)
	}
	if err != nil {
		return "", false, fmt.Errorf("a2agw: read pin: %w", err)
	}
	return pinned, false, nil
}

// Approve implements PinStore.
func (r *RedisPins) Approve(ctx context.Context, upstream, hash string) error {
	if err := r.c.Set(ctx, redisPinPrefix+upstream, hash, 0).Err(); err != nil {
		return fmt.Errorf("a2agw: approve pin: %w", err)
	}
	return nil
}

// Close closes the connection.
func (r *RedisPins) Close() error { return r.c.Close() }
