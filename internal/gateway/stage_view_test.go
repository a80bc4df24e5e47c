package gateway

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// countHashes counts the gateway's hashings of arguments until the test
// ends.
func countHashes(t *testing.T) *atomic.Int64 {
	var n atomic.Int64
	paramsHash = func(args []byte) (string, []byte, error) {
		n.Add(1)
		return zerotrust.ParamsHash(args)
	}
	t.Cleanup(func() { paramsHash = zerotrust.ParamsHash })
	return &n
}

// TestHeldCallHashedOnce: a call held for approval, approved and
// forwarded, has its arguments hashed once by the gateway's stages (the
// approval, the check of the token warden issues for it, the forwarded
// canonical bytes and the record share it); so do a call with a token and
// one that matches a mandate. Before the decoded view, a held call was
// hashed three times, and four with mandates configured.
func TestHeldCallHashedOnce(t *testing.T) {
	n := countHashes(t)
	f := newZT(t, nil)
	q := approval.New(time.Minute)
	f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	hash, _, err := zerotrust.ParamsHash([]byte(`{"other":1}`))
	if err != nil {
		t.Fatal(err)
	}
	f.stage.Mandates = map[string]bool{MandateKey("transfer_funds", hash): true} // not this call's: it is held
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	p := waitPending(t, q)
	if err := q.Decide(p.ID, true, "bob@example.com", "ok"); err != nil {
		t.Fatal(err)
	}
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("upstream got %s, want the approved call", got.Raw)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("a held call was hashed %d times, want 1", got)
	}

	n.Store(0)
	h.send(h.client, call("2", "transfer_funds", `{"other":1}`, "")) // the mandate's
	if got := h.recv(h.upstream); got.ID.Raw() != "2" {
		t.Fatalf("upstream got %s, want the mandated call", got.Raw)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("a mandated call was hashed %d times, want 1", got)
	}

	n.Store(0)
	h.send(h.client, call("3", "transfer_funds", transferArgs, f.token(t, "alice", "transfer_funds", transferArgs)))
	if got := h.recv(h.upstream); got.ID.Raw() != "3" {
		t.Fatalf("upstream got %s, want the call with its token", got.Raw)
	}
	if got := n.Load(); got != 1 {
		t.Errorf("a call with a token was hashed %d times, want 1", got)
	}
}
