package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// DialRedis connects to the Redis server at url (redis://, rediss:// or
// unix://, as redis.ParseURL reads it) and checks that it answers PING.
// With channels it also subscribes to them and waits until the
// subscription is confirmed; pubsub is nil without. what names the caller
// in errors ("store", "pin", …). Every Redis-backed part of warden opens
// its connection here.
func DialRedis(ctx context.Context, url, what string, channels ...string) (client *redis.Client, pubsub *redis.PubSub, err error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: redis url: %w", what, err)
	}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%s: redis %s: %w", what, opts.Addr, err)
	}
	if len(channels) == 0 {
		return c, nil, nil
	}
	ps := c.Subscribe(ctx, channels...)
	if _, err := ps.Receive(ctx); err != nil { // the subscription is confirmed
		ps.Close()
		c.Close()
		return nil, nil, fmt.Errorf("%s: redis %s: subscribe: %w", what, opts.Addr, err)
	}
	return c, ps, nil
}
