package pin

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentwarden/warden/internal/testenv"
)

// openRedisStore opens a store on url, closed at cleanup.
func openRedisStore(t *testing.T, url string) *Redis {
	t.Helper()
	s, err := OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// flushRedis empties the server at url.
func flushRedis(t *testing.T, url string) {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestRedisStoreContract(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	testStoreContract(t, func(t *testing.T) Store {
		flushRedis(t, rd.URL) // the suite's cases reuse names: each starts empty
		return openRedisStore(t, rd.URL)
	})
}

// TestRedisFirstUseOneWinnerAcrossGateways: gateways with their own
// connections see one tool first at the same moment, each with a different
// definition; one pins it, and every one of them gets that pin back.
func TestRedisFirstUseOneWinnerAcrossGateways(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	const gateways = 4
	stores := make([]*Redis, gateways)
	for i := range stores {
		stores[i] = openRedisStore(t, rd.URL)
	}
	at := time.UnixMilli(1_700_000_000_000).UTC()
	for round := range 10 {
		tool := fmt.Sprintf("race-%d", round)
		type outcome struct {
			stored   Record
			inserted bool
			err      error
		}
		got := make([]outcome, gateways)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				<-start
				r := Record{Upstream: "u", Tool: tool, Hash: hashOf(fmt.Sprint(round, i)), Source: SourceFirstUse, At: at}
				got[i].stored, got[i].inserted, got[i].err = s.PinFirst(context.Background(), r)
			})
		}
		close(start)
		wg.Wait()
		won := 0
		for i, o := range got {
			if o.err != nil {
				t.Fatalf("round %d, gateway %d: %v", round, i, o.err)
			}
			if o.inserted {
				won++
			}
			if o.stored.Hash != got[0].stored.Hash {
				t.Fatalf("round %d: gateway %d was told the pin is %s, gateway 0 %s", round, i, o.stored.Hash, got[0].stored.Hash)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d gateways pinned the tool, want 1", round, won)
		}
		pins, err := stores[gateways-1].Pins(t.Context(), "u")
		if err != nil || len(pins) != round+1 {
			t.Fatalf("round %d: Pins = %d pins, %v", round, len(pins), err)
		}
	}
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
	}
}

// TestRedisPinsFollowOtherGateways: two gateways (Pinners, each with its own
// store handle) on one Redis. A tool pinned through a may be called through
// b, which never listed it; a rug pull seen through b blocks the tool on a
// too, without a listing a; an approval through a frees it on b.
func TestRedisPinsFollowOtherGateways(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	a := newPinner(t, Options{Store: openRedisStore(t, rd.URL)})
	b := newPinner(t, Options{Store: openRedisStore(t, rd.URL)})
	if ok, _ := b.Allowed("files", "read"); ok {
		t.Fatal("b allows a tool nobody has listed")
	}
	if names, _ := mustList(t, a, "files", listOf(toolRead, toolWrite)); len(names) != 2 {
		t.Fatalf("a's first list kept %v", names)
	}
	for _, tool := range []string{"read", "write"} {
		if ok, reason := b.Allowed("files", tool); !ok {
			t.Fatalf("b refuses %s, pinned through a: %s", tool, reason)
		}
	}

	changed, cancel := a.Subscribe()
	defer cancel()
	names, changes := mustList(t, b, "files", listOf(toolReadPoisoned, toolWrite))
	if len(names) != 1 || names[0] != "write" || len(changes) != 1 || changes[0].Kind != KindChanged {
		t.Fatalf("b's list of the changed tool kept %v with changes %+v; want read left out as changed", names, changes)
	}
	if ok, reason := b.Allowed("files", "read"); ok || !strings.Contains(reason, "changed") {
		t.Fatalf("b: Allowed(read) = %v (%s), want refused as changed", ok, reason)
	}
	eventually(t, "a still allows read, changed as seen through b", func() bool {
		ok, reason := a.Allowed("files", "read")
		return !ok && strings.Contains(reason, "changed")
	})
	select {
	case <-changed:
	default:
		t.Error("a's subscribers were not told of the change made through b")
	}
	pend := a.Pending()
	if len(pend) != 1 || pend[0].Tool != "read" {
		t.Fatalf("a's pending definitions: %+v", pend)
	}
	if ok, _ := a.Allowed("files", "write"); !ok {
		t.Fatal("a refuses write, which did not change")
	}

	if _, err := a.Approve(t.Context(), "files", "read", pend[0].NewHash, "alice"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b still refuses read after its approval through a", func() bool {
		ok, _ := b.Allowed("files", "read")
		return ok
	})
	if pins := b.Pins(); len(pins) != 2 || pins[0].Source != SourceApproved || pins[0].Approver != "alice" {
		t.Fatalf("b's pins after the approval through a: %+v", pins)
	}
}

// TestRedisStoreDownRefusesUnknownTools: with the server gone, a gateway
// refuses a tool it has no pin for (it cannot ask whether another pinned
// it), keeps deciding on the pins it has, and blocks a listed tool it
// cannot check.
func TestRedisStoreDownRefusesUnknownTools(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	p := newPinner(t, Options{Store: openRedisStore(t, rd.URL)})
	mustList(t, p, "files", listOf(toolRead))
	rd.Kill()
	if ok, reason := p.Allowed("files", "write"); ok || !strings.Contains(reason, "could not be read") {
		t.Fatalf("Allowed(write) with Redis down = %v (%s), want refused because the store could not be read", ok, reason)
	}
	if ok, reason := p.Allowed("files", "read"); !ok {
		t.Fatalf("Allowed(read), pinned before Redis went down: refused (%s)", reason)
	}
	_, _, err := p.CheckList(t.Context(), "files", listOf(toolRead, toolWrite))
	if err == nil {
		t.Fatal("CheckList with Redis down reported no error")
	}
	if ok, _ := p.Allowed("files", "write"); ok {
		t.Fatal("a tool listed while Redis was down is allowed")
	}
}

// TestRedisChangedAfterReconnect: a change published while a gateway was
// disconnected is lost by pub/sub, so the re-subscription itself is
// signalled and the Pinner reloads. Close ends the signals.
func TestRedisChangedAfterReconnect(t *testing.T) {
	rd := testenv.StartRedis(t, true)
	s, err := OpenRedis(t.Context(), rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	select {
	case <-s.Changed():
		t.Fatal("a signal before anything changed")
	case <-time.After(100 * time.Millisecond):
	}
	rd.Kill()
	rd.Start(t)
	select {
	case <-s.Changed():
	case <-time.After(15 * time.Second):
		t.Fatal("no signal after the connection to Redis was re-established")
	}
	s.Close()
	select {
	case _, open := <-s.Changed():
		if open {
			t.Fatal("a signal after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Changed is not closed after Close")
	}
}
