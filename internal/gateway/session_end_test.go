package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/revoke"
)

// TestEndSessionCancelsApprovalsAndRevokes: when a session closes, a call
// it still has held for approval is refused, and a token presented on it
// (or bound to it) is revoked; another session is untouched (AASM P8).
func TestEndSessionCancelsApprovalsAndRevokes(t *testing.T) {
	q := approval.New(time.Minute)
	defer q.Close()
	reg := revoke.NewMemory()
	defer reg.Close()
	held := q.Submit(approval.Request{Session: "s1", Subject: "alice", Tool: "transfer_funds", Arguments: []byte(`{}`), Hash: "h"})
	other := q.Submit(approval.Request{Session: "s2", Subject: "alice", Tool: "transfer_funds", Arguments: []byte(`{}`), Hash: "h"})
	if err := reg.Bind(t.Context(), "s1", "jti-bound", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	if err := endSession(t.Context(), q, reg, "s1"); err != nil {
		t.Fatal(err)
	}
	if d := q.Wait(t.Context(), held.ID); d.Approved || !strings.Contains(d.Reason, "closed") {
		t.Fatalf("the closed session's held call: %+v", d)
	}
	if _, ok := q.Get(other.ID); !ok {
		t.Fatal("another session's held call was cancelled")
	}
	for _, tok := range []revoke.Token{
		{ID: "jti-on-session", Subject: "alice", IssuedAt: time.Now(), Session: "s1"},
		{ID: "jti-bound", Subject: "alice", IssuedAt: time.Now()},
	} {
		if revoked, _, err := reg.Check(t.Context(), tok); err != nil || !revoked {
			t.Errorf("%+v after its session closed: revoked=%v err=%v", tok, revoked, err)
		}
	}
	if revoked, _, _ := reg.Check(t.Context(), revoke.Token{ID: "jti-x", Subject: "alice", IssuedAt: time.Now(), Session: "s2"}); revoked {
		t.Error("closing s1 revoked a token on s2")
	}
	if err := endSession(t.Context(), q, reg, ""); err != nil {
		t.Errorf("ending a session without an id: %v", err)
	}
}
