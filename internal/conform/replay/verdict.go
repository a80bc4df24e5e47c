package replay

// What counts as a refusal. Only an explicit refusal is Blocked; an answer
// that shows the target (or the wire to it) failed gives no verdict:
//
//	answer                                          verdict
//	a JSON-RPC error the target chose to send       refusal (Blocked), if the
//	  (-32600, -32001, -32000..-32099 other than      session's handshake was served:
//	  warden's upstream codes, any other code)         a target that refuses
//	                                                  everything refuses nothing
//	-32601 method not found, -32602 invalid params  no verdict: the call could not be
//	                                                  made (no such method or tool, or
//	                                                  arguments it would not take); it
//	                                                  says nothing of the principle
//	-32603 internal error                           no verdict: the target failed
//	-32700 parse error (to a well-formed request)   no verdict: it could not read JSON
//	warden's upstream codes -32032..-32035          no verdict: the upstream behind the
//	  and a transport's own stand-in answers           gateway, or the wire, failed
//	  (data.stage "upstream")
//	HTTP 4xx (but 404, 408, 429)                    refusal, before JSON-RPC
//	HTTP 404, 408, 429, 5xx                         no verdict: no endpoint, or no
//	                                                  service
//	no answer in time, a connection that ended,    no verdict (Inconclusive)
//	  a response with an id replay never sent,
//	  a line that is not JSON
//
// The MCP specification defines no error code for refusing an
// unauthorised, unconsented or premature call (its authorization is HTTP
// 401/403; its lifecycle says only that a client SHOULD NOT send requests
// before initialization completes), and JSON-RPC leaves -32000..-32099 to
// implementations, so any code the target chose is taken as its refusal,
// except the ones above, which JSON-RPC and MCP define for other things.

import (
	"encoding/json"
	"fmt"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// refused reports whether m, an answer to a well-formed request, is an
// explicit refusal. When it is not, why says what the answer shows instead
// ("" for a result: the request was served).
func refused(m *jsonrpc.Message) (ok bool, why string) {
	switch {
	case m == nil:
		return false, "no answer"
	case m.Error == nil:
		return false, ""
	}
	e := m.Error
	var d struct {
		Stage  string `json:"stage"`
		Rule   string `json:"rule"`
		Status int    `json:"status"`
	}
	_ = json.Unmarshal(e.Data, &d)
	if d.Stage == "upstream" && d.Status != 0 {
		switch s := d.Status; {
		case s/100 == 4 && s != 404 && s != 408 && s != 429:
			return true, ""
		case s == 404:
			return false, fmt.Sprintf("HTTP %d: nothing answers at that URL (or the session is gone); that refuses nothing", s)
		default:
			return false, fmt.Sprintf("HTTP %d: the server failed or would not serve at all; that refuses nothing", s)
		}
	}
	switch e.Code {
	case jsonrpc.CodeInternalError:
		return false, fmt.Sprintf("error %d (internal error): the target failed; that refuses nothing", e.Code)
	case jsonrpc.CodeParseError:
		return false, fmt.Sprintf("error %d (parse error) to a well-formed request: the target could not read JSON; that refuses nothing", e.Code)
	case jsonrpc.CodeMethodNotFound:
		return false, fmt.Sprintf("error %d (method not found): the call could not be made, which says nothing of the property", e.Code)
	case jsonrpc.CodeInvalidParams:
		return false, fmt.Sprintf("error %d (invalid params: no such tool, or arguments it would not take): the call could not be made, which says nothing of the property", e.Code)
	case jsonrpc.CodeUpstreamUnavailable, jsonrpc.CodeUpstreamInvalid, jsonrpc.CodeTimeout, jsonrpc.CodeSessionClosed:
		return false, fmt.Sprintf("error %d (%s): the server behind it failed, or the wire did; that refuses nothing", e.Code, clip(e.Message, 100))
	}
	if d.Stage == "upstream" {
		return false, fmt.Sprintf("error %d (%s): a stand-in for an answer that never came; that refuses nothing", e.Code, clip(e.Message, 100))
	}
	return true, ""
}

// noVerdict is the Inconclusive result for an answer that is neither a
// result nor a refusal.
func noVerdict(what string, m *jsonrpc.Message, steps ...Step) Result {
	_, why := refused(m)
	return inconclusive(what+": "+why, steps...)
}

// a2aFailed reports whether an A2A answer shows that the agent, or the
// wire, failed rather than answered: no answer at all, an HTTP 404, 408,
// 429 or 5xx without a JSON-RPC error, or a JSON-RPC error that says the
// agent failed (-32603, warden's upstream codes). An error whose data names
// a gateway stage other than "upstream" is warden's refusal, never a
// failure.
func a2aFailed(a *a2aAnswer) (bool, string) {
	if a == nil {
		return true, "no answer"
	}
	if e := a.err; e != nil && e.Code != 0 {
		if e.Data.Stage != "" && e.Data.Stage != "upstream" {
			return false, ""
		}
		switch e.Code {
		case jsonrpc.CodeInternalError, jsonrpc.CodeUpstreamUnavailable, jsonrpc.CodeUpstreamInvalid,
			jsonrpc.CodeTimeout, jsonrpc.CodeSessionClosed:
			return true, fmt.Sprintf("%s: the agent, or what is behind it, failed; that refuses nothing", a.summary())
		}
		if e.Data.Stage == "upstream" {
			return true, a.summary() + ": a stand-in for an answer that never came; that refuses nothing"
		}
		return false, ""
	}
	switch s := a.status; {
	case s == 404:
		return true, fmt.Sprintf("%s: nothing answers at that URL; that refuses nothing", a.summary())
	case s == 408 || s == 429 || s/100 == 5:
		return true, fmt.Sprintf("%s: the agent failed or would not serve at all; that refuses nothing", a.summary())
	case a.result == nil && a.err == nil && s/100 == 2:
		return true, fmt.Sprintf("%s without a JSON-RPC response: half an answer", a.summary())
	}
	return false, ""
}

// cardFailed is a2aFailed for a read of the agent card: no answer, or a
// 404, 408, 429 or 5xx that no gateway stage sent.
func cardFailed(a *cardAnswer) (bool, string) {
	if a == nil {
		return true, "the card read got no answer"
	}
	var rpc struct {
		Error *a2aError `json:"error"`
	}
	if json.Unmarshal(a.body, &rpc) == nil && rpc.Error != nil && rpc.Error.Data.Stage != "" && rpc.Error.Data.Stage != "upstream" {
		return false, ""
	}
	if s := a.status; s == 404 || s == 408 || s == 429 || s/100 == 5 {
		return true, "the card read got " + a.summary() + ": a failure, which refuses nothing"
	}
	return false, ""
}

// isUpstreamCode reports whether m is an error with one of warden's
// upstream codes (-32032..-32035): the gateway answering for an upstream
// that failed.
func isUpstreamCode(m *jsonrpc.Message) bool {
	if m == nil || m.Error == nil {
		return false
	}
	switch m.Error.Code {
	case jsonrpc.CodeUpstreamUnavailable, jsonrpc.CodeUpstreamInvalid, jsonrpc.CodeTimeout, jsonrpc.CodeSessionClosed:
		return true
	}
	return false
}

// gatewayStage is the stage of a gateway that refused m ("wire",
// "zero_trust", …), from its error data; "" when no stage other than
// "upstream" is named.
func gatewayStage(m *jsonrpc.Message) string {
	if m == nil || m.Error == nil {
		return ""
	}
	var d jsonrpc.Detail
	if json.Unmarshal(m.Error.Data, &d) != nil || d.Stage == "upstream" {
		return ""
	}
	return d.Stage
}
