//go:build integration

package gateway

// Issue 16: a refusal does not show clients internal addresses. A real
// redis-server holds the replay store, the revocation registry and the
// approval queue; it is killed (by the pid this test started) and the
// calls that needed it are refused. The JSON-RPC error the client gets
// names the store in general words; the store's error, with its address,
// goes to warden's log and the audit record only.

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/store"
	"github.com/agentwarden/warden/internal/testenv"
)

// internalDetail matches what a client must not see: an IPv4 address, a
// host:port, a dial error, or an absolute path.
var internalDetail = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|[A-Za-z0-9.-]+:\d{2,5}\b|dial tcp|connection refused|(^|\s)/[a-z]+/`)

// clientSees returns the JSON-RPC error of d as the client gets it.
func clientSees(t *testing.T, d *Denial) string {
	t.Helper()
	b, err := json.Marshal(d.Error())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStoreRefusalsShowNoAddress(t *testing.T) {
	rd := testenv.StartRedis(t, false)
	u, err := url.Parse(rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	f := newRedisStage(t, rd.URL)
	tok := f.token(t, "alice", "transfer_funds", transferArgs)
	wantRule(t, "a call while the server runs", checkOn(t, t.Context(), f.stage, "up", "", tok), "")

	rd.Kill()

	cases := []struct {
		name string
		z    func() ZeroTrust
		tok  func() string
		rule string
	}{
		{"revocation registry", func() ZeroTrust { return f.stage }, func() string { return f.token(t, "alice", "transfer_funds", transferArgs) }, "revocation-store"},
		{"replay store", func() ZeroTrust { z := f.stage; z.Revocations = nil; return z },
			func() string { return f.token(t, "alice", "transfer_funds", transferArgs) }, "store"},
		{"approval queue", func() ZeroTrust { return f.stage }, func() string { return "" }, "approval-cancelled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := checkOn(t, t.Context(), c.z(), "up", "", c.tok())
			if d == nil {
				t.Fatal("allowed with the store down")
			}
			if string(d.Rule) != c.rule && !(c.rule == "store" && d.Rule == "store-timeout") {
				t.Fatalf("rule %s (%s), want %s", d.Rule, d.Reason, c.rule)
			}
			seen := clientSees(t, d)
			if m := internalDetail.FindString(seen); m != "" || strings.Contains(seen, port) {
				t.Errorf("the client's error shows %q (port %s): %s", m, port, seen)
			}
			// The full error is kept for the operator.
			if d.Cause == "" {
				t.Fatal("the store's error is lost: no Cause")
			}
			rec := auditRecord(&Decision{Direction: "client", Denial: d}, "")
			if !strings.Contains(rec.Reason, port) {
				t.Errorf("the audit record does not keep the store's error: %q", rec.Reason)
			}
		})
	}
}

// newRedisStage is a zero-trust stage whose replay store, revocation
// registry and approval queue are on the Redis server at url.
func newRedisStage(t *testing.T, url string) *ztFixture {
	t.Helper()
	st, err := store.OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := newZT(t, st)
	reg, err := revoke.OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	backend, err := approval.OpenRedis(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	f.stage.Revocations = reg
	f.stage.Approvals = approval.NewQueue(approval.Options{Timeout: 10 * time.Second, Backend: backend})
	f.stage.Signer = f.ring
	f.stage.AdminApproval = true
	f.stage.StoreTimeout = 2 * time.Second
	return f
}
