package gateway

// A2A through the gateway: where the listener serves the agents, how their
// messages enter the audit log, and the policy beyond the protocol (consent
// and taint) that internal/a2agw asks the gateway about. The builder
// (internal/assemble) makes the A2A handlers from the configuration.

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/glob"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/taint"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// a2aFlow is the policy of one A2A agent beyond the protocol (a2agw.Flow):
// consent, for the methods its require_approval lists (AASM P5), and
// taint, for a message that carries text copied from another upstream's
// answer (CS). Either holds the request for a person's approval when the
// gateway's approval queue is served, and refuses it otherwise (a taint
// action of deny or flag decides without a person). The agent's own
// answers are tracked in turn.
type a2aFlow struct {
	taint    *Taint          // nil: no taint tracking
	consent  []glob.Pattern  // methods that need approval
	upstream string          // "a2a:<name>"
	queue    *approval.Queue // nil: nothing can be held
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

// NewA2AFlow returns the flow of the A2A agent name, for
// a2agw.Options.Flow: taint (t, may be nil) and consent for the methods
// listed (require_approval). queue, if not nil, holds a request for a
// person's approval; nil refuses it.
func NewA2AFlow(t *Taint, consent []glob.Pattern, name string, queue *approval.Queue, log *slog.Logger) a2agw.Flow {
	return newA2AFlow(t, consent, name, queue, log)
}

// newA2AFlow is NewA2AFlow as its own type.
func newA2AFlow(t *Taint, consent []glob.Pattern, name string, queue *approval.Queue, log *slog.Logger) a2aFlow {
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

// A2APath is where the listener serves the A2A agents: A2APath/<name>, its
// agent card at A2APath/<name>/.well-known/agent-card.json.
const A2APath = "/a2a/"

// A2ARecord returns an a2agw.Options.Record that writes each A2A message
// into the gateway's audit log before it leaves: the same chain as MCP's,
// so a bridge operation is audited in both domains.
func A2ARecord(l *audit.Log) func(context.Context, a2agw.Event) error {
	return func(ctx context.Context, e a2agw.Event) error {
		r := audit.Record{Time: time.Now(), Actor: e.Principal, Upstream: "a2a:" + e.Upstream, Method: e.Method,
			RequestID: e.ID.Raw(), Tool: e.TaskID, Decision: audit.Allow, Direction: e.Direction}
		if e.Decision == "deny" {
			r.Decision, r.Stage, r.Rule, r.Reason = audit.Deny, e.Stage, e.Rule, e.Reason
		} else {
			r.Reason = e.Reason // what warden changed, e.g. a filtered ListTasks's withheld count
		}
		_, err := l.Append(context.WithoutCancel(ctx), r)
		return err
	}
}
