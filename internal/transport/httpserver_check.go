package transport

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// CheckRebinding applies the listener's DNS-rebinding protection to r, for
// other endpoints served next to it. It returns the rule that refused the
// request ("host" or "origin") and why, or "" to accept.
func (h *HTTPServer) CheckRebinding(r *http.Request) (rule, msg string) {
	if !h.checkHost {
		return "", ""
	}
	return h.checkRebinding(r)
}

// checkRebinding applies the DNS-rebinding protection. It returns the rule
// that refused the request ("host" or "origin") and why, or "" to accept.
func (h *HTTPServer) checkRebinding(r *http.Request) (rule, msg string) {
	host := strings.ToLower(r.Host)
	if !isLoopbackName(hostName(host)) && !h.allowedHosts[host] && !h.allowedHosts[hostName(host)] {
		return "host", "host not allowed: " + quoteClient(r.Host)
	}
	origins := r.Header.Values("Origin")
	if len(origins) > 1 {
		return "origin", "more than one Origin header"
	}
	if len(origins) == 1 && !h.originAllowed(origins[0]) {
		return "origin", "origin not allowed: " + quoteClient(origins[0])
	}
	return "", ""
}

// originAllowed reports whether an Origin header value is a loopback origin
// or one of AllowedOrigins.
func (h *HTTPServer) originAllowed(origin string) bool {
	o := strings.ToLower(origin)
	if h.allowedOrigins[strings.TrimSuffix(o, "/")] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	return (u.Path == "" || u.Path == "/") && u.RawQuery == "" && isLoopbackName(hostName(u.Host))
}

// hostName strips the port from a lower-cased host[:port], keeping the
// brackets of an IPv6 literal.
func hostName(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return hostport
}

// isLoopbackName reports whether a lower-cased host name without port names
// the loopback interface in a way DNS cannot rebind.
func isLoopbackName(name string) bool {
	switch name {
	case "localhost", "127.0.0.1", "[::1]":
		return true
	}
	return false
}

// checkMessageHeaders compares the MCP headers of a POST with its single
// message, as the go-sdk server does (validateMcpHeaders and the SEP-2575
// checks of servePOST): a request whose _meta carries the protocol version
// needs an MCP-Protocol-Version header with the same value, and from
// 2026-07-28 on a request needs that _meta member, Mcp-Method equal to its
// method and, for tools/call, prompts/get and resources/read, Mcp-Name equal
// to params.name or params.uri. Repeated headers are refused
// outright, since peers disagree on which one counts. Every Mcp-Param-* value
// must be printable ASCII or valid Base64; whether it agrees with its argument
// needs the tool's input schema, which bindings supplies when the gateway has
// seen it. An empty Mcp-Param-* header is a header: the empty string argument
// travels as one (mcp.CheckParamHeaders).
func checkMessageHeaders(h http.Header, msgs []*jsonrpc.Message, bindings func(string) ([]mcp.ParamBinding, bool)) *jsonrpc.Error {
	for _, k := range []string{mcp.HeaderProtocolVersion, mcp.HeaderMethod, mcp.HeaderName} {
		if len(h.Values(k)) > 1 {
			return headerMismatch("repeated " + k + " header")
		}
	}
	if len(msgs) != 1 || !msgs[0].IsCall() {
		return nil
	}
	m := msgs[0]
	version := h.Get(mcp.HeaderProtocolVersion)
	if raw, ok := jsonrpc.Lookup(m.Params, "_meta", mcp.MetaProtocolVersion); ok {
		mv, _ := jsonrpc.String(raw)
		if version == "" {
			return headerMismatch(mcp.HeaderProtocolVersion + " header is required for requests carrying " + mcp.MetaProtocolVersion)
		}
		if mv != version {
			return headerMismatch(mcp.HeaderProtocolVersion + " header " + version + " does not match _meta " + mv)
		}
	}
	if !mcp.Stateless(version) {
		return nil
	}
	if _, ok := jsonrpc.Lookup(m.Params, "_meta", mcp.MetaProtocolVersion); !ok {
		return jsonrpc.Detail{Stage: stageListener, Rule: "request-meta"}.Errorf(jsonrpc.CodeInvalidParams,
			"missing _meta "+mcp.MetaProtocolVersion+" required at revision "+version)
	}
	switch method := h.Get(mcp.HeaderMethod); {
	case method == "":
		return headerMismatch("missing required " + mcp.HeaderMethod + " header")
	case method != m.Method:
		return headerMismatch(mcp.HeaderMethod + " header " + method + " does not match method " + m.Method)
	}
	var member string
	switch m.Method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		member = "name"
	case mcp.MethodResourcesRead:
		member = "uri"
	default:
		return nil
	}
	name := h.Get(mcp.HeaderName)
	if name == "" {
		return headerMismatch("missing required " + mcp.HeaderName + " header for " + m.Method)
	}
	raw, ok := jsonrpc.Lookup(m.Params, member)
	body, isString := jsonrpc.String(raw)
	if !ok || !isString {
		return headerMismatch("params." + member + " missing for " + m.Method)
	}
	if name != body {
		return headerMismatch(mcp.HeaderName + " header " + name + " does not match params." + member + " " + body)
	}
	if m.Method != mcp.MethodToolsCall {
		return nil
	}
	for k, vs := range h {
		if strings.HasPrefix(k, mcp.HeaderParamPrefix) {
			for _, v := range vs {
				if _, err := mcp.DecodeParamHeader(v); err != nil {
					return headerMismatch(k + " header: " + err.Error())
				}
			}
		}
	}
	if bindings == nil {
		return nil
	}
	if b, ok := bindings(body); ok {
		if err := mcp.CheckParamHeaders(h, m.Params, b); err != nil {
			return headerMismatch(err.Error())
		}
	}
	return nil
}

func headerMismatch(msg string) *jsonrpc.Error {
	return jsonrpc.Detail{Stage: stageListener, Rule: "header-mismatch"}.Errorf(mcp.CodeHeaderMismatch, "header mismatch: "+msg)
}

// messageHeader picks the headers that travel with each inbound message
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*, and for the
// gateway's stages DPoP and warden's own Warden-*), or nil.
func messageHeader(h http.Header) map[string][]string {
	var out map[string][]string
	for k, v := range h {
		ck := http.CanonicalHeaderKey(k)
		switch {
		case ck == mcp.HeaderProtocolVersion, ck == mcp.HeaderMethod, ck == mcp.HeaderName,
			strings.HasPrefix(ck, mcp.HeaderParamPrefix),
			ck == "Dpop", strings.HasPrefix(ck, "Warden-"): // for the zero-trust stage; the upstream client never forwards them
			if out == nil {
				out = make(map[string][]string)
			}
			if prev, ok := out[ck]; ok { // the same header under two spellings
				out[ck] = append(slices.Clip(prev), v...)
			} else {
				out[ck] = v // shared with the request, which is not changed after
			}
		}
	}
	return out
}

// cloneHeader copies h so each message owns its map.
func cloneHeader(h map[string][]string) map[string][]string {
	if h == nil {
		return nil
	}
	return http.Header(h).Clone()
}
