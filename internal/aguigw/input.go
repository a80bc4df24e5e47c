package aguigw

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/transport"
)

// untrustedRoles are the input message roles whose content did not come
// from the user or the client: tool output and activity.
var untrustedRoles = map[string]bool{"tool": true, "activity": true}

// input is a RunAgentInput that passed the shape check.
type input struct {
	threadID, runID string
	messages        []json.RawMessage
	roles           []string
	decoded         []any // the messages, decoded
}

// ServeHTTP relays one RunAgentInput POST and the agent's event stream.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	e := Event{Upstream: h.opts.Name, Direction: "client", Type: "run_agent_input"}
	refuse := func(d *deny.Denial) {
		e.Decision, e.Stage, e.Rule, e.Reason, e.Raw = "deny", d.Stage, string(d.Rule), d.Reason, nil
		if err := h.record(ctx, e); err != nil {
			d = auditDenial(err)
		}
		writeError(w, d)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuse(&deny.Denial{Stage: StageListener, Rule: deny.RuleHTTPMethod, Status: http.StatusMethodNotAllowed,
			Reason: "a RunAgentInput is POSTed, not sent with " + httpMethod(r)})
		return
	}
	var principal string
	if h.opts.Authenticate != nil {
		var ref *transport.AuthRefusal
		if principal, ref = h.opts.Authenticate(r); ref != nil {
			d := &deny.Denial{Stage: StageAuth, Rule: deny.Rule(ref.Rule), Reason: ref.Message, Status: ref.Status}
			_ = h.record(ctx, Event{Upstream: h.opts.Name, Direction: "client", Type: "run_agent_input",
				Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason})
			if ref.Challenge != "" {
				w.Header().Set("WWW-Authenticate", ref.Challenge)
			}
			writeError(w, d)
			return
		}
	}
	e.Principal = principal
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		refuse(&deny.Denial{Stage: StageListener, Rule: deny.RuleContentType, Status: http.StatusUnsupportedMediaType,
			Reason: "the RunAgentInput must be application/json"})
		return
	}
	maxBytes, _ := h.limits()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBytes)+1))
	if err != nil {
		refuse(&deny.Denial{Stage: StageListener, Rule: deny.RuleBody, Status: http.StatusBadRequest, Reason: "could not read the body"})
		return
	}
	in, d := h.parseInput(body)
	if d != nil {
		refuse(d)
		return
	}
	e.ThreadID, e.RunID = in.threadID, in.runID
	sc := scope{session: in.threadID, principal: principal}
	var v verdict
	for i, m := range in.messages {
		if untrustedRoles[in.roles[i]] {
			h.inspect(ctx, &v, sc, secproc.KindToolResult, "", ".messages["+strconv.Itoa(i)+"]", m)
		}
	}
	if state, ok := jsonrpc.Lookup(body, "state"); ok {
		h.inspect(ctx, &v, sc, secproc.KindToolResult, "", ".state", state)
	}
	e.Findings = v.findings
	if d := v.denial(); d != nil {
		refuse(d)
		return
	}
	fwd := body
	if len(v.targets) > 0 {
		fwd = quarantine(body, "", v.targets)
		e.Rule = v.qrule
	}
	e.Decision, e.Raw = v.decision(), fwd
	if err := h.record(ctx, e); err != nil {
		writeError(w, auditDenial(err))
		return
	}
	h.forward(w, r, &run{h: h, scope: sc, threadID: in.threadID, runID: in.runID,
		system: systemMessages(in.decoded), users: userMessages(in.decoded)}, fwd)
}

// parseInput is the wire and input stages: strict JSON, then the shape
// both AG-UI generations require on the wire (threadId, runId, messages[]
// of objects with a string role).
func (h *Handler) parseInput(body []byte) (*input, *deny.Denial) {
	if err := jsonrpc.Validate(body, h.opts.Limits); err != nil {
		d := &deny.Denial{Stage: StageWire, Rule: deny.RuleSyntax, Status: http.StatusBadRequest, Reason: err.Error()}
		var re *jsonrpc.Error
		if errors.As(err, &re) {
			d.Reason = "the RunAgentInput is not acceptable JSON: " + re.Message
			if r, ok := jsonrpc.Lookup(re.Data, "rule"); ok {
				rule, _ := jsonrpc.String(r)
				d.Rule = deny.Rule(rule)
			}
		}
		return nil, d
	}
	bad := func(reason string) (*input, *deny.Denial) {
		return nil, &deny.Denial{Stage: StageInput, Rule: deny.RuleShape, Status: http.StatusBadRequest, Reason: reason}
	}
	body = bytes.TrimSpace(body)
	if body[0] != '{' {
		return bad("a RunAgentInput is a JSON object")
	}
	in := &input{}
	for _, f := range []struct {
		name string
		to   *string
	}{{"threadId", &in.threadID}, {"runId", &in.runID}} {
		raw, _ := jsonrpc.Lookup(body, f.name)
		if s, ok := jsonrpc.String(raw); ok && s != "" {
			*f.to = s
			continue
		}
		return bad(f.name + " must be a non-empty string")
	}
	raw, ok := jsonrpc.Lookup(body, "messages")
	if !ok || jsonrpc.Unmarshal(raw, &in.messages) != nil {
		return bad("messages must be an array")
	}
	for i, m := range in.messages {
		role, _ := jsonrpc.Lookup(m, "role")
		s, ok := jsonrpc.String(role)
		if !ok {
			return bad("messages[" + strconv.Itoa(i) + "] must be an object with a string role")
		}
		in.roles = append(in.roles, s)
		in.decoded = append(in.decoded, decodeAny(m))
	}
	return in, nil
}

// forward POSTs the input to the upstream and relays its event stream.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, rn *run, body []byte) {
	ctx := r.Context()
	fail := func(d *deny.Denial) {
		e := rn.event("", "")
		e.Decision, e.Stage, e.Rule, e.Reason = "deny", d.Stage, string(d.Rule), d.Reason
		if err := h.record(ctx, e); err != nil {
			d = auditDenial(err)
		}
		writeError(w, d)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.opts.Upstream, bytes.NewReader(body))
	if err != nil {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Status: http.StatusBadGateway, Reason: err.Error()})
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range h.opts.UpstreamHeader {
		req.Header[k] = v
	}
	resp, err := h.client.Do(req)
	if err != nil {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Status: http.StatusBadGateway,
			Reason: "the upstream agent could not be reached"})
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleStatus, Status: http.StatusBadGateway,
			Reason: "the upstream agent answered " + resp.Status})
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleNotStream, Status: http.StatusBadGateway,
			Reason: "the upstream agent did not answer with text/event-stream"})
		return
	}
	rn.relay(ctx, w, resp.Body)
}

// httpMethod is r's method as a refusal's reason may quote it: a client
// chooses it, so anything but a short token is not repeated.
func httpMethod(r *http.Request) string {
	m := r.Method
	if len(m) > 16 || strings.IndexFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
		return "another method"
	}
	return m
}
