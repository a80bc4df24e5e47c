package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// pingFunc is a store.Pinger.
type pingFunc func(context.Context) error

func (f pingFunc) Ping(ctx context.Context) error { return f(ctx) }

// /readyz names every store that does not answer, and only those; a store
// that hangs does not hide another's failure; stores that cannot be pinged
// are skipped.
func TestReadinessNamesEachFailingStore(t *testing.T) {
	ok := pingFunc(func(context.Context) error { return nil })
	refused := pingFunc(func(context.Context) error { return errors.New("dial tcp 127.0.0.1:6379: connection refused") })
	hangs := pingFunc(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })

	if r := readiness(namedStore{"replay store", nil}, namedStore{"pin store", struct{}{}}); r != nil {
		t.Fatal("readiness with nothing to ping is not nil: /readyz would probe nothing")
	}
	ready := readiness(namedStore{"replay store", ok}, namedStore{"revocation registry", nil}, namedStore{"pin store", ok})
	if err := ready(context.Background()); err != nil {
		t.Fatalf("every store answers: %v", err)
	}

	ready = readiness(namedStore{"replay store", hangs}, namedStore{"revocation registry", ok}, namedStore{"pin store", refused})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := ready(ctx)
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the pings ran one after another: %s", took)
	}
	if err == nil {
		t.Fatal("a store that hangs and one that refuses: ready")
	}
	msg := err.Error()
	for _, want := range []string{"replay store: context deadline exceeded", "pin store: dial tcp 127.0.0.1:6379: connection refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("not ready, but %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "revocation registry") {
		t.Errorf("a store that answers was named: %q", msg)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the hang's cause is lost: %v", err)
	}
}
