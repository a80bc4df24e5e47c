package approval

import (
	"context"
	"errors"
	"testing"
	"time"
)

// signalled reports whether ch carries a signal, waiting at most a while:
// the signals under test are sent synchronously, so one that is due is
// already there.
func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

func TestSubscribeSignalsEveryChange(t *testing.T) {
	q := New(time.Minute)
	changed, cancel := q.Subscribe()
	defer cancel()

	p := q.Submit(req())
	if !signalled(changed) {
		t.Fatal("no signal after Submit")
	}
	waited := make(chan Decision, 1)
	go func() { waited <- q.Wait(context.Background(), p.ID) }()
	if err := q.Decide(p.ID, true, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if !signalled(changed) {
		t.Fatal("no signal after Decide")
	}
	<-waited

	// A call that times out leaves the queue: the page must drop it.
	short := New(20 * time.Millisecond)
	changed2, cancel2 := short.Subscribe()
	defer cancel2()
	p2 := short.Submit(req())
	<-changed2
	if d := short.Wait(context.Background(), p2.ID); !d.TimedOut {
		t.Fatalf("want a timeout, got %+v", d)
	}
	if !signalled(changed2) {
		t.Fatal("no signal after the request timed out")
	}

	select { // Wait's removal of the decided request may have signalled too
	case <-changed:
	default:
	}
	cancel()
	q.Submit(req())
	select {
	case <-changed:
		t.Fatal("a signal after cancel")
	default:
	}
}

func TestSubscribeCoalescesWithoutBlocking(t *testing.T) {
	q := New(time.Minute)
	changed, cancel := q.Subscribe()
	defer cancel()
	for range 10 { // nobody reads: Submit must not block
		q.Submit(req())
	}
	<-changed
	select {
	case <-changed:
		t.Fatal("ten changes gave more than one pending signal")
	default:
	}
}

func TestHistoryRecordsEveryOutcome(t *testing.T) {
	q := New(20 * time.Millisecond)
	approved := q.Submit(req())
	if err := q.Decide(approved.ID, true, "console:bob", "ok"); err != nil {
		t.Fatal(err)
	}
	q.Wait(context.Background(), approved.ID)
	denied := q.Submit(req())
	q.Decide(denied.ID, false, "console:carol", "too much")
	q.Wait(context.Background(), denied.ID)
	timedOut := q.Submit(req())
	q.Wait(context.Background(), timedOut.ID)
	cancelled := q.Submit(req())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	q.Wait(ctx, cancelled.ID)

	h := q.History()
	want := []struct{ id, outcome, approver string }{
		{cancelled.ID, "cancelled", ""}, {timedOut.ID, "timed out", ""},
		{denied.ID, "denied", "console:carol"}, {approved.ID, "approved", "console:bob"},
	}
	if len(h) != len(want) {
		t.Fatalf("history has %d entries, want %d: %+v", len(h), len(want), h)
	}
	for i, w := range want {
		if h[i].ID != w.id || h[i].Outcome() != w.outcome || h[i].Approver != w.approver || h[i].Tool != "transfer_funds" {
			t.Errorf("history[%d] = %s %s by %q, want %s %s by %q", i, h[i].ID, h[i].Outcome(), h[i].Approver, w.id, w.outcome, w.approver)
		}
	}
}

func TestHistoryIsBounded(t *testing.T) {
	q := New(time.Minute)
	var last string
	for range HistoryLimit + 5 {
		p := q.Submit(req())
		q.Decide(p.ID, false, "bob", "")
		q.Wait(context.Background(), p.ID)
		last = p.ID
	}
	h := q.History()
	if len(h) != HistoryLimit || h[0].ID != last {
		t.Fatalf("history has %d entries, newest %s; want %d, newest %s", len(h), h[0].ID, HistoryLimit, last)
	}
}

func TestDecideExactRefusesAnotherHash(t *testing.T) {
	q := New(time.Minute)
	p := q.Submit(req())
	for _, hash := range []string{"other", ""} {
		if err := q.DecideExact(p.ID, hash, true, "console:bob", ""); !errors.Is(err, ErrHash) {
			t.Fatalf("hash %q: err %v, want ErrHash", hash, err)
		}
	}
	if _, ok := q.Get(p.ID); !ok {
		t.Fatal("a refused decision settled the request")
	}
	if err := q.DecideExact("apr_unknown", p.Hash, true, "console:bob", ""); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := q.DecideExact(p.ID, p.Hash, true, "console:bob", ""); err != nil {
		t.Fatal(err)
	}
	if d := q.Wait(context.Background(), p.ID); !d.Approved || d.Approver != "console:bob" {
		t.Fatalf("decision %+v", d)
	}
}

func TestLoadOrCreateTokenReportsCreation(t *testing.T) {
	dir := t.TempDir()
	tok, created, err := LoadOrCreateToken(dir)
	if err != nil || !created || len(tok) < 43 {
		t.Fatalf("first: %q %v %v", tok, created, err)
	}
	again, created, err := LoadOrCreateToken(dir)
	if err != nil || created || again != tok {
		t.Fatalf("second: %q %v %v", again, created, err)
	}
}
