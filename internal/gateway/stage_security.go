package gateway

// The security processor in the gateway (internal/secproc):
//
//	client tools/call, resources/read, prompts/get ─► Security.Check
//	    deny ─► refused (stage "security", the finding's rule)
//	    require_approval ─► held by the zero-trust stage, or refused when
//	                        nothing can hold it
//	    flag ─► relayed; the findings go to the span and OCSF
//	upstream answer ─► Security.Result
//	    deny or require_approval ─► withheld: the client gets the refusal
//	    tools/list: a tool whose description is denied is dropped
//	    flag ─► relayed; findings recorded
//
// Results are inspected even when the call was allowed: the processor's
// read-then-send check learns from them what a session has read.

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/secproc"
)

// Security is the "security" stage.
type Security struct {
	Processor *secproc.Processor
	// CanHold means a later stage (zero-trust with approvals) holds calls
	// for a person. Without it a require_approval finding refuses the call.
	CanHold bool
	// Subject returns the principal of the call, for grants.
	Subject func(c *Call) (string, bool)
	// Quarantine, if set, names the categories whose findings in an
	// answer are quarantined: the offending strings are replaced by an
	// inert marker (secproc.Marker) and the answer goes through. In a call
	// such a finding is only flagged.
	Quarantine func(secproc.Category) bool
}

// Name implements Stage.
func (Security) Name() string { return "security" }

// Check implements Stage.
func (s Security) Check(ctx context.Context, c *Call) *Denial {
	if c.Msg.Kind != jsonrpc.KindRequest {
		return nil
	}
	ev := secproc.Event{Upstream: c.Upstream, Session: trackingSession(c.Session, c.Principal), Tool: c.Tool}
	switch c.Msg.Method {
	case mcp.MethodToolsCall:
		ev.Kind, ev.Arguments = secproc.KindToolCall, c.Arguments
	case mcp.MethodResourcesRead:
		ev.Kind, ev.Arguments = secproc.KindResource, c.Msg.Params
	case mcp.MethodPromptsGet:
		ev.Kind = secproc.KindPrompt
		ev.Arguments, _ = jsonrpc.Lookup(c.Msg.Params, "arguments")
	default:
		return nil
	}
	if s.Subject != nil {
		ev.Subject, _ = s.Subject(c)
	}
	findings := s.Processor.Inspect(ctx, ev)
	if len(findings) == 0 {
		return nil
	}
	c.Findings = append(c.Findings, findings...)
	switch f := strongestFinding(findings); f.Action {
	case secproc.Deny:
		return &Denial{Rule: deny.Rule(f.Rule), Reason: f.Message}
	case secproc.RequireApproval:
		if !s.CanHold {
			return &Denial{Rule: deny.Rule(f.Rule), Reason: f.Message + "; it needs a person's approval, and this gateway holds no calls (zero_trust.hold_for_approval)"}
		}
		c.NeedsApproval = true
	}
	return nil
}

// trackingSession is the session by which the processor links a client's
// events (read-then-send, secret replay): the client's session, or for a
// request of the stateless revision, which has none, its authenticated
// principal, so that one client's reads never mark another client's sends.
// Stateless requests without authentication share one.
func trackingSession(session, principal string) string {
	if session == "" && principal != "" {
		return "principal:" + principal // session ids have no colon
	}
	return session
}

// Result inspects an upstream's answer to a client request: method and
// tool are the request's. It returns the message to send the client (msg,
// or msg with tools dropped from a tools/list answer, or a refusal) and the
// findings.
func (s Security) Result(ctx context.Context, upstream, session, method, tool string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial) {
	if msg.Kind == jsonrpc.KindRequest {
		return s.upstreamRequest(ctx, upstream, trackingSession(session, principalFrom(ctx)), msg)
	}
	if msg.Result == nil {
		return msg, nil, nil
	}
	session = trackingSession(session, principalFrom(ctx))
	ev := secproc.Event{Upstream: upstream, Session: session, Tool: tool, Content: msg.Result}
	switch method {
	case mcp.MethodToolsCall:
		ev.Kind = secproc.KindToolResult
	case mcp.MethodResourcesRead:
		ev.Kind = secproc.KindResource
	case mcp.MethodPromptsGet:
		ev.Kind = secproc.KindPrompt
	case mcp.MethodToolsList:
		out, findings := s.toolsList(ctx, upstream, session, msg)
		return out, findings, nil
	default:
		return msg, nil, nil
	}
	findings := s.Processor.Inspect(ctx, ev)
	if targets := s.contentQuarantine(findings); targets != nil {
		out := jsonrpc.NewResult(msg.ID, secproc.Quarantine(msg.Result, "", targets))
		out.Related = msg.Related
		return out, s.quarantined(findings, "content"), nil
	}
	if f := strongestFinding(findings); f.Action >= secproc.RequireApproval {
		// An answer cannot wait for a person: what needs approval is withheld.
		d := &Denial{Stage: "security", Rule: deny.Rule(f.Rule), Reason: "the upstream's answer is withheld: " + f.Message}
		out := jsonrpc.NewErrorResponse(msg.ID, d.Error())
		out.Related = msg.Related
		return out, findings, d
	}
	return msg, findings, nil
}

// upstreamRequest inspects a request of the upstream's own that puts its
// text before the client's model or person: sampling/createMessage (its
// messages and system prompt go to the model) and elicitation/create (its
// message is shown to the user). The text is the upstream's, as a tool
// result is, and is inspected as one (kind tool_result): a quarantined
// finding's strings are replaced in the params, and a finding that denies
// or needs approval withholds the request (the relay answers the upstream
// with the refusal; the client never sees it).
func (s Security) upstreamRequest(ctx context.Context, upstream, session string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding, *Denial) {
	if (msg.Method != mcp.MethodSamplingCreate && msg.Method != mcp.MethodElicitationCreate) || len(msg.Params) == 0 {
		return msg, nil, nil
	}
	findings := s.Processor.Inspect(ctx, secproc.Event{Kind: secproc.KindToolResult, Upstream: upstream, Session: session, Content: msg.Params})
	if targets := s.contentQuarantine(findings); targets != nil {
		out := jsonrpc.NewRequest(msg.ID, msg.Method, secproc.Quarantine(msg.Params, "", targets))
		out.Related, out.Header = msg.Related, msg.Header
		return out, s.quarantined(findings, "content"), nil
	}
	if f := strongestFinding(findings); f.Action >= secproc.RequireApproval {
		return msg, findings, &Denial{Stage: "security", Rule: deny.Rule(f.Rule), Reason: "the upstream's " + msg.Method + " is withheld from the client: " + f.Message}
	}
	return msg, findings, nil
}

// toolsList inspects each tool's description and drops the tools whose
// findings deny them.
func (s Security) toolsList(ctx context.Context, upstream, session string, msg *jsonrpc.Message) (*jsonrpc.Message, []secproc.Finding) {
	tools, ok := jsonrpc.Lookup(msg.Result, "tools")
	if !ok {
		return msg, nil
	}
	var elems []json.RawMessage // each element's bytes as the upstream sent them
	if jsonrpc.Unmarshal(tools, &elems) != nil {
		return msg, nil
	}
	var all []secproc.Finding
	var kept [][]byte
	dropped, changed := 0, 0
	for _, tool := range elems {
		nameRaw, _ := jsonrpc.Lookup(tool, "name")
		name, _ := jsonrpc.String(nameRaw)
		descRaw, _ := jsonrpc.Lookup(tool, "description")
		desc, _ := jsonrpc.String(descRaw)
		// The schema's own descriptions are model-facing text too.
		schema, _ := jsonrpc.Lookup(tool, "inputSchema")
		f := s.Processor.Inspect(ctx, secproc.Event{Kind: secproc.KindToolDescription, Upstream: upstream,
			Session: session, Tool: name, Description: desc, Content: schema})
		all = append(all, f...)
		if strongestFinding(f).Action == secproc.Deny {
			dropped++
			continue
		}
		if s.Quarantine != nil {
			// A quarantined description or schema text stays, made inert.
			targets := map[string]string{}
			for k, rule := range secproc.Targets(f, "description", s.Quarantine) {
				targets[".description"+k] = rule
			}
			for k, rule := range secproc.Targets(f, "content", s.Quarantine) {
				targets[".inputSchema"+k] = rule
			}
			if len(targets) > 0 {
				tool = secproc.Quarantine(tool, "", targets)
				changed++
				all = append(all[:len(all)-len(f)], s.quarantined(f, "description", "content")...)
			}
		}
		kept = append(kept, tool)
	}
	if dropped == 0 && changed == 0 {
		return msg, all
	}
	// Rebuild the result with the kept tools and every other member as it was.
	result := rebuildResult(msg.Result, kept)
	out := jsonrpc.NewResult(msg.ID, result)
	out.Related = msg.Related
	return out, all
}

// quarantined returns findings with the action of each whose strings
// were replaced (a quarantined category with a target in one of fields)
// set to quarantine, which is what the gateway did about it: the span's
// warden.security.action and the OCSF finding's disposition (Quarantined,
// not Allowed) then say so. findings itself is not changed.
func (s Security) quarantined(findings []secproc.Finding, fields ...string) []secproc.Finding {
	out := slices.Clone(findings)
	for i, f := range out {
		if !s.Quarantine(f.Category) {
			continue
		}
		for _, field := range fields {
			if len(secproc.Targets(out[i:i+1], field, s.Quarantine)) > 0 {
				out[i].Action = secproc.ActionQuarantine
				break
			}
		}
	}
	return out
}

// rebuildResult returns result with its "tools" member replaced by kept.
func rebuildResult(result []byte, kept [][]byte) []byte {
	out := []byte{'{'}
	first := true
	jsonrpc.Members(result, func(name string, raw []byte) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, jsonrpc.Quote(name)...)
		out = append(out, ':')
		if name != "tools" {
			out = append(out, raw...)
			return
		}
		out = append(out, '[')
		for i, t := range kept {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, t...)
		}
		out = append(out, ']')
	})
	return append(out, '}')
}

// contentQuarantine returns the strings of an event's content to replace
// when quarantine settles its findings, or nil when it does not: some
// finding is quarantined, and none of those that still decide needs
// approval or denies. Quarantined findings no longer decide; the others
// still do, and so do those with no string of the content to replace (a
// CEL rule on the whole event, or one that could not be evaluated and
// denies).
func (s Security) contentQuarantine(findings []secproc.Finding) map[string]string {
	if s.Quarantine == nil {
		return nil
	}
	targets := secproc.Targets(findings, "content", s.Quarantine)
	if len(targets) == 0 {
		return nil
	}
	var rest []secproc.Finding
	for _, f := range findings {
		if !s.Quarantine(f.Category) || len(secproc.Targets([]secproc.Finding{f}, "content", s.Quarantine)) == 0 {
			rest = append(rest, f)
		}
	}
	if strongestFinding(rest).Action >= secproc.RequireApproval {
		return nil
	}
	return targets
}

// strongestFinding returns the finding with the strongest action (the
// first of equals), or the zero Finding.
func strongestFinding(findings []secproc.Finding) secproc.Finding {
	var best secproc.Finding
	for _, f := range findings {
		if f.Action > best.Action {
			best = f
		}
	}
	return best
}

// findingLines renders findings for a person deciding on a held call.
func findingLines(findings []secproc.Finding) []string {
	lines := make([]string, 0, len(findings))
	for _, f := range findings {
		lines = append(lines, strings.TrimSpace(f.Rule+": "+f.Message+" at "+f.Path))
	}
	return lines
}
