package gateway

// The consent stage (AASM P5): a call that needs a token and brings none
// gets one from warden, for a pre-approved invocation (a mandate, binding
// mode B), or once a person approves the exact arguments (the standard's
// ad-hoc mode: held on the approval queue, asked through the admin API or
// the client's own user by MCP elicitation, stage_elicit.go). The next
// stage, zero-trust, then verifies the token warden issued like any other
// (INV-1..6, stage_zerotrust.go), so an approval can never stand in for
// more than the call the person saw. The arguments are hashed once for all
// of it (Call.Hashed). Its response half, Answered, tells the approval
// queue that the approved call ran.
//
//	no token ─► mandate (tool + parameters_hash)? ─► issue ─┐
//	         └► hold: Submit(canonical arguments, hash) ─► Wait ─► issue ─┴► Call.issued ─► zero-trust
//
// A call it cannot help (a token is presented, there is no principal, Tier
// 3 needs the client's own signature, neither a mandate nor an approval
// channel) passes on, and the zero-trust stage refuses it. Its own
// refusals carry stage zero-trust, like the token's, and rules
// approval-denied, approval-timeout, approval-cancelled,
// approval-unavailable and issue (docs/errors.md).

import (
	"context"
	"time"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// MandateKey is the key of a pre-approved invocation in ZeroTrust.Mandates.
func MandateKey(tool, hash string) string { return tool + "\x00" + hash }

// Consent is the "consent" stage. It shares the zero-trust stage's
// configuration: NewPipeline makes it from a ZeroTrust that can issue
// tokens (ZeroTrust.entries).
type Consent struct{ zt ZeroTrust }

// Name implements Stage.
func (Consent) Name() string { return "consent" }

// MayBlock reports whether Check can wait for a person.
func (s Consent) MayBlock() bool { return s.zt.MayBlock() }

// Check implements Stage: a call that needs a token and brings none gets
// one, which it leaves in c.issued for the zero-trust stage.
func (s Consent) Check(ctx context.Context, c *Call) *Denial {
	z := s.zt
	if c.Msg.Method != mcp.MethodToolsCall || c.Msg.Kind != jsonrpc.KindRequest || z.Signer == nil || c.issued != "" {
		return nil
	}
	need, needSig := z.needs(c)
	if !need || needSig {
		return nil
	}
	sub, ok := z.subject(c)
	if !ok {
		return nil
	}
	if token, d := presented(c, MetaTokenKey, HeaderToken); d != nil || token != "" {
		return nil
	}
	c.Subject = sub // the record names the subject of a refused approval too
	token, d := z.tokenFor(ctx, c, sub, bindingSession(ctx, c))
	if d != nil {
		d.Stage = stageZeroTrust
		return d
	}
	c.issued = token
	return nil
}

// Authorize implements the authorization API's issuing for a pipeline
// with a consent stage (Pipeline.Authorize): it is the zero-trust stage's.
func (s Consent) Authorize(ctx context.Context, c *Call, req TokenRequest) (string, *zerotrust.Claims, *Denial) {
	token, claims, d := s.zt.Authorize(ctx, c, req)
	if d != nil && d.Stage == "" {
		d.Stage = stageZeroTrust
	}
	return token, claims, d
}

// tokenFor issues a token for a call that brought none: for a
// pre-approved invocation (a mandate), or once a person approves it. ""
// and no denial when it can do neither.
func (z ZeroTrust) tokenFor(ctx context.Context, c *Call, sub, session string) (string, *Denial) {
	if len(z.Mandates) > 0 {
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
	return "", nil
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

// Answered is the consent stage's response half (AnswerStage): when the
// upstream answered an approved held call without error, it tells the
// approval queue that the call ran, so that the console compares later
// calls with what really ran. A call that never got an answer, got a
// JSON-RPC error, or a result with isError true is not marked.
func (s Consent) Answered(ctx context.Context, a Answer) {
	z := s.zt
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
