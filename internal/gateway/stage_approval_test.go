package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
)

// newHeldFixture: transfer_funds needs a token; calls without one are held
// for approval in q.
func newHeldFixture(t *testing.T, timeout time.Duration) (*approval.Queue, *harness) {
	f := newZT(t, nil)
	q := approval.New(timeout)
	f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	return q, newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
}

// waitPending returns the one pending approval, once it appears.
func waitPending(t *testing.T, q *approval.Queue) approval.Pending {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if l := q.List(); len(l) == 1 {
			return l[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no pending approval; queue: %+v", q.List())
	return approval.Pending{}
}

func TestHeldCallRunsOnceApproved(t *testing.T) {
	q, h := newHeldFixture(t, time.Minute)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	p := waitPending(t, q)
	// The approver sees the canonical arguments and the standard's hash.
	if string(p.Arguments) != `{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}` ||
		p.Hash != "bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c" || p.Subject != "alice" {
		t.Fatalf("pending approval shows %+v", p)
	}
	// While it is held, the session goes on.
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := h.recv(h.upstream); got.Method != "ping" {
		t.Fatalf("upstream got %s while the call was held, want the ping", got.Raw)
	}
	if err := q.Decide(p.ID, true, "bob@example.com", "looks right"); err != nil {
		t.Fatal(err)
	}
	got := h.recv(h.upstream)
	if got.ID.Raw() != "1" || strings.Contains(string(got.Raw), "io.agentwarden/") ||
		!strings.Contains(string(got.Raw), `"arguments":{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`) {
		t.Fatalf("upstream got %s, want the approved call with canonical arguments", got.Raw)
	}
}

func TestHeldCallDeniedOrTimedOut(t *testing.T) {
	q, h := newHeldFixture(t, time.Minute)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	p := waitPending(t, q)
	q.Decide(p.ID, false, "bob@example.com", "wrong recipient")
	code, d := detailOf(t, h.recv(h.client))
	if d.Rule != "approval-denied" || code == 0 {
		t.Fatalf("denied: %d %+v", code, d)
	}
	h.nothing(h.upstream, "a denied call")

	q2, h2 := newHeldFixture(t, 100*time.Millisecond)
	h2.send(h2.client, call("1", "transfer_funds", transferArgs, ""))
	if _, d := detailOf(t, h2.recv(h2.client)); d.Rule != "approval-timeout" {
		t.Fatalf("timed out: %+v", d)
	}
	if len(q2.List()) != 0 {
		t.Error("a timed-out call is still pending")
	}
}

func TestCancelledHeldCallLeavesTheQueue(t *testing.T) {
	q, h := newHeldFixture(t, time.Minute)
	h.send(h.client, call("7", "transfer_funds", transferArgs, ""))
	waitPending(t, q)
	h.send(h.client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	h.recv(h.upstream) // the cancellation is relayed
	deadline := time.Now().Add(5 * time.Second)
	for len(q.List()) != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(q.List()) != 0 {
		t.Fatal("the cancelled call is still waiting for approval")
	}
	h.nothing(h.client, "an answer to a cancelled call")
}
