package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/taint"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// taintFrom returns the taint stage of gc, or nil when tracking is off or
// nothing could be a sink (no classification, no sink tools, no A2A
// agents): then answers are not even fingerprinted. canHold says whether
// the zero-trust stage holds calls for a person.
func taintFrom(gc config.GatewayConfig, canHold bool) *Taint {
	t := gc.Taint
	if t.Disabled || (len(gc.ZeroTrust.Classification) == 0 && len(t.SinkTools) == 0 && len(gc.A2A) == 0) {
		return nil
	}
	action := secproc.RequireApproval
	switch t.Action {
	case "deny":
		action = secproc.Deny
	case "flag":
		action = secproc.Flag
	}
	return &Taint{Tracker: taint.New(taint.Config{MinMatch: t.MinMatch, TTL: t.TTL}), Action: action,
		Sinks: t.SinkTools, CanHold: canHold}
}

// a2aFlow is the taint stage of one A2A agent (a2agw.Flow): a message that
// carries text copied from another upstream's answer is held for approval
// (when the gateway's approval queue is served), refused, or flagged; the
// agent's own answers are tracked in turn.
type a2aFlow struct {
	taint    *Taint
	upstream string          // "a2a:<name>"
	queue    *approval.Queue // nil: nothing can be held
	log      *slog.Logger
}

// a2aSendMethods carry a message to the agent: the methods that delegate.
var a2aSendMethods = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "message/send": true, "message/stream": true,
}

// Check implements a2agw.Flow.
func (f a2aFlow) Check(ctx context.Context, principal, method string, params []byte) (rule, reason string) {
	if !a2aSendMethods[method] {
		return "", ""
	}
	matches := f.taint.Tracker.Check(principal, params, func(s taint.Source) bool {
		return s.Protocol+":"+s.Upstream != f.upstream // an agent may quote its own answers back
	})
	if len(matches) == 0 {
		return "", ""
	}
	findings := taintFindings(matches, RuleIntoDelegation, "the message to A2A agent "+quote(strings.TrimPrefix(f.upstream, "a2a:")), "params", f.taint.Action)
	msg := findings[0].Message
	switch {
	case f.taint.Action == secproc.Flag:
		f.log.Warn("untrusted text into an A2A message", "upstream", f.upstream, "principal", principal, "finding", msg)
		return "", ""
	case f.taint.Action == secproc.Deny:
		return RuleIntoDelegation, msg
	case f.queue == nil:
		return RuleIntoDelegation, msg + "; it needs a person's approval, and this gateway holds no calls (zero_trust.hold_for_approval with the admin channel)"
	}
	hash, canonical, err := zerotrust.ParamsHash(params)
	if err != nil {
		return RuleIntoDelegation, msg + "; it cannot be held for approval: " + err.Error()
	}
	p := f.queue.Submit(approval.Request{Upstream: f.upstream, Subject: principal, Tool: method,
		Arguments: canonical, Hash: hash, Description: "A2A " + method + " to " + f.upstream,
		Findings: findingLines(findings)})
	d := f.queue.Wait(ctx, p.ID)
	switch {
	case d.Approved:
		f.log.Info("untrusted text into an A2A message approved", "upstream", f.upstream, "approver", d.Approver, "approval", p.ID)
		return "", ""
	case d.TimedOut:
		return "approval-timeout", "no approval for this message (" + p.ID + "): " + d.Reason
	case d.Approver != "":
		return "approval-denied", "denied by " + d.Approver + reasonSuffix(d.Reason) + " (" + p.ID + ")"
	}
	return "approval-cancelled", fmt.Sprintf("%s (%s)", d.Reason, p.ID)
}

// A2AFlow returns the taint stage of the A2A agent name, for
// a2agw.Options.Flow. queue, if not nil, holds a tainted message for a
// person's approval (with RequireApproval); nil refuses it.
func (t *Taint) A2AFlow(name string, queue *approval.Queue, log *slog.Logger) a2agw.Flow {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return a2aFlow{taint: t, upstream: "a2a:" + name, queue: queue, log: log}
}

// Observe implements a2agw.Flow.
func (f a2aFlow) Observe(_ context.Context, principal, method string, params, result []byte) {
	name := f.upstream[len("a2a:"):]
	f.taint.Tracker.Observe(principal, taint.Source{Protocol: "a2a", Upstream: name, Op: method}, result, params)
}

var _ a2agw.Flow = a2aFlow{}
