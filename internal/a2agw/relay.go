package a2agw

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// A2A JSON-RPC methods: 1.0 names, then their 0.3 equivalents.
var (
	// streamMethods answer with a text/event-stream.
	streamMethods = map[string]bool{
		"SendStreamingMessage": true, "SubscribeToTask": true,
		"message/stream": true, "tasks/resubscribe": true,
	}
	// sendMethods carry a message, and so may carry a delegation chain.
	sendMethods = map[string]bool{
		"SendMessage": true, "SendStreamingMessage": true,
		"message/send": true, "message/stream": true,
	}
	// extendedCardMethods return the authenticated extended card.
	extendedCardMethods = map[string]bool{
		"GetExtendedAgentCard": true, "agent/getAuthenticatedExtendedCard": true,
	}
	// knownMethods is every A2A method the gateway relays.
	knownMethods = map[string]bool{
		"SendMessage": true, "SendStreamingMessage": true, "GetTask": true, "ListTasks": true,
		"CancelTask": true, "SubscribeToTask": true, "GetExtendedAgentCard": true,
		"CreateTaskPushNotificationConfig": true, "GetTaskPushNotificationConfig": true,
		"ListTaskPushNotificationConfigs": true, "DeleteTaskPushNotificationConfig": true,

		"message/send": true, "message/stream": true, "tasks/get": true, "tasks/list": true,
		"tasks/cancel": true, "tasks/resubscribe": true, "agent/getAuthenticatedExtendedCard": true,
		"tasks/pushNotificationConfig/set": true, "tasks/pushNotificationConfig/get": true,
		"tasks/pushNotificationConfig/list": true, "tasks/pushNotificationConfig/delete": true,
	}
)

// forwardHeaders are the client headers the upstream sees, besides the body.
var forwardHeaders = []string{"A2a-Version", "A2a-Extensions", "X-A2a-Extensions"}

// call is one client request on its way through the pipeline.
type call struct {
	msg       *jsonrpc.Message
	principal string
	chain     *Chain     // set by the delegation stage
	list      *listQuery // set by the task-owner stage: warden filters this ListTasks
}

// relay handles one JSON-RPC POST.
func (h *Handler) relay(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var principal string
	refuse := func(status int, id jsonrpc.ID, method string, d *deny.Denial) {
		e := Event{Upstream: h.opts.Name, Principal: principal, Direction: "client", Method: method, ID: id,
			Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason}
		if err := h.record(ctx, e); err != nil {
			d = auditDenial(err)
		}
		writeError(w, status, id, d)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		refuse(http.StatusMethodNotAllowed, jsonrpc.ID{}, "", &deny.Denial{Stage: StageListener, Rule: deny.RuleHTTPMethod,
			Code: jsonrpc.CodeInvalidRequest, Reason: "A2A JSON-RPC requests are POSTed, not sent with " + httpMethod(r)})
		return
	}
	if h.opts.Authenticate != nil {
		var ref *transport.AuthRefusal
		if principal, ref = h.opts.Authenticate(r); ref != nil {
			d := &deny.Denial{Stage: StageAuth, Rule: deny.Rule(ref.Rule), Reason: ref.Message}
			_ = h.record(ctx, Event{Upstream: h.opts.Name, Direction: "client", Decision: "deny",
				Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason})
			if ref.Challenge != "" {
				w.Header().Set("WWW-Authenticate", ref.Challenge)
			}
			writeError(w, ref.Status, jsonrpc.ID{}, d)
			return
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		refuse(http.StatusUnsupportedMediaType, jsonrpc.ID{}, "", &deny.Denial{Stage: StageListener, Rule: deny.RuleContentType,
			Code: jsonrpc.CodeInvalidRequest, Reason: "the body must be application/json"})
		return
	}
	maxBytes, _ := h.limits()
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBytes)+1))
	if err != nil {
		refuse(http.StatusBadRequest, jsonrpc.ID{}, "", &deny.Denial{Stage: StageListener, Rule: deny.RuleBody,
			Code: jsonrpc.CodeInvalidRequest, Reason: "could not read the body"})
		return
	}
	msg, err := jsonrpc.Decode(body, h.opts.Limits)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = jsonrpc.Detail{Stage: StageWire, Rule: string(deny.RuleSyntax)}.Errorf(jsonrpc.CodeParseError, err.Error())
		}
		d := wireDenial(rpcErr)
		e := Event{Upstream: h.opts.Name, Principal: principal, Direction: "client", ID: jsonrpc.PeekID(body),
			Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason}
		if err := h.record(ctx, e); err != nil {
			writeError(w, http.StatusOK, e.ID, auditDenial(err))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonrpc.EncodeErrorResponse(e.ID, rpcErr))
		return
	}
	if msg.Kind != jsonrpc.KindRequest {
		refuse(http.StatusOK, msg.ID, msg.Method, &deny.Denial{Stage: StageWire, Rule: deny.RuleNotRequest,
			Code: jsonrpc.CodeInvalidRequest, Reason: "A2A takes JSON-RPC requests only, not a " + msg.Kind.String()})
		return
	}
	c := &call{msg: msg, principal: principal}
	d := h.pipeline(ctx, c)
	e := Event{Upstream: h.opts.Name, Principal: principal, Direction: "client", Method: msg.Method, ID: msg.ID,
		TaskID: requestTaskID(msg.Method, msg.Params), Decision: "allow", Delegation: c.chain, Raw: msg.Raw}
	if d != nil {
		e.Decision, e.Stage, e.Rule, e.Reason, e.Raw = "deny", d.Stage, string(d.Rule), d.Reason, nil
	}
	if err := h.record(ctx, e); err != nil {
		writeError(w, http.StatusOK, msg.ID, auditDenial(err))
		return
	}
	if d != nil {
		writeError(w, http.StatusOK, msg.ID, d)
		return
	}
	h.forward(w, r, c)
}

// limits returns the resolved message limits.
func (h *Handler) limits() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = h.opts.Limits.MaxBytes, h.opts.Limits.MaxDepth
	if maxBytes <= 0 {
		maxBytes = jsonrpc.DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = jsonrpc.DefaultMaxDepth
	}
	return maxBytes, maxDepth
}

// wireDenial reads the stage and rule out of a decoder error.
func wireDenial(e *jsonrpc.Error) *deny.Denial {
	d := &deny.Denial{Stage: StageWire, Rule: deny.RuleSyntax, Code: jsonrpc.CodeParseError, Reason: "invalid message"}
	if e == nil {
		return d
	}
	d.Code, d.Reason = e.Code, e.Message
	if raw, ok := jsonrpc.Lookup(e.Data, "rule"); ok {
		rule, _ := jsonrpc.String(raw)
		d.Rule = deny.Rule(rule)
	}
	return d
}

// pipeline runs the stages in order; the first denial wins.
func (h *Handler) pipeline(ctx context.Context, c *call) *deny.Denial {
	for _, st := range stages {
		if d := st.check(h, ctx, c); d != nil {
			return d
		}
	}
	return nil
}

// stages are the checks of a decoded request, in the order the relay runs
// them, each under the stage name its refusals carry (checkFlow's consent
// refusals carry StageConsent: it is the taint stage's approval).
var stages = []struct {
	name  string
	check func(*Handler, context.Context, *call) *deny.Denial
}{
	{StageMethod, (*Handler).checkMethod},
	{StageOwner, (*Handler).checkOwner},
	{StageCard, (*Handler).checkCard},
	{StageDelegation, (*Handler).checkDelegation},
	{StageTaint, (*Handler).checkFlow},
}

// Stages returns the names of the stages the relay runs on each request,
// in order, after the strict decoder (StageWire), which refuses what
// cannot be decoded before any of them.
func Stages() []string {
	out := make([]string, len(stages))
	for i, st := range stages {
		out[i] = st.name
	}
	return out
}

// checkMethod is the "method-policy" stage: A2A methods only, the extended
// card only when allowed, then Options.Methods, then the webhooks of push
// notification configs (push.go).
func (h *Handler) checkMethod(_ context.Context, c *call) *deny.Denial {
	m := c.msg.Method
	switch {
	case !knownMethods[m]:
		return &deny.Denial{Stage: StageMethod, Rule: deny.RuleUnknownMethod, Reason: "method " + strconv.Quote(m) + " is not an A2A method"}
	case extendedCardMethods[m] && !h.opts.AllowExtendedCard:
		return &deny.Denial{Stage: StageMethod, Rule: deny.RuleExtendedCard,
			Reason: "the extended agent card cannot be attested by the gateway, and is not relayed"}
	}
	if h.opts.Methods != nil {
		if ok, rule := h.opts.Methods.Permits(m); !ok {
			return &deny.Denial{Stage: StageMethod, Rule: deny.Rule(rule), Reason: "method " + strconv.Quote(m) + " is not allowed on upstream " + strconv.Quote(h.opts.Name)}
		}
	}
	return h.checkPushURL(c)
}

// checkCard is the "card" stage: nothing is relayed to an agent whose card
// is not attested (changed, forged or unavailable).
func (h *Handler) checkCard(ctx context.Context, c *call) *deny.Denial {
	if st := h.card(ctx); st.denial != nil {
		d := *st.denial
		return &d
	}
	return nil
}

// checkDelegation is the "delegation" stage (P3, INV-7).
func (h *Handler) checkDelegation(ctx context.Context, c *call) *deny.Denial {
	const base = "$.params"
	inParams, okP := jsonrpc.Lookup(c.msg.Params, "metadata", MetadataKey)
	inMsg, okM := jsonrpc.Lookup(c.msg.Params, "message", "metadata", MetadataKey)
	broken := func(step, path, reason string) *deny.Denial {
		return &deny.Denial{Stage: StageDelegation, Rule: deny.RuleINV7, Invariant: "INV-7", Step: step, Path: path, Reason: reason}
	}
	var raw []byte
	var path string
	switch {
	case okP && okM:
		return broken("ambiguous", base, "two delegation chains (params.metadata and params.message.metadata)")
	case okP:
		raw, path = inParams, base+".metadata["+strconv.Quote(MetadataKey)+"]"
	case okM:
		raw, path = inMsg, base+".message.metadata["+strconv.Quote(MetadataKey)+"]"
	case h.opts.Delegation.Require && sendMethods[c.msg.Method]:
		return broken("missing", base, "a delegation chain ("+MetadataKey+") is required")
	default:
		return nil
	}
	agent := h.opts.Delegation.Agent
	if agent == "" {
		agent = h.card(ctx).name
	}
	chain, err := h.opts.Delegation.VerifyChain(raw, c.principal, agent, h.now())
	if err != nil {
		var ce *chainError
		if !errors.As(err, &ce) {
			return broken("malformed", path, err.Error())
		}
		if ce.hop >= 0 {
			path += "[" + strconv.Itoa(ce.hop) + "]"
		}
		return broken(ce.check, path, ce.Error())
	}
	c.chain = chain
	return nil
}

// checkFlow is the "consent" and "taint" stages: Options.Flow decides
// whether the request may go, and may wait for a person to decide.
func (h *Handler) checkFlow(ctx context.Context, c *call) *deny.Denial {
	if h.opts.Flow == nil {
		return nil
	}
	r := h.opts.Flow.Check(ctx, c.principal, c.msg.Method, c.msg.Params)
	if r == nil {
		return nil
	}
	if r.Stage == "" {
		r.Stage = StageTaint
	}
	return r
}

// observe gives the ids an answer names to the task-owner stage, and shows
// its result to Options.Flow.
func (h *Handler) observe(ctx context.Context, c *call, ans *jsonrpc.Message) {
	h.noteOwner(c, ans.Result)
	if h.opts.Flow != nil && ans.Result != nil {
		h.opts.Flow.Observe(ctx, c.principal, c.msg.Method, c.msg.Params, ans.Result)
	}
}

// forward sends the validated bytes upstream and relays the answer.
func (h *Handler) forward(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	msg := c.msg
	fail := func(d *deny.Denial, stream bool) {
		e := Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: msg.Method, ID: msg.ID,
			Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason}
		if err := h.record(ctx, e); err != nil {
			d = auditDenial(err)
		}
		if stream {
			writeEvent(w, jsonrpc.EncodeErrorResponse(msg.ID, d.Error()))
			return
		}
		writeError(w, http.StatusOK, msg.ID, d)
	}
	if c.list != nil {
		h.listTasks(w, r, c)
		return
	}
	accept := "application/json"
	if streamMethods[msg.Method] {
		accept = "text/event-stream, application/json"
	}
	req, err := h.upstreamRequest(ctx, r, msg.Raw, accept)
	if err != nil {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Code: jsonrpc.CodeUpstreamUnavailable, Reason: err.Error()}, false)
		return
	}
	resp, err := h.client.Do(req)
	if err != nil {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnreachable, Code: jsonrpc.CodeUpstreamUnavailable,
			Reason: "the upstream agent could not be reached"}, false)
		return
	}
	defer resp.Body.Close()
	maxBytes, _ := h.limits()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		if !streamMethods[msg.Method] {
			fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleUnexpectedStream, Code: jsonrpc.CodeUpstreamInvalid,
				Reason: "the upstream agent answered " + msg.Method + " with a stream"}, false)
			return
		}
		h.relayStream(ctx, w, c, resp.Body, maxBytes, fail)
		return
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
	if err != nil {
		fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleEnded, Code: jsonrpc.CodeUpstreamUnavailable,
			Reason: "the upstream agent's answer was cut short"}, false)
		return
	}
	ans, d := h.checkAnswer(data, msg.ID, resp.Status)
	if d != nil && emptyResult[msg.Method] {
		if fixed, fd := h.checkAnswer(withNullResult(data), msg.ID, resp.Status); fd == nil {
			ans, d = fixed, nil
		}
	}
	if d != nil {
		fail(d, false)
		return
	}
	e := Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: msg.Method, ID: msg.ID,
		TaskID: taskID(ans.Result, resultTaskPaths), Decision: "allow", Raw: ans.Raw}
	if err := h.record(ctx, e); err != nil {
		writeError(w, http.StatusOK, msg.ID, auditDenial(err))
		return
	}
	h.observe(ctx, c, ans)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(ans.Raw)
}

// emptyResult are the methods whose success carries nothing (the
// specification's google.protobuf.Empty). a2a-go encodes that answer with
// no "result" member at all, which is not a JSON-RPC response; warden reads
// such an answer to these methods alone as "result": null, and relays it
// so, rather than refusing a delete the agent has done.
var emptyResult = map[string]bool{
	"DeleteTaskPushNotificationConfig":    true,
	"tasks/pushNotificationConfig/delete": true,
}

// withNullResult is data, a JSON object, with "result": null added as its
// last member; the strict decoder then refuses it if it already had a
// result or an error.
func withNullResult(data []byte) []byte {
	t := bytes.TrimRight(data, " \t\r\n")
	if len(t) < 2 || t[len(t)-1] != '}' {
		return data
	}
	out := make([]byte, 0, len(t)+16)
	out = append(out, t[:len(t)-1]...)
	return append(out, `,"result":null}`...)
}

// checkAnswer validates one upstream answer: strictly decoded, a response,
// to the request that was sent.
func (h *Handler) checkAnswer(data []byte, id jsonrpc.ID, status string) (*jsonrpc.Message, *deny.Denial) {
	invalid := func(rule deny.Rule, reason string) *deny.Denial {
		return &deny.Denial{Stage: StageUpstream, Rule: rule, Code: jsonrpc.CodeUpstreamInvalid, Reason: reason}
	}
	m, err := jsonrpc.Decode(data, h.opts.Limits)
	switch {
	case err != nil:
		return nil, invalid(deny.RuleInvalid, "the upstream agent's answer ("+status+") was refused: "+err.Error())
	case m.Kind != jsonrpc.KindResponse:
		return nil, invalid(deny.RuleNotResponse, "the upstream agent sent a "+m.Kind.String()+", not a response")
	case m.ID != id:
		return nil, invalid(deny.RuleID, "the upstream agent answered id "+m.ID.String()+", not "+id.String())
	}
	return m, nil
}

// relayStream relays an SSE answer event by event: each event's data must
// be a valid response to the request; the first that is not ends the
// stream with an error event, as does a record that cannot be kept.
func (h *Handler) relayStream(ctx context.Context, w http.ResponseWriter, c *call, body io.Reader, maxBytes int, fail func(*deny.Denial, bool)) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	events := transport.NewEventReader(body, maxBytes)
	for {
		ev, err := events.Next()
		switch {
		case err == io.EOF:
			return
		case ctx.Err() != nil:
			_ = h.record(ctx, Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: c.msg.Method,
				ID: c.msg.ID, Decision: "deny", Stage: StageUpstream, Rule: string(deny.RuleCancelled), Reason: "the client went away"})
			return
		case err != nil:
			fail(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleEnded, Code: jsonrpc.CodeUpstreamUnavailable,
				Reason: "the upstream agent's stream broke off: " + err.Error()}, true)
			return
		}
		ans, d := h.checkAnswer(ev.Data, c.msg.ID, "event")
		if d != nil {
			d.Rule = deny.RuleInvalidEvent
			fail(d, true)
			return
		}
		e := Event{Upstream: h.opts.Name, Principal: c.principal, Direction: "upstream", Method: c.msg.Method, ID: c.msg.ID,
			TaskID: taskID(ans.Result, resultTaskPaths), Decision: "allow", Raw: ans.Raw}
		if err := h.record(ctx, e); err != nil {
			writeEvent(w, jsonrpc.EncodeErrorResponse(c.msg.ID, auditDenial(err).Error()))
			return
		}
		h.observe(ctx, c, ans)
		if writeEvent(w, ans.Raw) != nil {
			return
		}
	}
}

// writeEvent writes one SSE event carrying data and flushes it.
func writeEvent(w http.ResponseWriter, data []byte) error {
	if err := transport.WriteEvent(w, transport.Event{Data: data}); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// Where a task id is found: in request params, and in results (1.0 stream
// responses wrap the event; 0.3 results are the event itself).
var (
	requestTaskPaths = [][]string{{"id"}, {"message", "taskId"}, {"taskId"}}
	resultTaskPaths  = [][]string{{"task", "id"}, {"statusUpdate", "taskId"}, {"artifactUpdate", "taskId"},
		{"message", "taskId"}, {"taskId"}, {"id"}}
)

// requestTaskID is the task a request names: on the 1.0 push config
// methods params.id is the config's id, and the task is params.taskId.
func requestTaskID(method string, params []byte) string {
	if pushTaskMethods[method] {
		return taskID(params, pushTaskPaths)
	}
	return taskID(params, requestTaskPaths)
}

// taskID returns the first string found at one of paths in v.
func taskID(v []byte, paths [][]string) string {
	for _, p := range paths {
		if raw, ok := jsonrpc.Lookup(v, p...); ok {
			if s, ok := jsonrpc.String(raw); ok {
				return s
			}
		}
	}
	return ""
}
