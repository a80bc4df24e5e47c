package gateway

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// Each request gets its whole timeout, counted from when it was sent, though
// the relay has one timer: a request sent while the timer is set for an
// earlier one is not timed out with it, and is timed out on time.
func TestRelayTimeoutCountsFromEachRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		h := newHarness(t, RelayOptions{RequestTimeout: timeout})
		start := time.Now()
		h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
		h.recv(h.upstream)
		time.Sleep(600 * time.Millisecond)
		h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`)
		h.recv(h.upstream)
		h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{}}`) // 1 answered in time
		if got := h.recv(h.client); got.ID.Raw() != "1" || got.Error != nil {
			t.Fatalf("answer to 1: %s", got.Raw)
		}
		got := h.recv(h.client) // the next thing the client hears: 2's timeout
		if code, _ := detailOf(t, got); code != jsonrpc.CodeTimeout || got.ID.Raw() != "2" {
			t.Fatalf("got %s, want request 2 timed out", got.Raw)
		}
		if took := time.Since(start); took != 600*time.Millisecond+timeout {
			t.Errorf("request 2 timed out %v after request 1 was sent, want %v (its own timeout from its own sending)", took, 600*time.Millisecond+timeout)
		}
		h.recv(h.upstream) // its cancellation
		// The timer is set again for a request sent once all were done.
		h.send(h.client, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c"}}`)
		h.recv(h.upstream)
		sent := time.Now()
		got = h.recv(h.client)
		if code, _ := detailOf(t, got); code != jsonrpc.CodeTimeout || got.ID.Raw() != "3" {
			t.Fatalf("got %s, want request 3 timed out", got.Raw)
		}
		if took := time.Since(sent); took != timeout {
			t.Errorf("request 3 timed out after %v, want %v", took, timeout)
		}
	})
}

// A request timeout costs no allocation per call: the relay sets one timer,
// not one per request (a timer per request also woke the runtime's network
// poller on every call; relay_deadline.go).
func TestRelayTimeoutAllocatesNothingPerCall(t *testing.T) {
	perCall := func(timeout time.Duration) float64 {
		clientTest, clientRelay := transport.Pipe()
		upRelay, upTest := transport.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		r := NewRelay(clientRelay, upRelay, RelayOptions{Upstream: "up", Stateless: true, RequestTimeout: timeout})
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		defer func() { cancel(); clientTest.Close(); upTest.Close(); <-done }()
		call := mustDecode(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`)
		answer := mustDecode(t, `{"jsonrpc":"2.0","id":7,"result":{}}`)
		return testing.AllocsPerRun(200, roundTrip(t, ctx, clientTest, upTest, call, answer))
	}
	without, with := perCall(0), perCall(time.Minute)
	if with > without {
		t.Errorf("a relayed call allocates %.1f times with a request timeout, %.1f without: the timeout should cost none per call", with, without)
	}
}

// A relayed call without recording allocates a bounded number of times:
// the relay's Decision stays on the stack unless a Recorder is given it
// (keep), which saved two allocations of ~400 bytes per call, and the
// pending entry is held in its map by value, which saved one (issue 22):
// 10 before, 7 now, among them the request's Call and tool name and the
// Pipe's copies of the four messages written.
func TestRelayAllocationsPerCall(t *testing.T) {
	if recordRace {
		t.Skip("the race detector allocates")
	}
	clientTest, clientRelay := transport.Pipe()
	upRelay, upTest := transport.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r := NewRelay(clientRelay, upRelay, RelayOptions{Upstream: "up", Stateless: true, RequestTimeout: time.Minute})
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); clientTest.Close(); upTest.Close(); <-done }()
	call := mustDecode(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}`)
	answer := mustDecode(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"bench"}]}}`)
	least := math.Inf(1)
	for range 5 {
		least = min(least, testing.AllocsPerRun(200, roundTrip(t, ctx, clientTest, upTest, call, answer)))
	}
	t.Logf("a relayed call: %.0f allocations", least)
	const bound = 7
	if least > bound {
		t.Errorf("a relayed call allocates %.0f times, want at most %d", least, bound)
	}
	// A map keeps values of up to 128 bytes in place; a larger pending
	// entry would be allocated on every request again.
	if size := unsafe.Sizeof(pendingCall{}); size > 128 {
		t.Errorf("a pending entry is %d bytes, want at most 128", size)
	}
}

// roundTrip returns one relayed call as the tests above count it: the
// client writes call, the upstream reads it and writes answer, the client
// reads the answer.
func roundTrip(t *testing.T, ctx context.Context, client, up transport.Conn, call, answer *jsonrpc.Message) func() {
	return func() {
		if err := client.Write(ctx, call); err != nil {
			t.Fatal(err)
		}
		if _, err := up.Read(ctx); err != nil {
			t.Fatal(err)
		}
		if err := up.Write(ctx, answer); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
