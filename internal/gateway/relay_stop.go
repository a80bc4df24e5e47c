package gateway

// A relay's part in the gateway's graceful stop (Gateway.Drain): once the
// gateway drains, every new request is refused with -32035, rule shutdown;
// inFlight tells the gateway how many requests still wait for an answer;
// when the drain time is over, stop answers each of them with the same
// error, which the client receives on its open stream like any answer, and
// which the audit log records like any answer warden gives in the
// upstream's place.

import (
	"context"
	"errors"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// RuleShutdown is the rule of the answers a stopping gateway gives: to a
// request that arrives while it drains, and to one still in flight when
// the drain time is over.
const RuleShutdown = "shutdown"

// errStopping is the cause with which stop cancels a held call.
var errStopping = errors.New("warden is shutting down")

// shutdownDenial is the refusal of a request by a stopping gateway; what
// says what becomes of the request.
func shutdownDenial(what string) *Denial {
	return &Denial{Stage: "gateway", Rule: RuleShutdown, Code: jsonrpc.CodeSessionClosed,
		Reason: "warden is shutting down: " + what + "; send it again (to another instance)"}
}

// inFlight counts the session's client requests that have no answer yet:
// being relayed, held for a person, or waiting for the upstream.
func (r *Relay) inFlight() int {
	r.mu.Lock()
	n := len(r.pending) + len(r.holding)
	r.mu.Unlock()
	return n + int(r.busy.Load())
}

// stop answers every request still in flight with -32035, rule shutdown:
// those the upstream has not answered (the upstream is told to stop
// working on them) and those held for a person (relayClientCall answers
// them). The upstream's answers that come later are dropped. r.cut counts
// the answers.
func (r *Relay) stop() {
	r.mu.Lock()
	pending := make([]pendingCall, 0, len(r.pending))
	for _, p := range r.pending {
		pending = append(pending, p)
	}
	clear(r.pending)
	r.stopExpiry()
	held := make([]context.CancelCauseFunc, 0, len(r.holding))
	for _, cancel := range r.holding {
		held = append(held, cancel)
	}
	r.mu.Unlock()
	for _, cancel := range held {
		cancel(errStopping) // relayClientCall answers it (relayHeld)
	}
	ctx := context.Background()
	r.cut.Add(int64(len(pending)))
	for _, p := range pending {
		d := shutdownDenial("the upstream did not answer within the drain time")
		r.answerInstead(ctx, p, d.Code, d.Stage, d.Rule, d.Reason)
	}
	// Then the upstream may stop working on them; a slow reader does not
	// hold up the stop.
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for _, p := range pending {
		msg := jsonrpc.NewNotification(mcp.NotificationCancelled,
			[]byte(`{"requestId":`+p.id.Raw()+`,"reason":"warden: shutting down"}`))
		if err := r.upstream.Write(cctx, msg); err != nil {
			r.log.Debug("could not send cancellation", "err", err)
		}
	}
}
