//go:build integration

package a2agw

import (
	"context"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/testenv"
)

// Two gateways on one redis-server share their card pins, and a pin
// outlives both connections.
func TestRedisPinStore(t *testing.T) {
	r := testenv.StartRedis(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	open := func() *RedisPins {
		p, err := OpenRedisPins(ctx, r.URL)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := open(), open()
	pinContract(t, a, b)
	a.Close()
	b.Close()
	c := open()
	defer c.Close()
	if p, first, err := c.Pin(ctx, "up", "h-new"); err != nil || first || p != "h3" {
		t.Fatalf("a new connection: Pin = %q %v %v, want the approved h3", p, first, err)
	}
}

func TestRedisPinStoreUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := OpenRedisPins(ctx, "redis://127.0.0.1:1/0"); err == nil {
		t.Fatal("OpenRedisPins on a closed port succeeded")
	}
}
