package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// elicitSchema is the form the client shows its user: one required yes/no
// and an optional reason. MCP limits elicitation forms to flat objects of
// primitive properties.
const elicitSchema = `{"type":"object","properties":{` +
	`"approve":{"type":"boolean","title":"Approve this call",` +
	`"description":"Run exactly this tool call, with exactly these arguments, once."},` +
	`"reason":{"type":"string","title":"Reason","description":"Optional: why you decided so."}},` +
	`"required":["approve"]}`

// elicitApproval builds the params of the elicitation/create request that
// asks the user to approve p. The message shows the exact arguments and the
// parameters_hash of the token warden will issue: what the user approves is
// what is signed.
func elicitApproval(p approval.Pending) []byte {
	var args bytes.Buffer
	if json.Indent(&args, p.Arguments, "", "  ") != nil {
		args.Reset()
		args.Write(p.Arguments)
	}
	msg := "warden is holding a tool call until you approve it.\n\n" +
		"Server: " + p.Upstream + "\nTool: " + p.Tool + "\nArguments:\n" + args.String() +
		"\n\nparameters_hash: " + p.Hash + "\napproval id: " + p.ID +
		"\n\nApprove only if these are exactly the arguments you intend. The approval covers this one call."
	params := make([]byte, 0, len(msg)+len(elicitSchema)+64)
	params = append(params, `{"message":`...)
	params = appendJSONString(params, msg)
	params = append(params, `,"requestedSchema":`...)
	params = append(params, elicitSchema...)
	return append(params, '}')
}

// elicitAnswer is the part of an ElicitResult warden reads.
type elicitAnswer struct {
	Action  string `json:"action"`
	Content struct {
		Approve *bool  `json:"approve"`
		Reason  string `json:"reason"`
	} `json:"content"`
}

// askUser asks the client's user to decide on p and records the answer in
// the approval queue. When the user is the only channel (only), an answer
// that is no decision (dismissed, or the client failed) refuses the call;
// otherwise an operator may still decide.
func (z ZeroTrust) askUser(ctx context.Context, c *Call, p approval.Pending, only bool) {
	approver := p.Subject + " via elicitation"
	m, err := c.Elicit(ctx, elicitApproval(p))
	if ctx.Err() != nil {
		return // decided elsewhere, timed out, or the call was cancelled
	}
	var a elicitAnswer
	if err == nil {
		if jerr := jsonrpc.Unmarshal(m.Result, &a); jerr != nil {
			err = errors.New("its answer is not an elicitation result: " + jerr.Error())
		}
	}
	switch {
	case err != nil:
		slog.Warn("could not ask the client's user to approve a held call", "approval", p.ID, "err", err)
		if only {
			z.decide(p.ID, false, "", "the client could not ask its user: "+err.Error())
		}
	case a.Action == "accept" && a.Content.Approve != nil && *a.Content.Approve:
		z.decide(p.ID, true, approver, a.Content.Reason)
	case a.Action == "accept" || a.Action == "decline":
		reason := a.Content.Reason
		if reason == "" {
			reason = "declined in the client"
		}
		z.decide(p.ID, false, approver, reason)
	default: // "cancel": dismissed without a choice
		if only {
			z.decide(p.ID, false, "", "the user dismissed the approval request")
		}
	}
}

// decide records a decision; one already made (by another channel) stands.
func (z ZeroTrust) decide(id string, approve bool, approver, reason string) {
	if err := z.Approvals.Decide(id, approve, approver, reason); err != nil {
		slog.Debug("approval already decided", "approval", id, "err", err)
	}
}
