package gateway

import (
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// newElicitFixture: transfer_funds needs a token; a call without one is held
// and, when the client declared elicitation, its user is asked. admin says
// whether an operator may decide too.
func newElicitFixture(t *testing.T, admin bool) (*approval.Queue, *harness) {
	f := newZT(t, nil)
	q := approval.New(time.Minute)
	f.stage.Approvals, f.stage.Signer = q, f.ring
	f.stage.AdminApproval, f.stage.ElicitApproval = admin, true
	return q, newHarness(t, RelayOptions{Pipeline: NewPipeline(f.stage)})
}

// initialize runs the handshake with the given client capabilities.
func (h *harness) initialize(caps string) {
	h.t.Helper()
	h.send(h.client, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	h.recv(h.client)
}

// elicitation reads warden's elicitation/create from the client side and
// checks that it shows the exact call.
func (h *harness) elicitation() *jsonrpc.Message {
	h.t.Helper()
	m := h.recv(h.client)
	if m.Kind != jsonrpc.KindRequest || m.Method != "elicitation/create" || !strings.HasPrefix(m.ID.Raw(), `"`+ownIDPrefix) {
		h.t.Fatalf("client got %s, want warden's elicitation/create", m.Raw)
	}
	msg, _ := jsonrpc.Lookup(m.Params, "message")
	text, _ := jsonrpc.String(msg)
	for _, want := range []string{"transfer_funds", `"amount": 1000`, `"recipient": "vendor@example.com"`,
		"bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c"} {
		if !strings.Contains(text, want) {
			h.t.Errorf("the user is not shown %s; message:\n%s", want, text)
		}
	}
	if _, ok := jsonrpc.Lookup(m.Params, "requestedSchema", "properties", "approve"); !ok {
		h.t.Errorf("the form has no approve field: %s", m.Params)
	}
	return m
}

func answer(m *jsonrpc.Message, result string) string {
	return `{"jsonrpc":"2.0","id":` + m.ID.Raw() + `,"result":` + result + `}`
}

func TestUserApprovesThroughElicitation(t *testing.T) {
	q, h := newElicitFixture(t, false)
	h.initialize(`{"elicitation":{}}`)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	ask := h.elicitation()
	if p := waitPending(t, q); p.Subject != "alice" {
		t.Fatalf("pending: %+v", p)
	}
	h.send(h.client, answer(ask, `{"action":"accept","content":{"approve":true,"reason":"mine"}}`))
	got := h.recv(h.upstream)
	if got.ID.Raw() != "1" || got.Method != "tools/call" ||
		!strings.Contains(string(got.Raw), `"arguments":{"account_id":"ACC_123","amount":1000,"recipient":"vendor@example.com"}`) {
		t.Fatalf("upstream got %s, want the approved call (and never the elicitation answer)", got.Raw)
	}
	if len(q.List()) != 0 {
		t.Error("the approved call is still pending")
	}
}

func TestUserDeclinesThroughElicitation(t *testing.T) {
	for _, result := range []string{
		`{"action":"decline"}`,
		`{"action":"accept","content":{"approve":false,"reason":"wrong recipient"}}`,
		// Only the exact member is the form's field: encoding/json would
		// have read either spelling as approve.
		`{"action":"accept","content":{"Approve":true}}`,
		`{"action":"accept","content":{"APPROVE":true,"reason":"folded"}}`,
	} {
		t.Run(result, func(t *testing.T) {
			_, h := newElicitFixture(t, false)
			h.initialize(`{"elicitation":{"form":{}}}`)
			h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
			h.send(h.client, answer(h.elicitation(), result))
			code, d := detailOf(t, h.recv(h.client))
			if d.Rule != "approval-denied" || code == 0 {
				t.Fatalf("declined: %d %+v", code, d)
			}
			h.nothing(h.upstream, "a declined call or the elicitation answer")
		})
	}
}

// A client that cannot be asked, with no operator channel, is refused at
// once rather than held until the timeout.
func TestNoApprovalChannel(t *testing.T) {
	for _, caps := range []string{`{}`, `{"elicitation":{"url":{}}}`, `{"elicitation":true}`} {
		t.Run(caps, func(t *testing.T) {
			_, h := newElicitFixture(t, false)
			h.initialize(caps)
			h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
			if _, d := detailOf(t, h.recv(h.client)); d.Rule != "approval-unavailable" {
				t.Fatalf("got %+v, want approval-unavailable", d)
			}
		})
	}
}

// With both channels, an operator's decision withdraws the question the
// client's user was asked; the user's late answer changes nothing.
func TestOperatorDecidesBeforeTheUser(t *testing.T) {
	q, h := newElicitFixture(t, true)
	h.initialize(`{"elicitation":{}}`)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	ask := h.elicitation()
	if err := q.Decide(waitPending(t, q).ID, false, "bob@example.com", "not today"); err != nil {
		t.Fatal(err)
	}
	// The client gets the refusal and the cancellation of the question, in
	// either order.
	var refused, withdrawn bool
	for range 2 {
		m := h.recv(h.client)
		switch {
		case m.Kind == jsonrpc.KindResponse && m.ID.Raw() == "1":
			_, d := detailOf(t, m)
			refused = d.Rule == "approval-denied"
		case m.Method == "notifications/cancelled" && strings.Contains(string(m.Params), ask.ID.Raw()):
			withdrawn = true
		}
	}
	if !refused || !withdrawn {
		t.Fatalf("refused %v, question withdrawn %v", refused, withdrawn)
	}
	h.send(h.client, answer(ask, `{"action":"accept","content":{"approve":true}}`))
	h.nothing(h.upstream, "the call after the operator denied it")
}
