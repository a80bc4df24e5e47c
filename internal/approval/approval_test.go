package approval

import (
	"context"
	"errors"
	"sync"
	"testing"
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

// TestDecisionNeverLost: when a decision and the timeout race, Wait and
// Decide agree — an accepted approval is never reported as a timeout.
func TestDecisionNeverLost(t *testing.T) {
	for range 200 {
		q := New(2 * time.Millisecond)
		p := q.Submit(req())
		var wg sync.WaitGroup
		var decideErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(2 * time.Millisecond)
			decideErr = q.Decide(p.ID, true, "bob", "")
		}()
		d := q.Wait(context.Background(), p.ID)
		wg.Wait()
		if decideErr == nil && !d.Approved {
			t.Fatalf("Decide accepted the approval, but Wait reported %+v", d)
		}
	}
}

func TestListOldestFirst(t *testing.T) {
	q := New(time.Minute)
	a := q.Submit(req())
	time.Sleep(time.Millisecond)
	b := q.Submit(req())
	l := q.List()
	if len(l) != 2 || l[0].ID != a.ID || l[1].ID != b.ID {
		t.Fatalf("list %+v", l)
	}
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
