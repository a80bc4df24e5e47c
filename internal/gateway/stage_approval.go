package gateway

// Consent (AASM P5) inside the zero-trust stage: a call that needs a token
// and brings none gets one from warden, for a pre-approved invocation (a
// mandate, binding mode B), or once a person approves the exact arguments
// (the standard's ad-hoc mode: held on the approval queue, asked through
// the admin API or the client's own user by MCP elicitation,
// stage_elicit.go). The token warden issues is then verified like any
// other (INV-1..6, stage_zerotrust.go), so an approval can never stand in
// for more than the call the person saw. The arguments are hashed once for
// all of it (Call.Hashed). After the answer, Answered tells the approval
// queue that the approved call ran.
//
//	no token ─► mandate (tool + parameters_hash)? ─► issue ─┐
//	         └► hold: Submit(canonical arguments, hash) ─► Wait ─► issue ─┴► verify (zero-trust)
//
// Refusals carry stage zero-trust and rules approval-denied,
// approval-timeout, approval-cancelled, approval-unavailable and issue.

import (
	"context"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// MandateKey is the key of a pre-approved invocation in ZeroTrust.Mandates.
func MandateKey(tool, hash string) string { return tool + "\x00" + hash }

// tokenFor finds a token for a call that brought none: warden issues one
// for a pre-approved invocation (a mandate), or holds the call for a
// person's approval; otherwise the call is refused.
func (z ZeroTrust) tokenFor(ctx context.Context, c *Call, sub, session string) (string, *Denial) {
	if z.Signer != nil && len(z.Mandates) > 0 {
		if hash, canonical, err := c.Hashed(); err == nil && z.Mandates[MandateKey(c.Tool, hash)] {
			token, _, err := zerotrust.Issue(z.Signer, zerotrust.IssueRequest{Sub: sub, Upstream: c.Upstream, Tool: c.Tool,
				Session: session, Arguments: canonical, ParametersHash: hash, Aud: z.Audience, Iss: z.Issuer, Persona: z.Persona,
				BindingMode: zerotrust.BindingPreDefined, Classification: c.Level})
			if err != nil {
				return "", &Denial{Rule: deny.RuleIssue, Reason: "the call matches a mandate, but warden could not issue its token", Cause: err.Error()}
			}
			return token, nil
		}
	}
	if z.MayBlock() {
		return z.hold(ctx, c, sub, session)
	}
	return "", &Denial{Rule: deny.RuleTokenMissing,
		Reason: "tool " + quote(c.Tool) + " needs a zero-trust token in params._meta[" + quote(MetaTokenKey) + "]"}
}

// hold submits the call for approval and waits. On approval it returns a
// token warden issued for exactly the arguments the approver saw, on this
// upstream and session.
func (z ZeroTrust) hold(ctx context.Context, c *Call, sub, session string) (string, *Denial) {
	hash, canonical, err := c.Hashed()
	if err != nil {
		return "", &Denial{Rule: deny.RuleINV3, Reason: "INV-3 parameter integrity: the arguments cannot be hashed: " + err.Error()}
	}
	if d := z.approve(ctx, c, sub, hash, canonical); d != nil {
		return "", d
	}
	token, _, err := zerotrust.Issue(z.Signer, zerotrust.IssueRequest{Sub: sub, Upstream: c.Upstream, Tool: c.Tool,
		Session: session, Arguments: canonical, ParametersHash: hash, Aud: z.Audience, Iss: z.Issuer, Persona: z.Persona, Classification: c.Level})
	if err != nil {
		return "", &Denial{Rule: deny.RuleIssue, Reason: "approved, but warden could not issue the token", Cause: err.Error()}
	}
	return token, nil
}

// approve submits the call (its canonical arguments and their hash) for a
// person's decision and waits for it. It sets c.Approver to whoever decided
// (approved or denied); on approval it also sets c.Approval and returns
// nil.
func (z ZeroTrust) approve(ctx context.Context, c *Call, sub, hash string, canonical []byte) *Denial {
	askUser := z.ElicitApproval && c.Elicit != nil
	if !z.AdminApproval && !askUser {
		return &Denial{Rule: deny.RuleApprovalUnavailable,
			Reason: "tool " + quote(c.Tool) + " needs approval, and the client cannot be asked: it did not declare elicitation"}
	}
	c.Held = time.Now()
	p := z.Approvals.Submit(approval.Request{Upstream: c.Upstream, Session: c.Session, Subject: sub,
		Tool: c.Tool, Arguments: canonical, Hash: hash, Description: c.Description(),
		Classification: c.Level, Tier: policy.TierOf(c.Level), ClassRule: c.ClassRule, Findings: findingLines(c.Findings)})
	if askUser {
		actx, cancel := context.WithCancel(ctx)
		defer cancel() // a decision made elsewhere withdraws the question
		go z.askUser(actx, c, p, !z.AdminApproval)
	}
	d := z.Approvals.Wait(ctx, p.ID)
	c.Decided = time.Now()
	c.Approver = d.Approver // the record names whoever decided, a denial too
	switch {
	case d.TimedOut:
		return &Denial{Rule: deny.RuleApprovalTimeout, Reason: "no approval for this call (" + p.ID + "): " + d.Reason, Cause: d.Cause}
	case !d.Approved && d.Approver != "":
		return &Denial{Rule: deny.RuleApprovalDenied, Reason: "denied by " + d.Approver + reasonSuffix(d.Reason) + " (" + p.ID + ")"}
	case !d.Approved:
		return &Denial{Rule: deny.RuleApprovalCancelled, Reason: d.Reason + " (" + p.ID + ")", Cause: d.Cause}
	}
	c.Approval = "approved by " + d.Approver + reasonSuffix(d.Reason) + " (" + p.ID + ")"
	c.ApprovalID = p.ID
	return nil
}

// Answered is the zero-trust stage's response half (AnswerStage): when
// the upstream answered an approved held
// call without error, it tells the approval queue that the call ran, so
// that the console compares later calls with what really ran. A call that
// never got an answer, got a JSON-RPC error, or a result with isError true
// is not marked.
func (z ZeroTrust) Answered(ctx context.Context, a Answer) {
	if z.Approvals == nil || a.Approval == "" {
		return
	}
	if v, ok := jsonrpc.Lookup(a.Result, "isError"); ok && string(v) == "true" {
		return
	}
	_ = z.Approvals.MarkExecuted(context.WithoutCancel(ctx), a.Approval) // the queue logs a store that failed
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}
