package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
)

// The audit record of a held call names who decided and why: the approver
// and the reason of an approval, and of a denial too.
func TestApprovalDecisionIsAudited(t *testing.T) {
	for _, approve := range []bool{true, false} {
		l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		f := newZT(t, nil)
		q := approval.New(time.Minute)
		f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
		h := newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage), Recorder: &Records{Audit: l}})
		h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
		p := waitPending(t, q)
		reason := map[bool]string{true: "invoice 42 checked", false: "wrong recipient"}[approve]
		if err := q.Decide(p.ID, approve, "bob@example.com", reason); err != nil {
			t.Fatal(err)
		}
		if approve {
			h.recv(h.upstream)
		} else {
			h.recv(h.client)
		}
		rs := (&recordFixture{log: l}).records(t)
		if len(rs) != 1 {
			t.Fatalf("approve=%v: %d records, want the call's", approve, len(rs))
		}
		r := rs[0]
		wantDecision, verb := audit.Allow, "approved by"
		if !approve {
			wantDecision, verb = audit.Deny, "denied by"
		}
		if r.Decision != wantDecision || r.Approver != "bob@example.com" ||
			!strings.Contains(r.Reason, verb+" bob@example.com: "+reason) || !strings.Contains(r.Reason, p.ID) {
			t.Errorf("approve=%v: record decision %q approver %q reason %q, want %s, the approver, and %q with the approval id",
				approve, r.Decision, r.Approver, r.Reason, wantDecision, verb+" bob@example.com: "+reason)
		}
	}
}
