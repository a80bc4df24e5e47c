package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/deny"
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

// a2aFlow is the policy of one A2A agent beyond the protocol (a2agw.Flow):
// consent, for the methods its require_approval lists (AASM P5), and
// taint, for a message that carries text copied from another upstream's
// answer (CS). Either holds the request for a person's approval when the
// gateway's approval queue is served, and refuses it otherwise (a taint
// action of deny or flag decides without a person). The agent's own
// answers are tracked in turn.
type a2aFlow struct {
	taint    *Taint           // nil: no taint tracking
	consent  []config.Pattern // methods that need approval
	upstream string           // "a2a:<name>"
	queue    *approval.Queue  // nil: nothing can be held
	log      *slog.Logger
}

// a2aSendMethods carry a message to the agent: the methods that delegate.
var a2aSendMethods = map[string]bool{
	"SendMessage": true, "SendStreamingMessage": true, "message/send": true, "message/stream": true,
}

// Check implements a2agw.Flow.
func (f a2aFlow) Check(ctx context.Context, principal, method string, params []byte) *Denial {
	name := strings.TrimPrefix(f.upstream, "a2a:")
	var why []string // what the person deciding is told
	stage, rule := "", deny.Rule("")
	for _, p := range f.consent {
		if p.Match(method) {
			stage, rule = a2agw.StageConsent, deny.Rule("require-approval "+strconv.Quote(p.String()))
			why = append(why, "consent: "+method+" to agent "+quote(name)+" needs a person's approval (require_approval "+quote(p.String())+")")
			break
		}
	}
	if f.taint != nil && a2aSendMethods[method] {
		matches := f.taint.Tracker.Check(principal, params, func(s taint.Source) bool {
			return s.Protocol+":"+s.Upstream != f.upstream // an agent may quote its own answers back
		})
		if len(matches) > 0 {
			findings := taintFindings(matches, RuleIntoDelegation, "the message to A2A agent "+quote(name), "params", f.taint.Action)
			msg := findings[0].Message
			switch f.taint.Action {
			case secproc.Deny:
				return &Denial{Stage: a2agw.StageTaint, Rule: RuleIntoDelegation, Reason: msg}
			case secproc.Flag:
				f.log.Warn("untrusted text into an A2A message", "upstream", f.upstream, "principal", principal, "finding", msg)
			default:
				if stage == "" {
					stage, rule = a2agw.StageTaint, RuleIntoDelegation
				}
				why = append(why, findingLines(findings)...)
			}
		}
	}
	if stage == "" {
		return nil
	}
	if f.queue == nil {
		return &Denial{Stage: stage, Rule: rule, Reason: why[0] +
			"; it needs a person's approval, and this gateway holds no calls (zero_trust.hold_for_approval with the admin channel)"}
	}
	hash, canonical, err := zerotrust.ParamsHash(params)
	if err != nil {
		return &Denial{Stage: stage, Rule: rule, Reason: why[0] + "; it cannot be held for approval: " + err.Error()}
	}
	p := f.queue.Submit(approval.Request{Upstream: f.upstream, Subject: principal, Tool: method,
		Arguments: canonical, Hash: hash, Description: "A2A " + method + " to agent " + quote(name), Findings: why})
	d := f.queue.Wait(ctx, p.ID)
	switch {
	case d.Approved:
		f.log.Info("A2A request approved", "upstream", f.upstream, "method", method, "approver", d.Approver, "approval", p.ID)
		return nil
	case d.TimedOut:
		return &Denial{Stage: stage, Rule: deny.RuleApprovalTimeout, Reason: "no approval for this request (" + p.ID + "): " + d.Reason}
	case d.Approver != "":
		return &Denial{Stage: stage, Rule: deny.RuleApprovalDenied, Reason: "denied by " + d.Approver + reasonSuffix(d.Reason) + " (" + p.ID + ")"}
	}
	return &Denial{Stage: stage, Rule: deny.RuleApprovalCancelled, Reason: fmt.Sprintf("%s (%s)", d.Reason, p.ID)}
}

// A2AFlow returns the taint stage of the A2A agent name, for
// a2agw.Options.Flow. queue, if not nil, holds a tainted message for a
// person's approval (with RequireApproval); nil refuses it.
func (t *Taint) A2AFlow(name string, queue *approval.Queue, log *slog.Logger) a2agw.Flow {
	return newA2AFlow(t, nil, name, queue, log)
}

// newA2AFlow returns the flow of the A2A agent name: taint (t, may be nil)
// and consent for the methods listed.
func newA2AFlow(t *Taint, consent []config.Pattern, name string, queue *approval.Queue, log *slog.Logger) a2aFlow {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return a2aFlow{taint: t, consent: consent, upstream: "a2a:" + name, queue: queue, log: log}
}

// Observe implements a2agw.Flow.
func (f a2aFlow) Observe(_ context.Context, principal, method string, params, result []byte) {
	if f.taint == nil {
		return
	}
	name := f.upstream[len("a2a:"):]
	f.taint.Tracker.Observe(principal, taint.Source{Protocol: "a2a", Upstream: name, Op: method}, result, params)
}

var _ a2agw.Flow = a2aFlow{}
