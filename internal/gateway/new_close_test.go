package gateway_test

import (
	"io"
	"testing"

	"github.com/agentwarden/warden/internal/gateway"
)

// New owns what the options hold open: when it refuses them, it closes
// them.
func TestNewClosesTheOptionsItRefuses(t *testing.T) {
	closed := 0
	_, err := gateway.New(gateway.Options{Closers: []io.Closer{funcCloser(func() error { closed++; return nil })}})
	if err == nil || closed != 1 {
		t.Fatalf("New: %v, closed %d closer(s), want an error and 1", err, closed)
	}
}

type funcCloser func() error

func (f funcCloser) Close() error { return f() }
