package approval

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func req() Request {
	return Request{Upstream: "pay", Subject: "alice", Tool: "transfer_funds", Arguments: []byte(`{"amount":1}`), Hash: "h"}
}

func TestApproveAndDeny(t *testing.T) {
	q := New(time.Minute)
	for _, approve := range []bool{true, false} {
		p := q.Submit(req())
		if got, ok := q.Get(p.ID); !ok || got.Tool != "transfer_funds" {
			t.Fatalf("Get: %+v %v", got, ok)
		}
		go func() {
			if err := q.Decide(p.ID, approve, "bob@example.com", "checked"); err != nil {
				t.Error(err)
			}
		}()
		d := q.Wait(context.Background(), p.ID)
		if d.Approved != approve || d.Approver != "bob@example.com" || d.TimedOut {
			t.Errorf("approve=%v: decision %+v", approve, d)
		}
		if len(q.List()) != 0 {
			t.Error("a decided request is still listed")
		}
	}
}

func TestTimeoutAndCancellationDeny(t *testing.T) {
	q := New(50 * time.Millisecond)
	p := q.Submit(req())
	if d := q.Wait(context.Background(), p.ID); d.Approved || !d.TimedOut {
		t.Fatalf("timeout: %+v", d)
	}
	if err := q.Decide(p.ID, true, "bob", ""); !errors.Is(err, ErrUnknown) {
		t.Fatalf("deciding a timed-out request: %v", err)
	}
	q = New(time.Minute)
	p = q.Submit(req())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := q.Wait(ctx, p.ID); d.Approved {
		t.Fatalf("cancelled: %+v", d)
	}
}

func TestDecideNeedsAnApprover(t *testing.T) {
	q := New(time.Minute)
	p := q.Submit(req())
	if err := q.Decide(p.ID, true, "", ""); !errors.Is(err, ErrApprover) {
		t.Fatalf("anonymous approval: %v", err)
	}
	if _, ok := q.Get(p.ID); !ok {
		t.Fatal("a refused anonymous approval removed the request")
	}
}

// raceBackend runs beforeTimeout just before the waiter's timeout settles
// a request: the exact moment at which a decision and the timeout race.
type raceBackend struct {
	Backend
	beforeTimeout func()
}

func (b *raceBackend) Settle(ctx context.Context, id string, d Decision, check func(Pending) error) error {
	if d.TimedOut && b.beforeTimeout != nil {
		f := b.beforeTimeout
		b.beforeTimeout = nil
		f()
	}
	return b.Backend.Settle(ctx, id, d, check)
}

// TestDecisionNeverLost: when a decision and the timeout race, Wait and
// Decide agree. The race is forced, not hoped for: the timer has fired and
// the waiter is about to settle the call as timed out when the approval
// lands (an accepted approval must then be what Wait reports), or the
// timeout settles first (the approval must then be refused).
func TestDecisionNeverLost(t *testing.T) {
	t.Run("decision lands first", func(t *testing.T) {
		b := &raceBackend{Backend: NewMemoryBackend()}
		q := NewQueue(Options{Timeout: time.Millisecond, Backend: b})
		defer q.Close()
		p := q.Submit(req())
		var decideErr error
		b.beforeTimeout = func() { decideErr = q.Decide(p.ID, true, "bob", "ok") }
		d := q.Wait(context.Background(), p.ID)
		if decideErr != nil {
			t.Fatalf("Decide before the timeout settled: %v", decideErr)
		}
		if !d.Approved || d.TimedOut || d.Approver != "bob" {
			t.Fatalf("Decide accepted the approval, but Wait reported %+v", d)
		}
	})
	t.Run("timeout lands first", func(t *testing.T) {
		q := New(time.Millisecond)
		defer q.Close()
		p := q.Submit(req())
		d := q.Wait(context.Background(), p.ID)
		if !d.TimedOut || d.Approved {
			t.Fatalf("Wait = %+v, want a timeout", d)
		}
		if err := q.Decide(p.ID, true, "bob", "late"); !errors.Is(err, ErrUnknown) {
			t.Fatalf("an approval after the timeout: %v, want ErrUnknown (the approver must not be told it took)", err)
		}
	})
}

func TestListOldestFirst(t *testing.T) {
	// In a synctest bubble the clock moves by exactly the sleep: b is
	// submitted a millisecond after a on any machine.
	synctest.Test(t, func(t *testing.T) {
		q := New(time.Minute)
		defer q.Close()
		a := q.Submit(req())
		time.Sleep(time.Millisecond)
		b := q.Submit(req())
		l := q.List()
		if len(l) != 2 || l[0].ID != a.ID || l[1].ID != b.ID {
			t.Fatalf("list %+v", l)
		}
	})
}

// TestDecisionBeforeWaitIsKept: a person may decide before the gateway
// starts waiting; the decision must not be lost.
func TestDecisionBeforeWaitIsKept(t *testing.T) {
	q := New(time.Minute)
	p := q.Submit(req())
	if err := q.Decide(p.ID, true, "bob", ""); err != nil {
		t.Fatal(err)
	}
	if len(q.List()) != 0 {
		t.Error("a decided call is still listed as pending")
	}
	if d := q.Wait(context.Background(), p.ID); !d.Approved || d.Approver != "bob" {
		t.Fatalf("decision made before Wait: %+v", d)
	}
	if err := q.Decide(p.ID, false, "eve", ""); !errors.Is(err, ErrUnknown) {
		t.Fatalf("second decision: %v", err)
	}
}
