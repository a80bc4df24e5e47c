package replay

// The A2A adapter: JSON-RPC over HTTP POST, in the 1.0 vocabulary
// (SendMessage, ROLE_USER, parts {text}, header A2A-Version: 1.0) or the
// 0.3 one (message/send, "user", parts {kind: text}, no version header).
// IR actions carry 1.0 templates; the 0.3 profile translates them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// A2A versions the adapter speaks.
const (
	A2A10 = "1.0"
	A2A03 = "0.3"
)

// a2aMethods03 maps 1.0 JSON-RPC methods to their 0.3 names.
var a2aMethods03 = map[string]string{
	"SendMessage":          "message/send",
	"SendStreamingMessage": "message/stream",
	"GetTask":              "tasks/get",
	"CancelTask":           "tasks/cancel",
	"SubscribeToTask":      "tasks/resubscribe",
	"GetExtendedAgentCard": "agent/getAuthenticatedExtendedCard",
}

type a2aClient struct {
	t       *Target
	version string
	next    int
	o       Options
}

func newA2A(t *Target, o Options) (*a2aClient, error) {
	v := t.Profile
	if v == "" {
		v = A2A10
	}
	if v != A2A10 && v != A2A03 {
		return nil, fmt.Errorf("unknown A2A version %q (want 1.0 or 0.3)", v)
	}
	return &a2aClient{t: t, version: v, o: o}, nil
}

// a2aAnswer is what came back for one POST.
type a2aAnswer struct {
	status int
	result json.RawMessage
	err    *a2aError
}

// a2aError is a JSON-RPC error; Data carries warden's stage and rule.
type a2aError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Stage string `json:"stage"`
		Rule  string `json:"rule"`
	} `json:"data"`
}

// String is the error as reports show it: code, message, and the stage and
// rule that refused it when there are any.
func (e *a2aError) String() string {
	s := fmt.Sprintf("error %d: %s", e.Code, clip(e.Message, 120))
	if e.Data.Stage != "" {
		s += fmt.Sprintf(" [stage %s, rule %s]", e.Data.Stage, e.Data.Rule)
	}
	return s
}

func (a *a2aAnswer) summary() string {
	switch {
	case a == nil:
		return "no answer"
	case a.err != nil:
		return fmt.Sprintf("HTTP %d, %s", a.status, a.err)
	case a.result != nil:
		return fmt.Sprintf("HTTP %d, result: %s", a.status, clip(string(a.result), 160))
	}
	return fmt.Sprintf("HTTP %d", a.status)
}

func (a *a2aAnswer) served() bool { return a != nil && a.err == nil && a.result != nil }

// translate turns a 1.0 method and params into the client's version.
func (c *a2aClient) translate(method string, params map[string]any) (string, map[string]any) {
	c.next++
	params = fillA2A(params, c.next).(map[string]any)
	if c.version == A2A10 {
		return method, params
	}
	if m, ok := a2aMethods03[method]; ok {
		method = m
	}
	if msg, ok := params["message"].(map[string]any); ok {
		msg["kind"] = "message"
		switch msg["role"] {
		case "ROLE_USER":
			msg["role"] = "user"
		case "ROLE_AGENT":
			msg["role"] = "agent"
		}
		if parts, ok := msg["parts"].([]any); ok {
			for _, p := range parts {
				if pm, ok := p.(map[string]any); ok {
					switch {
					case pm["text"] != nil:
						pm["kind"] = "text"
					case pm["data"] != nil:
						pm["kind"] = "data"
					}
				}
			}
		}
	}
	return method, params
}

// fillA2A replaces the placeholders of an A2A template.
func fillA2A(v any, n int) any {
	switch x := v.(type) {
	case string:
		switch x {
		case "{id}":
			return fmt.Sprintf("conform-msg-%d", n)
		case "{task}", "{subtask}":
			return "warden conform replay: say hello"
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = fillA2A(vv, n)
		}
		if msg, ok := out["message"].(map[string]any); ok && msg["messageId"] == nil {
			msg["messageId"] = fmt.Sprintf("conform-msg-%d", n)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = fillA2A(x[i], n)
		}
		return out
	}
	return v
}

// call sends one JSON-RPC request built from a 1.0 template.
func (c *a2aClient) call(ctx context.Context, method string, params map[string]any, header http.Header) (json.RawMessage, *a2aAnswer, error) {
	method, params = c.translate(method, params)
	p, err := marshal(params)
	if err != nil {
		return nil, nil, err
	}
	body, err := marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": json.RawMessage(p)})
	if err != nil {
		return nil, nil, err
	}
	ans, err := c.post(ctx, c.operation(method, p), body, header)
	return body, ans, err
}

// operation is the telemetry of a request with method and raw params (nil
// for a body that need not be valid JSON); nil without spans.
func (c *a2aClient) operation(method string, params []byte) *telemetry.Operation {
	op := c.o.operation(c.t, method, params)
	if op != nil {
		op.RequestID = strconv.Itoa(c.next)
	}
	return op
}

// post sends body, a JSON-RPC request whose telemetry is op, and reads the
// answer. A nil answer with a nil error means none came.
func (c *a2aClient) post(ctx context.Context, op *telemetry.Operation, body []byte, header http.Header) (ans *a2aAnswer, err error) {
	sp := c.o.start(ctx, op)
	defer func() {
		switch {
		case err != nil:
			sp.unanswered("unsent")
		case ans == nil:
			sp.unanswered("none")
		case ans.err != nil && ans.err.Code != 0: // 0: an HTTP refusal without JSON-RPC, told by the status
			sp.httpAnswered(ans.status, nil, &telemetry.RPCError{Code: ans.err.Code, Message: ans.err.Message})
		default:
			sp.httpAnswered(ans.status, ans.result, nil)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, c.o.step())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.t.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.version == A2A10 {
		req.Header.Set("A2A-Version", A2A10)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := httpClient(c.t).Do(req)
	if err != nil {
		return nil, nil //nolint:nilerr // no answer: the oracle treats it as not served
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ans = &a2aAnswer{status: resp.StatusCode}
	var rpc struct {
		Result json.RawMessage `json:"result"`
		Error  *a2aError       `json:"error"`
	}
	if json.Unmarshal(data, &rpc) == nil {
		ans.result, ans.err = rpc.Result, rpc.Error
	} else if resp.StatusCode/100 != 2 {
		ans.err = &a2aError{Message: strings.TrimSpace(string(data))}
	}
	return ans, nil
}

// auth is the header of the model's C_authenticate step: the target's
// credential, when it has one.
func (c *a2aClient) auth() http.Header {
	if c.t.Bearer == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + c.t.Bearer}}
}

// authStep records how C_authenticate was realised.
func (c *a2aClient) authStep() Step {
	note := "Authorization: Bearer <the target's credential>"
	if c.t.Bearer == "" {
		note = "the target has no credential configured: none sent"
	}
	return Step{Action: "C_authenticate", Kind: "Protocol", Note: note}
}

// a2aProbes run in this order; P2 comes last because it changes the card
// a gateway in the path has pinned (it restores it when done).
var a2aProbes = []probe{
	{model: "a2a", property: "P1_identity", principle: "P1",
		clauses: []string{"A2A-1.0-SEC-02", "A2A-1.0-SEC-07", "A2A-1.0-SEC-08"}, run: a2aUnauthenticated},
	{model: "a2a", property: "P3_delegation", principle: "P3",
		clauses: []string{"A2A-1.0-SEC-03", "A2A-1.0-NS-01"}, run: a2aAmplifiedDelegation},
	{model: "a2a", property: "P5_consent", principle: "P5",
		clauses: []string{"A2A-1.0-OPS-01", "A2A-1.0-NS-02"}, run: a2aUnconsented},
	{model: "a2a", property: "WF_wire", principle: "WF",
		clauses: []string{"A2A-1.0-SEC-09"}, run: a2aDuplicateMembers},
	{model: "a2a", property: "P2_card", principle: "P2",
		clauses: []string{"A2A-1.0-CARD-01", "A2A-1.0-CARD-03"}, run: a2aForgedCard},
}

var a2aSendTemplate = `{"message":{"role":"ROLE_USER","parts":[{"text":"{task}"}],"messageId":"{id}"}}`

func a2aTemplate(tr *Trace, action, fallback string) (string, map[string]any) {
	method, raw := "SendMessage", fallback
	if tr != nil {
		for _, st := range tr.Steps {
			if st.Action == action && len(st.Message) > 0 {
				var m struct {
					Method string         `json:"method"`
					Params map[string]any `json:"params"`
				}
				if json.Unmarshal(st.Message, &m) == nil && m.Method != "" {
					return m.Method, m.Params
				}
			}
		}
	}
	var params map[string]any
	_ = json.Unmarshal([]byte(raw), &params)
	return method, params
}

// a2aUnauthenticated: SendMessage and GetExtendedAgentCard with no
// credentials. The server MUST authenticate every request (§7.4) and the
// extended card MUST require authentication (§13.3).
func a2aUnauthenticated(ctx context.Context, t *Target, tr *Trace, o Options) Result {
	c, err := newA2A(t, o)
	if err != nil {
		return unrealisable(err.Error())
	}
	method, params := a2aTemplate(tr, "C_send_message", a2aSendTemplate)
	sent, ans, err := c.call(ctx, method, params, nil)
	if err != nil {
		return unrealisable(err.Error())
	}
	steps := []Step{{Action: "C_send_message", Kind: "Protocol", Sent: sent, Answer: ans.summary(),
		Note: "no Authorization header (the C_authenticate step is left out)"}}
	sent2, card, _ := c.call(ctx, "GetExtendedAgentCard", map[string]any{}, nil)
	steps = append(steps, Step{Action: "probe: GetExtendedAgentCard", Sent: sent2, Answer: card.summary()})
	switch {
	case ans == nil:
		return inconclusive("the agent did not answer SendMessage", steps...)
	case authRefusal(ans):
		return Result{Outcome: Blocked, Steps: steps, Evidence: "SendMessage without credentials was refused (" + ans.summary() + ")"}
	}
	if failed, why := a2aFailed(ans); failed {
		return inconclusive("SendMessage without credentials got "+why, steps...)
	}
	ev := "SendMessage from an unauthenticated client was served (" + ans.summary() + ")"
	if !ans.served() {
		ev = "SendMessage from an unauthenticated client was processed, not refused for authentication (" + ans.summary() + ")"
	}
	if card.served() {
		ev += "; the extended agent card was returned without authentication"
	}
	return Result{Outcome: Reproduced, Steps: steps, Evidence: ev}
}

// a2aDuplicateMembers: a request whose "method" member appears twice. A
// strict parser refuses it (-32700); a lenient one picks a reading.
func a2aDuplicateMembers(ctx context.Context, t *Target, tr *Trace, o Options) Result {
	c, err := newA2A(t, o)
	if err != nil {
		return unrealisable(err.Error())
	}
	method, params := c.translate("SendMessage", mustParams(a2aSendTemplate))
	p, err := marshal(params)
	if err != nil {
		return unrealisable(err.Error())
	}
	body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"GetTask","method":%q,"params":%s}`, c.next, method, p))
	ans, _ := c.post(ctx, c.operation(method, nil), body, c.auth())
	steps := []Step{c.authStep(), {Action: "A_malformed", Kind: "Adversary", Sent: body, Answer: ans.summary()},
		{Action: "S_reject_malformed", Kind: "Protocol", Note: "oracle: a parse error, or no answer"}}
	switch {
	case ans != nil && (ans.err == nil || ans.err.Code != jsonrpc.CodeParseError) && authRefusal(ans):
		return unrealisable("refused for authentication before its parsing could be seen ("+ans.summary()+")", steps...)
	case ans == nil:
		return inconclusive("the request with duplicate members got no answer; a refusal is an answer (-32700 or HTTP 400), not silence", steps...)
	case ans.err != nil && ans.err.Code == -32700, ans.status == http.StatusBadRequest && ans.result == nil && ans.err == nil:
		return Result{Outcome: Blocked, Steps: steps, Evidence: "refused as malformed (" + ans.summary() + ")"}
	}
	if failed, why := a2aFailed(ans); failed {
		return inconclusive("the request with duplicate members got "+why, steps...)
	}
	return Result{Outcome: Reproduced, Steps: steps,
		Evidence: "a request with two \"method\" members was parsed and answered (" + ans.summary() + ")"}
}

func mustParams(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

// authRefusal reports whether an answer refuses the caller for want of
// authentication: HTTP 401 or 403, or an error that says so.
func authRefusal(a *a2aAnswer) bool {
	if a.status == http.StatusUnauthorized || a.status == http.StatusForbidden {
		return true
	}
	if a.err != nil {
		m := strings.ToLower(a.err.Message)
		return strings.Contains(m, "auth") || strings.Contains(m, "credential")
	}
	return false
}
