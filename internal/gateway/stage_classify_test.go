package gateway

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/policy"
)

// newTierFixture: no require_* lists; only classification decides what a
// call needs. transfer_funds above 10000 is level 1 (Tier 3), other
// transfers level 3 (Tier 2), tools the upstream annotates destructive
// level 4 (Tier 1), anything else unclassified.
func newTierFixture(t *testing.T, held bool) (*ztFixture, *harness, *approval.Queue) {
	t.Helper()
	c, err := policy.NewClassifier([]policy.Rule{
		{Name: "big-transfer", Level: 1, When: `tool.name == "transfer_funds" && args.amount > 10000`},
		{Name: "transfer", Level: 3, When: `tool.name == "transfer_funds"`},
		{Name: "destructive", Level: 4, When: `has(tool.annotations.destructiveHint) && tool.annotations.destructiveHint`},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := newZT(t, nil)
	f.stage.Requires = permitNone{}
	f.stage.URLs = func(*Call) []*url.URL { u, _ := url.Parse(gatewayURL); return []*url.URL{u} }
	var q *approval.Queue
	if held {
		q = approval.New(time.Minute)
		f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	}
	idx := newToolIndex()
	idx.learn("tools/list", []byte(`{"tools":[{"name":"wipe","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}},`+
		`{"name":"echo","inputSchema":{"type":"object"}}]}`))
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(Classify{Classifier: c, Subject: f.stage.Subject}, f.stage),
		Tools: idx.info()})
	return f, h, q
}

func TestTierFollowsClassification(t *testing.T) {
	f, h, _ := newTierFixture(t, false)
	// Unclassified: relayed without a token.
	h.send(h.client, call("1", "echo", `{"message":"hi"}`, ""))
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("unclassified call: upstream got %s", got.Raw)
	}
	// Tier 1 through the upstream's own annotation: a token is enough.
	h.send(h.client, call("2", "wipe", `{}`, ""))
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "token-missing" {
		t.Fatalf("Tier 1 without a token: %+v", d)
	}
	h.send(h.client, call("3", "wipe", `{}`, f.token(t, "alice", "wipe", `{}`)))
	if got := h.recv(h.upstream); got.ID.Raw() != "3" {
		t.Fatalf("Tier 1 with a token: upstream got %s", got.Raw)
	}
	// Tier 2: the same kind of token is not enough without DPoP.
	args := `{"account_id":"ACC_123","amount":500,"recipient":"vendor@example.com"}`
	h.send(h.client, call("4", "transfer_funds", args, f.token(t, "alice", "transfer_funds", args)))
	m := h.recv(h.client)
	if _, d := detailOf(t, m); d.Rule != "INV-5" || !strings.Contains(m.Error.Message, `Tier 2 (classification 3 by rule "transfer")`) {
		t.Fatalf("Tier 2 without DPoP: %s", m.Raw)
	}
	// Tier 2 with a bound token and its proof runs.
	dc := newDPoPClient(t)
	tok := f.boundTokenFor(t, args, dc.jkt)
	h.sendWithProofArgs("5", args, tok, dc.proof(t, gatewayURL, tok))
	if got := h.recv(h.upstream); got.ID.Raw() != "5" {
		t.Fatalf("Tier 2 with DPoP: upstream got %s", got.Raw)
	}
	// Tier 3: DPoP is not enough without the client's signature.
	big := `{"account_id":"ACC_123","amount":20000,"recipient":"vendor@example.com"}`
	tok = f.boundTokenFor(t, big, dc.jkt)
	h.sendWithProofArgs("6", big, tok, dc.proof(t, gatewayURL, tok))
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "INV-6" {
		t.Fatalf("Tier 3 without a client signature: %+v", d)
	}
	h.nothing(h.upstream, "a refused call")
}

// A rule that cannot be evaluated refuses the call, in the classify stage.
func TestUnclassifiableCallIsRefused(t *testing.T) {
	_, h, _ := newTierFixture(t, false)
	h.send(h.client, call("1", "transfer_funds", `{"amount":"a lot"}`, ""))
	code, d := detailOf(t, h.recv(h.client))
	if d.Stage != "classify" || d.Rule != "unclassifiable" || code == 0 {
		t.Fatalf("got %d %+v", code, d)
	}
	h.nothing(h.upstream, "an unclassifiable call")
}

// A held Tier 2 call runs once approved: the token warden issues never
// leaves the gateway, so there is nothing for DPoP to bind. A Tier 3 call
// is not held at all: no approval replaces the client's signature.
func TestHeldCallsAndTiers(t *testing.T) {
	_, h, q := newTierFixture(t, true)
	args := `{"account_id":"ACC_123","amount":500,"recipient":"vendor@example.com"}`
	h.send(h.client, call("1", "transfer_funds", args, ""))
	p := waitPending(t, q)
	q.Decide(p.ID, true, "bob", "")
	if got := h.recv(h.upstream); got.ID.Raw() != "1" {
		t.Fatalf("approved Tier 2 call: upstream got %s", got.Raw)
	}
	h.send(h.client, call("2", "transfer_funds", `{"account_id":"ACC_123","amount":20000,"recipient":"vendor@example.com"}`, ""))
	m := h.recv(h.client)
	if _, d := detailOf(t, m); d.Rule != "token-missing" || !strings.Contains(m.Error.Message, "Tier 3") {
		t.Fatalf("Tier 3 without a token: %s", m.Raw)
	}
	if len(q.List()) != 0 {
		t.Error("a Tier 3 call was held for an approval that could not let it run")
	}
}
