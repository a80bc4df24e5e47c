package gateway

// Taint tracking in the gateway (AgentRFC CS, composition safety):
//
//	MCP answer (tools/call, resources/read, prompts/get) ─┐
//	A2A answer and streamed event ────────────────────────┴─► Tracker.Observe (scope: principal)
//
//	MCP tools/call of tier > 0, or a sink tool ─► "taint" stage ─┐
//	A2A SendMessage / message/send / …stream ─► a2agw "taint" ───┴─► Tracker.Check
//	    copied run of untrusted text ─► require_approval (held, else refused) | deny | flag
//
// A tools/call counts as a sink when its tier (from the classify stage) is
// above the tier of the call whose answer the text came from, or when the
// tool matches gateway.taint.sink_tools (then any source counts). An A2A
// message counts as a sink for text from any other upstream: MCP answers
// and other agents' answers, not the same agent's own.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/glob"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/policy"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/taint"
)

// UntrustedFlow is the category of taint findings.
const UntrustedFlow secproc.Category = "untrusted_flow"

// Rules of the taint stage.
const (
	RuleIntoHigherTier = deny.RuleIntoHigherTier // answer text into a tool call of a higher tier
	RuleIntoSinkTool   = deny.RuleIntoSinkTool   // answer text into a gateway.taint.sink_tools tool
	RuleIntoDelegation = deny.RuleIntoDelegation // answer text into an A2A message
)

// Taint is the "taint" stage of an MCP upstream, and the observer of its
// answers.
type Taint struct {
	Tracker *taint.Tracker
	// Action is secproc.RequireApproval (held by the zero-trust stage, or
	// refused when CanHold is false), secproc.Deny or secproc.Flag.
	Action secproc.Action
	// Sinks are tools that no untrusted text may reach, whatever their tier.
	Sinks []glob.Pattern
	// CanHold means the zero-trust stage after this one holds calls for a
	// person.
	CanHold bool
}

// Name implements Stage.
func (Taint) Name() string { return "taint" }

// Check implements Stage.
func (s Taint) Check(_ context.Context, c *Call) *Denial {
	if c.Msg.Method != mcp.MethodToolsCall || c.Msg.Kind != jsonrpc.KindRequest || len(c.Arguments) == 0 {
		return nil
	}
	tier := policy.TierOf(c.Level)
	sink := false
	for _, p := range s.Sinks {
		if p.Match(c.Tool) {
			sink = true
			break
		}
	}
	if tier == 0 && !sink {
		return nil
	}
	rule := RuleIntoHigherTier
	accept := func(src taint.Source) bool { return src.Tier < tier }
	if sink {
		rule, accept = RuleIntoSinkTool, nil
	}
	matches := s.Tracker.Check(c.Principal, c.Arguments, accept)
	if len(matches) == 0 {
		return nil
	}
	into := "tool " + quote(c.Tool)
	if !sink {
		into += " (tier " + strconv.Itoa(tier) + ")"
	}
	findings := taintFindings(matches, rule, into, "arguments", s.Action)
	c.Findings = append(c.Findings, findings...)
	switch s.Action {
	case secproc.Flag:
		return nil
	case secproc.Deny:
		return &Denial{Rule: rule, Reason: findings[0].Message}
	}
	if !s.CanHold {
		return &Denial{Rule: rule, Reason: findings[0].Message +
			"; it needs a person's approval, and this gateway holds no calls (zero_trust.hold_for_approval)"}
	}
	c.NeedsApproval = true
	return nil
}

// Answered is the taint stage's response half (AnswerStage): it records an
// MCP answer as untrusted.
func (s Taint) Answered(_ context.Context, a Answer) {
	switch a.Method {
	case mcp.MethodToolsCall, mcp.MethodResourcesRead, mcp.MethodPromptsGet:
	default:
		return
	}
	op := a.Tool
	if op == "" {
		op = a.Method
	}
	s.Tracker.Observe(a.Principal, taint.Source{Protocol: "mcp", Upstream: a.Upstream, Op: op,
		Tier: policy.TierOf(a.Level), AuditID: a.AuditID}, a.Result, a.Arguments)
}

// taintFindings renders matches as findings of the taint stage. root
// prefixes each match's path ("arguments", "params").
func taintFindings(matches []taint.Match, rule deny.Rule, into, root string, action secproc.Action) []secproc.Finding {
	out := make([]secproc.Finding, 0, len(matches))
	for _, m := range matches {
		out = append(out, secproc.Finding{Category: UntrustedFlow, Rule: "taint/" + string(rule), Severity: secproc.High,
			Action: action, Confidence: 0.9, Path: root + m.Path[1:], Evidence: m.Excerpt,
			Message: fmt.Sprintf("%s carries text copied from the answer of %s%s, which is untrusted",
				into, describeSource(m.Source), auditRef(m.Source.AuditID))})
	}
	return out
}

// describeSource names where tracked text came from, for a person:
// `MCP server "docs" tool read_file`, `A2A agent "planner" (SendMessage)`.
func describeSource(s taint.Source) string {
	switch s.Protocol {
	case "mcp":
		if strings.Contains(s.Op, "/") { // a method: resources/read, prompts/get
			return "MCP server " + quote(s.Upstream) + " (" + s.Op + ")"
		}
		return "MCP server " + quote(s.Upstream) + " tool " + s.Op
	case "a2a":
		return "A2A agent " + quote(s.Upstream) + " (" + s.Op + ")"
	}
	return s.Protocol + " " + quote(s.Upstream) + " " + s.Op
}

func auditRef(id string) string {
	if id == "" {
		return ""
	}
	return " (audit record " + id + ")"
}

// Answer is what the relay shows an AnswerStage of each upstream answer to
// a client request: the request's method, tool, classification and
// arguments, and the answer's result and audit record. Approval is the
// approval id of a held call that was approved, "" otherwise.
type Answer struct {
	Upstream, Session, Principal string
	Method, Tool                 string
	Level                        int
	Arguments                    []byte
	Result                       []byte
	AuditID                      string
	Approval                     string
}
