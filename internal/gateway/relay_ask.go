package gateway

// warden's own requests to the client. The relay forwards what the two peers
// say to each other, but for one thing warden speaks itself: asking the
// client's user, through MCP elicitation, to approve a held call.
//
//	held tools/call (id 7) ─► Call.Elicit ─► ask: elicitation/create, id "warden-…",
//	                                          Related 7 (HTTP: on the stream of call 7)
//	client's answer to "warden-…" ─► relayClientResponse ─► own[id] ─► ask returns
//
// The answer never reaches the upstream, which did not ask the question.

import (
	"context"
	"crypto/rand"
	"errors"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// ownIDPrefix starts the ids of warden's own requests. The random rest keeps
// them apart from the upstream's ids, which share the client's id space.
const ownIDPrefix = "warden-"

// errNoAnswer is returned by ask when the session ends before the client
// answers.
var errNoAnswer = errors.New("the session ended before the client answered")

// noteCapabilities records what the client declared in initialize. Form
// elicitation is declared by "elicitation": {} (before 2025-11-25, the only
// mode) or by an elicitation object with a "form" member.
func (r *Relay) noteCapabilities(msg *jsonrpc.Message) {
	raw, ok := jsonrpc.Lookup(msg.Params, "capabilities", "elicitation")
	if !ok {
		return
	}
	members, form := 0, false
	if !jsonrpc.Members(raw, func(name string, _ []byte) {
		members++
		form = form || name == "form"
	}) {
		return // not an object
	}
	r.mu.Lock()
	r.elicit = members == 0 || form
	r.mu.Unlock()
}

// canElicit reports whether warden may send the client elicitation requests.
func (r *Relay) canElicit() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.elicit && !r.closed
}

// ask sends the client a request of warden's own, on the stream of the
// client request related (HTTP), and waits for the answer. If ctx ends first
// the client is told the request is cancelled.
func (r *Relay) ask(ctx context.Context, related jsonrpc.ID, method string, params []byte) (*jsonrpc.Message, error) {
	id := jsonrpc.StringID(ownIDPrefix + rand.Text()[:16])
	reply := make(chan *jsonrpc.Message, 1)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errNoAnswer
	}
	r.own[id.Raw()] = reply
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.own, id.Raw())
		r.mu.Unlock()
	}()

	req := jsonrpc.NewRequest(id, method, params)
	req.Related = related
	d := Decision{Upstream: r.upstreamName, Session: r.session, Kind: jsonrpc.KindRequest, Method: method,
		ID: id, Direction: "warden", Msg: req}
	if !r.keep(ctx, &d) {
		return nil, errors.New("the audit record of the question could not be written")
	}
	if err := r.client.Write(ctx, req); err != nil {
		return nil, err
	}
	select {
	case m := <-reply:
		if m.Error != nil {
			return m, m.Error
		}
		return m, nil
	case <-ctx.Done():
		cancel := jsonrpc.NewNotification(mcp.NotificationCancelled,
			[]byte(`{"requestId":`+id.Raw()+`,"reason":"warden: no longer needed"}`))
		cancel.Related = related
		r.writeClient(context.WithoutCancel(ctx), cancel)
		return nil, ctx.Err()
	}
}

// lifecycle enforces the session lifecycle (AASM SL): on a stateful session,
// nothing but initialize and ping is relayed before the upstream has
// answered initialize. A request that carries its revision in
// _meta (the stateless 2026-07-28 style) is not held to it.
func (r *Relay) lifecycle(msg *jsonrpc.Message) *Denial {
	if msg.Kind != jsonrpc.KindRequest || msg.Method == mcp.MethodInitialize || msg.Method == mcp.MethodPing {
		return nil
	}
	r.mu.Lock()
	ready := r.ready
	r.mu.Unlock()
	if ready {
		return nil
	}
	if _, ok := jsonrpc.Lookup(msg.Params, "_meta", mcp.MetaProtocolVersion); ok {
		return nil
	}
	return &Denial{Stage: "session", Rule: deny.RuleNotInitialized, Code: jsonrpc.CodeInvalidRequest,
		Reason: msg.Method + " before the session is initialized: send initialize first"}
}
