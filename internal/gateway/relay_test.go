package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// harness runs a Relay between two in-memory pipes: the test plays the
// client on one end and the upstream on the other.
type harness struct {
	t        *testing.T
	client   transport.Conn // the test's client end
	upstream transport.Conn // the test's upstream end
	stopped  chan struct{}  // closed when Run returns
	err      error          // what Run returned; read after stopped
	cancel   context.CancelFunc
}

// newHarness relays a session that is ready at once (as a stateless one
// is), so that tests of later stages need no handshake; newStatefulHarness
// holds it to the lifecycle.
func newHarness(t *testing.T, opts RelayOptions) *harness {
	t.Helper()
	opts.Stateless = true
	return startHarness(t, opts)
}

func newStatefulHarness(t *testing.T, opts RelayOptions) *harness {
	t.Helper()
	opts.Stateless = false
	return startHarness(t, opts)
}

func startHarness(t *testing.T, opts RelayOptions) *harness {
	t.Helper()
	clientTest, clientRelay := transport.Pipe()
	upRelay, upTest := transport.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	if opts.Upstream == "" {
		opts.Upstream = "up"
	}
	r := NewRelay(clientRelay, upRelay, opts)
	h := &harness{t: t, client: clientTest, upstream: upTest, stopped: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(h.stopped)
		h.err = r.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		clientTest.Close()
		upTest.Close()
		select {
		case <-h.stopped:
		case <-time.After(5 * time.Second):
			t.Error("relay did not stop")
		}
	})
	return h
}

func (h *harness) send(c transport.Conn, raw string) {
	h.t.Helper()
	msg, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		h.t.Fatalf("test message %s: %v", raw, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, msg); err != nil {
		h.t.Fatalf("write: %v", err)
	}
}

func (h *harness) recv(c transport.Conn) *jsonrpc.Message {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := c.Read(ctx)
	if err != nil {
		h.t.Fatalf("read: %v", err)
	}
	return msg
}

// nothing asserts that c receives no message for a short while.
func (h *harness) nothing(c transport.Conn, what string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if msg, err := c.Read(ctx); err == nil {
		h.t.Fatalf("%s: got %s, want nothing", what, msg.Raw)
	}
}

func detailOf(t *testing.T, msg *jsonrpc.Message) (int64, jsonrpc.Detail) {
	t.Helper()
	if msg.Error == nil {
		t.Fatalf("want an error response, got %s", msg.Raw)
	}
	var d jsonrpc.Detail
	if err := json.Unmarshal(msg.Error.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", msg.Error.Data, err)
	}
	return msg.Error.Code, d
}

func mustList(t *testing.T, allow, deny []string) config.List {
	t.Helper()
	var l config.List
	for _, s := range allow {
		p, err := config.CompilePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		l.Allow = append(l.Allow, p)
	}
	for _, s := range deny {
		p, err := config.CompilePattern(s)
		if err != nil {
			t.Fatal(err)
		}
		l.Deny = append(l.Deny, p)
	}
	return l
}

func TestRelayForwardsExactBytes(t *testing.T) {
	h := newHarness(t, RelayOptions{})
	// Unusual but valid spacing, escapes and key order must survive the relay.
	req := `{ "id" : "a\u0062c", "jsonrpc":"2.0" ,"method":"tools/call","params":{"z":1,"name":"echo","arguments":{"s":"\u00e9\ud83d\ude00"}}}`
	h.send(h.client, req)
	if got := h.recv(h.upstream); string(got.Raw) != req {
		t.Fatalf("upstream got\n%s\nwant\n%s", got.Raw, req)
	}
	resp := `{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"x"}]}}`
	h.send(h.upstream, resp)
	if got := h.recv(h.client); string(got.Raw) != resp {
		t.Fatalf("client got %s, want %s", got.Raw, resp)
	}
}

func TestRelayToolPolicyRefusesBeforeUpstream(t *testing.T) {
	tools := mustList(t, nil, []string{"get_*"})
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(MethodPolicy{}, ToolPolicy{List: tools})})

	// The escaped spelling of get_env is the same tool and must be refused too.
	for _, name := range []string{`get_env`, `get\u005fenv`} {
		h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`"}}`)
		code, d := detailOf(t, h.recv(h.client))
		if code != jsonrpc.CodeDenied || d.Stage != "tool-policy" || d.Rule != `deny "get_*"` {
			t.Errorf("%s: got code %d detail %+v", name, code, d)
		}
	}
	h.nothing(h.upstream, "refused calls")

	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}`)
	if got := h.recv(h.upstream); got.ID.Raw() != "2" {
		t.Fatalf("allowed call: upstream got %s", got.Raw)
	}
}

func TestRelayMethodPolicyAndMalformedToolCall(t *testing.T) {
	methods := mustList(t, nil, []string{"resources/*"})
	h := newHarness(t, RelayOptions{Pipeline: NewPipeline(MethodPolicy{Lists: []Permitter{methods}})})

	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}`)
	if _, d := detailOf(t, h.recv(h.client)); d.Stage != "method-policy" {
		t.Errorf("resources/read: stage %q, want method-policy", d.Stage)
	}
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":7}}`)
	if code, d := detailOf(t, h.recv(h.client)); code != jsonrpc.CodeInvalidParams || d.Rule != "tool-name" {
		t.Errorf("numeric tool name: code %d detail %+v", code, d)
	}
	// A denied notification is dropped; nothing reaches the upstream.
	h.send(h.client, `{"jsonrpc":"2.0","method":"resources/custom_note"}`)
	h.nothing(h.upstream, "denied calls and notifications")
}

func TestRelayDropsUnsolicitedResponses(t *testing.T) {
	h := newHarness(t, RelayOptions{})
	h.send(h.upstream, `{"jsonrpc":"2.0","id":99,"result":{}}`)
	h.nothing(h.client, "a response to a request the client never sent")

	// A client answer to a question the upstream never asked is dropped too.
	h.send(h.client, `{"jsonrpc":"2.0","id":5,"result":{"role":"assistant"}}`)
	h.nothing(h.upstream, "an answer to an unasked question")

	// A real server-to-client request and its answer pass.
	h.send(h.upstream, `{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}`)
	h.recv(h.client)
	h.send(h.client, `{"jsonrpc":"2.0","id":5,"result":{"role":"assistant"}}`)
	if got := h.recv(h.upstream); got.Kind != jsonrpc.KindResponse {
		t.Fatalf("upstream got %s", got.Raw)
	}
}

func TestRelayRefusesDuplicatePendingID(t *testing.T) {
	h := newHarness(t, RelayOptions{})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.recv(h.upstream)
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "duplicate-id" {
		t.Fatalf("rule %q, want duplicate-id", d.Rule)
	}
	h.nothing(h.upstream, "the duplicate")
}

func TestRelayAnswersPendingWhenUpstreamDies(t *testing.T) {
	h := newHarness(t, RelayOptions{})
	h.send(h.client, `{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"x"}}`)
	h.recv(h.upstream)
	h.upstream.Close()
	code, d := detailOf(t, h.recv(h.client))
	if code != jsonrpc.CodeUpstreamUnavailable || d.Stage != "upstream" {
		t.Fatalf("code %d detail %+v", code, d)
	}
	select {
	case <-h.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("relay kept running after its upstream died")
	}
	if h.err == nil {
		t.Error("Run returned nil after the upstream died; want the upstream's end reported")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := h.client.Read(ctx); !errors.Is(err, io.EOF) && !errors.Is(err, transport.ErrClosed) {
		t.Fatalf("client conn after upstream death: %v, want EOF or closed", err)
	}
}

func TestRelayTimesOutAndCancelsUpstream(t *testing.T) {
	h := newHarness(t, RelayOptions{RequestTimeout: 100 * time.Millisecond})
	h.send(h.client, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`)
	h.recv(h.upstream)
	code, _ := detailOf(t, h.recv(h.client))
	if code != jsonrpc.CodeTimeout {
		t.Fatalf("code %d, want %d", code, jsonrpc.CodeTimeout)
	}
	cancel := h.recv(h.upstream)
	if cancel.Method != "notifications/cancelled" {
		t.Fatalf("upstream got %s, want a cancellation", cancel.Raw)
	}
	if id, _ := jsonrpc.Lookup(cancel.Params, "requestId"); string(id) != "3" {
		t.Fatalf("cancellation names request %s, want 3", id)
	}
	// The late answer is dropped: the client already has its error.
	h.send(h.upstream, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	h.nothing(h.client, "a late answer")
}

func TestRelayObservesDecisions(t *testing.T) {
	var got []Decision
	seen := make(chan struct{}, 10)
	tools := mustList(t, nil, []string{"get_env"})
	h := newHarness(t, RelayOptions{
		Pipeline: NewPipeline(ToolPolicy{List: tools}),
		Observe:  func(d Decision) { got = append(got, d); seen <- struct{}{} },
	})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_env"}}`)
	h.recv(h.client)
	<-seen
	if len(got) != 1 || got[0].Tool != "get_env" || got[0].Denial == nil || got[0].Denial.Stage != "tool-policy" {
		t.Fatalf("decisions %+v", got)
	}
}

// AASM SL: on a stateful session nothing but initialize and ping reaches
// the upstream before it has answered initialize.
func TestRelayHoldsRequestsToTheLifecycle(t *testing.T) {
	h := newStatefulHarness(t, RelayOptions{})
	h.send(h.client, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-env"}}`)
	code, d := detailOf(t, h.recv(h.client))
	if d.Stage != "session" || d.Rule != "not-initialized" || code != jsonrpc.CodeInvalidRequest {
		t.Fatalf("a call before initialize: %d %+v", code, d)
	}
	h.send(h.client, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if got := h.recv(h.upstream); got.Method != "ping" {
		t.Fatalf("ping before initialize: upstream got %s", got.Raw)
	}
	h.send(h.upstream, `{"jsonrpc":"2.0","id":2,"result":{}}`)
	h.recv(h.client)
	// A failed initialize does not open the session.
	h.send(h.client, `{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}`)
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`)
	h.recv(h.client)
	h.send(h.client, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "not-initialized" {
		t.Fatalf("after a failed initialize: %+v", d)
	}
	h.initialize(`{}`)
	h.send(h.client, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if got := h.recv(h.upstream); got.ID.Raw() != "5" {
		t.Fatalf("after initialize: upstream got %s", got.Raw)
	}
	// A stateless-style request (revision in _meta) is not held to it.
	h2 := newStatefulHarness(t, RelayOptions{})
	h2.send(h2.client, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	if got := h2.recv(h2.upstream); got.ID.Raw() != "1" {
		t.Fatalf("a stateless request: upstream got %s", got.Raw)
	}
}
