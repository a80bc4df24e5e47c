package ocsf

// The unmapped object, typed (Unmapped): its members are written straight
// from the fields, in name order, with no map[string]any built, filled
// and sorted per event. Map is the same object as a map, which
// encoding/json encodes to the same bytes (TestAppendJSONIsEncodingJSON).

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// The names of Unmapped's members.
const (
	keyCompliance      = "compliance"
	keyPromptName      = "gen_ai.prompt.name"
	keyToolName        = "gen_ai.tool.name"
	keyClientTransport = "mcp.client.transport"
	keyMethod          = "mcp.method.name"
	keyParams          = "mcp.params"
	keyProtocolVersion = "mcp.protocol.version"
	keyResourceURI     = "mcp.resource.uri"
	keyServerTransport = "mcp.server.transport"
	keyServerURL       = "mcp.server.url"
	keySession         = "mcp.session.id"
	keyApprover        = "mcp.tool.approval.approver"
	keyApprovalStatus  = "mcp.tool.approval.status"
	keySpanID          = "span_id"
	keyTraceID         = "trace_id"
	keyAuditHash       = "warden.audit.hash"
	keyAuditSeq        = "warden.audit.seq"
	keyInvariant       = "warden.invariant"
	keyJTI             = "warden.jti"
	keyParamsHash      = "warden.params_hash"
	keyRule            = "warden.rule"
	keyStage           = "warden.stage"
)

// Map returns u as a map from member name to value (string, uint64,
// json.RawMessage, map[Framework][]string, and Extra's values), nil for a
// nil u. The map is new; its compliance value is u's, shared.
func (u *Unmapped) Map() map[string]any {
	if u == nil {
		return nil
	}
	m := make(map[string]any, 24)
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	if u.Compliance != nil {
		m[keyCompliance] = u.Compliance
	}
	set(keyPromptName, u.PromptName)
	set(keyToolName, u.ToolName)
	set(keyClientTransport, u.ClientTransport)
	set(keyMethod, u.Method)
	if u.Params != nil {
		m[keyParams] = u.Params
	}
	set(keyProtocolVersion, u.ProtocolVersion)
	set(keyResourceURI, u.ResourceURI)
	set(keyServerTransport, u.ServerTransport)
	set(keyServerURL, u.ServerURL)
	set(keySession, u.Session)
	set(keyApprover, u.Approver)
	set(keyApprovalStatus, u.ApprovalStatus)
	set(keySpanID, u.SpanID)
	set(keyTraceID, u.TraceID)
	set(keyAuditHash, u.AuditHash)
	if u.AuditSeq != 0 {
		m[keyAuditSeq] = u.AuditSeq
	}
	set(keyInvariant, u.Invariant)
	set(keyJTI, u.JTI)
	set(keyParamsHash, u.ParamsHash)
	set(keyRule, u.Rule)
	set(keyStage, u.Stage)
	for k, v := range u.Extra {
		m[k] = v
	}
	return m
}

// MarshalJSON implements json.Marshaler: Map as encoding/json encodes a
// map, HTML escaping off (json.Marshal escapes the result afterwards). The
// events' own encoder does not call it.
func (u *Unmapped) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(u.Map()); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// empty reports whether u has no member.
func (u *Unmapped) empty() bool {
	if u == nil {
		return true
	}
	return len(u.Extra) == 0 && u.Compliance == nil && u.Params == nil && u.AuditSeq == 0 &&
		u.Method == "" && u.Session == "" && u.ProtocolVersion == "" && u.ServerTransport == "" &&
		u.ClientTransport == "" && u.ServerURL == "" && u.ResourceURI == "" && u.ToolName == "" &&
		u.PromptName == "" && u.ParamsHash == "" && u.JTI == "" && u.AuditHash == "" &&
		u.ApprovalStatus == "" && u.Approver == "" && u.Stage == "" && u.Rule == "" &&
		u.Invariant == "" && u.TraceID == "" && u.SpanID == ""
}

// unmappedWriter writes an Unmapped's members in name order, Extra's
// merged in among the fields'.
type unmappedWriter struct {
	e     *encoder
	extra map[string]any
	names []string // Extra's names not yet written, sorted
}

// before writes Extra's members named before k, and reports whether Extra
// has k itself (which replaces the field).
func (w *unmappedWriter) before(k string) bool {
	for len(w.names) > 0 && w.names[0] < k {
		w.member(w.names[0])
		w.value(w.extra[w.names[0]])
		w.names = w.names[1:]
	}
	return len(w.names) > 0 && w.names[0] == k
}

func (w *unmappedWriter) member(k string) {
	e := w.e
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = appendString(e.b, k)
	e.b = append(e.b, ':')
}

func (w *unmappedWriter) value(v any) {
	w.e.value(v)
	w.e.first = false
}

func (w *unmappedWriter) str(k, v string) {
	if w.before(k) || v == "" {
		return
	}
	w.member(k)
	w.e.b = appendString(w.e.b, v)
}

// unmappedObject appends u (not empty) as a JSON object.
func (e *encoder) unmappedObject(u *Unmapped) {
	w := unmappedWriter{e: e, extra: u.Extra}
	if len(u.Extra) > 0 {
		var names [8]string
		w.names = names[:0]
		for k := range u.Extra {
			w.names = append(w.names, k)
		}
		slices.Sort(w.names)
	}
	e.open()
	if !w.before(keyCompliance) && u.Compliance != nil {
		w.member(keyCompliance)
		e.tags(u.Compliance)
	}
	w.str(keyPromptName, u.PromptName)
	w.str(keyToolName, u.ToolName)
	w.str(keyClientTransport, u.ClientTransport)
	w.str(keyMethod, u.Method)
	if !w.before(keyParams) && u.Params != nil {
		w.member(keyParams)
		e.rawValue(u.Params)
	}
	w.str(keyProtocolVersion, u.ProtocolVersion)
	w.str(keyResourceURI, u.ResourceURI)
	w.str(keyServerTransport, u.ServerTransport)
	w.str(keyServerURL, u.ServerURL)
	w.str(keySession, u.Session)
	w.str(keyApprover, u.Approver)
	w.str(keyApprovalStatus, u.ApprovalStatus)
	w.str(keySpanID, u.SpanID)
	w.str(keyTraceID, u.TraceID)
	w.str(keyAuditHash, u.AuditHash)
	if !w.before(keyAuditSeq) && u.AuditSeq != 0 {
		w.member(keyAuditSeq)
		e.b = strconv.AppendUint(e.b, u.AuditSeq, 10)
	}
	w.str(keyInvariant, u.Invariant)
	w.str(keyJTI, u.JTI)
	w.str(keyParamsHash, u.ParamsHash)
	w.str(keyRule, u.Rule)
	w.str(keyStage, u.Stage)
	for _, k := range w.names { // after the last field's name
		w.member(k)
		w.value(u.Extra[k])
	}
	e.first = false
	e.close()
}
