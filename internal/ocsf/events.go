package ocsf

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// Call is what the gateway knows about one MCP operation (a request and its
// response, or a notification), as the event builders need it. Captured
// content (Arguments, Result) must already be redacted: builders copy it as
// is.
type Call struct {
	// SeedSpan is the seed span type of the operation (SpanToolInvoke, …), or
	// "" for methods the seed has no span for. SeedFields are the seed
	// fields the operation's span carried, for compliance enrichment; nil
	// means all of the span type's fields.
	SeedSpan   string
	SeedFields []string

	Method    string
	RequestID string // raw JSON-RPC id, "" for a notification
	Session   string // MCP session id
	Actor     string // the caller's identity (token subject), if known
	Client    string // the client application (clientInfo.name), if known
	ClientIP  string

	Upstream        string // the MCP server's name in warden's configuration
	UpstreamVersion string
	UpstreamURL     string
	Transport       string // the upstream leg: stdio | sse | streamable_http, "" if unknown
	ClientTransport string // the client leg, likewise
	ProtocolVersion string

	Tool        string
	Prompt      string
	ResourceURI string
	Arguments   json.RawMessage // captured tool arguments (or params), nil if not captured
	Result      json.RawMessage // captured result, nil if not captured

	ErrorCode    int64  // JSON-RPC error code, 0 if none
	ErrorMessage string // JSON-RPC error message or tool error text
	ToolError    bool   // CallToolResult.isError

	Denial *Denial // nil when the gateway relayed the call

	Approval string // requested | approved | denied, "" when no approval was involved
	Approver string

	ParamsHash string
	JTI        string
	AuditSeq   uint64 // the audit record's seq, 0 if none
	AuditHash  string

	TraceID, SpanID string // hex, "" if unknown
	Start, End      time.Time
}

// Denial is a gateway stage's refusal of a call.
type Denial struct {
	Stage, Rule, Invariant, Reason string
}

// Builder builds the events of a profile. Its zero value builds standard
// OCSF 1.8.0 events for an unnamed product; set Product.
type Builder struct {
	Profile Profile
	Product Product
	// Version is metadata.version: "" is SchemaVersion. The events are
	// the same in 1.8.0 and 1.9.0-dev.
	Version string
}

func (b Builder) version() string { return orDefault(b.Version, SchemaVersion) }

// Events returns the events for c: one activity event (API Activity, or the
// AITF Tool Execution form), followed by a Detection Finding when the
// gateway denied the call.
func (b Builder) Events(c *Call) []Event {
	var evs []Event
	if b.Profile == ProfileAITF {
		evs = append(evs, b.ToolExecution(c))
	} else {
		evs = append(evs, b.APIActivity(c))
	}
	if c.Denial != nil {
		evs = append(evs, b.DenialFinding(c))
	}
	return evs
}

func (b Builder) product() Product {
	p := b.Product
	if p.Name == "" {
		p.Name = "warden"
	}
	if p.VendorName == "" {
		p.VendorName = p.Name
	}
	return p
}

// activityUID is the metadata.uid of a call's activity event, which its
// finding names in finding_info.uid: the audit record when there is one,
// else the trace and span.
func activityUID(c *Call) string {
	if c.AuditSeq != 0 {
		return "audit:" + strconv.FormatUint(c.AuditSeq, 10)
	}
	if c.SpanID != "" {
		return c.TraceID + "-" + c.SpanID
	}
	return ""
}

// trace is the trace profile's object for c, nil without a trace. Its span
// is there only with its start and end, which OCSF requires of a span.
func trace(c *Call) *Trace { return traceIn(c, new(Trace), new(TraceSpan)) }

// traceIn is trace, in t and its span in ts.
func traceIn(c *Call, t *Trace, ts *TraceSpan) *Trace {
	if c.TraceID == "" {
		return nil
	}
	*t = Trace{UID: c.TraceID}
	if c.SpanID != "" && !c.Start.IsZero() {
		end := c.End
		if end.IsZero() {
			end = c.Start
		}
		*ts = TraceSpan{UID: c.SpanID, StartTime: epochMillis(c.Start), EndTime: epochMillis(end), Operation: method(c)}
		t.Span = ts
	}
	return t
}

// method is the name of c's operation, never empty: OCSF requires
// api.operation, and activity_name with activity_id 99.
func method(c *Call) string { return orDefault(c.Method, "unknown") }

// request is api.request for c: nil for a notification or a session's end,
// which have no JSON-RPC id, since OCSF requires request.uid. A string id is
// recorded as the string itself, without its JSON quotes, as OpenTelemetry's
// jsonrpc.request.id does (so the ids "7" and 7 look alike).
func request(c *Call) *APIRequest { return requestIn(c, new(APIRequest)) }

// requestIn is request, in r.
func requestIn(c *Call, r *APIRequest) *APIRequest {
	if c.RequestID == "" {
		return nil
	}
	*r = APIRequest{UID: RequestUID(c.RequestID), Data: c.Arguments}
	return r
}

// RequestUID returns a raw JSON-RPC id as OCSF records it: a JSON string
// unquoted, a number as it is.
func RequestUID(raw string) string {
	if strings.HasPrefix(raw, `"`) {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return raw
}

func eventTime(c *Call) int64 {
	if !c.End.IsZero() {
		return c.End.UnixMilli()
	}
	if !c.Start.IsZero() {
		return c.Start.UnixMilli()
	}
	return time.Now().UnixMilli()
}

// failed reports whether the call failed, and how to describe it.
func failed(c *Call) (bool, string) {
	switch {
	case c.Denial != nil:
		return true, "denied by " + c.Denial.Stage + " (" + c.Denial.Rule + ")"
	case c.ErrorCode != 0:
		return true, c.ErrorMessage
	case c.ToolError:
		return true, "tool_error"
	}
	return false, ""
}

// APIActivity is OCSF class 6003 with the ai_operation and trace profiles.
type APIActivity struct {
	Base
	Actor          Actor           `json:"actor"`
	API            API             `json:"api"`
	SrcEndpoint    Endpoint        `json:"src_endpoint"`
	DstEndpoint    *Endpoint       `json:"dst_endpoint,omitempty"`
	MessageContext *MessageContext `json:"message_context,omitempty"`
	AIModel        *AIModel        `json:"ai_model,omitempty"`
}

// activityParts are the objects an API Activity points to, allocated
// with it in one piece (APIActivity is built once per operation).
type activityParts struct {
	event      APIActivity
	user       User
	session    Session
	dst        Endpoint
	service    Service
	ctxService Service
	context    MessageContext
	request    APIRequest
	response   APIResponse
	trace      Trace
	span       TraceSpan
	unmapped   Unmapped
	profiles   [3]string // ai_operation, trace, and room for record_integrity (Chain.Attest)
}

// APIActivity builds the standard event for c.
func (b Builder) APIActivity(c *Call) *APIActivity {
	p := new(activityParts)
	e := &p.event
	*e = APIActivity{Base: Base{
		ActivityID: ActivityOther, ActivityName: method(c),
		CategoryUID: CategoryApplication, CategoryName: "Application Activity",
		Class: ClassAPIActivity, ClassName: "API Activity",
		TypeUID: ClassAPIActivity*100 + ActivityOther,
		Time:    eventTime(c), SeverityID: SeverityInformational, Severity: "Informational",
		StatusID: StatusSuccess, Status: "Success",
		Metadata: Metadata{Version: b.version(), Product: b.product(), Profiles: append(p.profiles[:0], "ai_operation"),
			UID: activityUID(c), CorrelationUID: c.Session},
		Trace: traceIn(c, &p.trace, &p.span),
	}}
	if e.Trace != nil {
		e.Metadata.Profiles = append(e.Metadata.Profiles, "trace")
	}
	if bad, detail := failed(c); bad {
		e.StatusID, e.Status, e.StatusDetail = StatusFailure, "Failure", detail
		e.SeverityID, e.Severity = SeverityLow, "Low"
		if c.Denial != nil {
			e.SeverityID, e.Severity = SeverityMedium, "Medium"
		}
	}
	// actor: at least one attribute, always.
	e.Actor.AppName = c.Client
	if c.Actor != "" {
		p.user = User{UID: c.Actor}
		e.Actor.User = &p.user
	}
	if c.Session != "" {
		p.session = Session{UID: c.Session}
		e.Actor.Session = &p.session
	}
	if e.Actor.AppName == "" && e.Actor.User == nil && e.Actor.Session == nil {
		e.Actor.AppName = "unknown"
	}
	e.SrcEndpoint = Endpoint{Name: orDefault(c.Client, "mcp-client"), IP: c.ClientIP}
	if c.Upstream != "" {
		p.dst = Endpoint{SvcName: c.Upstream}
		e.DstEndpoint = &p.dst
	}
	e.API = API{Operation: method(c), Request: requestIn(c, &p.request)}
	if c.Upstream != "" {
		p.service = Service{Name: c.Upstream, Version: c.UpstreamVersion}
		e.API.Service = &p.service
	}
	if c.ErrorCode != 0 || c.Result != nil || c.ToolError {
		p.response = APIResponse{Code: c.ErrorCode, ErrorMessage: c.ErrorMessage, Data: c.Result}
		e.API.Response = &p.response
		if c.ErrorCode != 0 {
			e.API.Response.Error = strconv.FormatInt(c.ErrorCode, 10)
		} else if c.ToolError {
			e.API.Response.Error = "tool_error"
		}
	}
	e.StatusCode = e.API.responseCode()
	if c.Upstream != "" || c.Session != "" {
		p.ctxService = Service{Name: orDefault(c.Upstream, "warden")}
		p.context = MessageContext{AIRoleID: AIRoleTool, UID: c.Session, Name: orDefault(c.Tool, c.Prompt), Service: &p.ctxService}
		e.MessageContext = &p.context
	}
	e.Unmapped = unmappedIn(c, &p.unmapped)
	if e.API.Request == nil && c.Arguments != nil {
		e.Unmapped.Params = c.Arguments // a notification's params: no request to hold them
	}
	return e
}

func (a *API) responseCode() string {
	if a.Response == nil || a.Response.Code == 0 {
		return ""
	}
	return strconv.FormatInt(a.Response.Code, 10)
}

// unmappedIn fills u with the MCP attributes OCSF has no place for, and
// the compliance tags, and returns it.
func unmappedIn(c *Call, u *Unmapped) *Unmapped {
	*u = Unmapped{
		Method: method(c), Session: c.Session, ProtocolVersion: c.ProtocolVersion,
		ServerTransport: c.Transport, ClientTransport: c.ClientTransport, ServerURL: c.UpstreamURL,
		ResourceURI: c.ResourceURI, ToolName: c.Tool, PromptName: c.Prompt,
		ParamsHash: c.ParamsHash, JTI: c.JTI, AuditHash: c.AuditHash, AuditSeq: c.AuditSeq,
		ApprovalStatus: c.Approval, Approver: c.Approver, Compliance: callTags(c),
	}
	if d := c.Denial; d != nil {
		u.Stage, u.Rule, u.Invariant = d.Stage, d.Rule, d.Invariant
	}
	return u
}

// callTags returns ComplianceTags of the controls of c's seed span and
// fields. The tags of a (span, fields) pair are the same for every call,
// and the pairs are few (the fields are set by code, not by peers), so
// each pair's tags are built once and shared, read-only, by every event
// that carries them: at most maxCachedTags pairs, then built per call.
func callTags(c *Call) map[Framework][]string {
	if c.SeedSpan == "" {
		return nil
	}
	n := len(c.SeedSpan)
	for _, f := range c.SeedFields {
		n += 1 + len(f)
	}
	var stack [512]byte // the key of a call's fields fits: no allocation
	key := stack[:0]
	if n > len(stack) {
		key = make([]byte, 0, n)
	}
	key = append(key, c.SeedSpan...)
	for _, f := range c.SeedFields {
		key = append(append(key, 0), f...)
	}
	tagsMu.RLock()
	tags, ok := cachedTags[string(key)] // no allocation for the lookup
	tagsMu.RUnlock()
	if ok {
		return tags
	}
	tags = ComplianceTags(Controls(c.SeedSpan, c.SeedFields...))
	tagsMu.Lock()
	if len(cachedTags) < maxCachedTags {
		cachedTags[string(key)] = tags
	}
	tagsMu.Unlock()
	return tags
}

// cachedTags maps a seed span and its fields, NUL-separated, to their
// compliance tags (callTags).
var (
	tagsMu     sync.RWMutex
	cachedTags = map[string]map[Framework][]string{} // guarded by tagsMu
)

const maxCachedTags = 4096

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AuditCall returns the Call an audit record describes, for
// `warden audit export --format ocsf`: the record's decision, stage and rule
// become a Denial or an error, and its seq and hash link the event to the
// chain. Content (arguments, results) is not in the audit log.
func AuditCall(r *audit.Record) *Call {
	c := &Call{
		Method: r.Method, RequestID: r.RequestID, Session: r.Session, Actor: r.Actor, Upstream: r.Upstream,
		Tool: r.Tool, Approver: r.Approver, ParamsHash: r.ParamsHash, JTI: r.JTI,
		AuditSeq: r.Seq, AuditHash: r.Hash, Start: r.Time, End: r.Time,
	}
	if r.Method == "" {
		// A record of the log itself (a loss record, a checkpoint): no
		// message, so it is named after its stage and rule.
		c.Method = orDefault(r.Stage, "audit") + "." + orDefault(r.Rule, "record")
	}
	if r.Method == "tools/call" {
		c.SeedSpan = SpanToolInvoke
		c.SeedFields = []string{"aitf.mcp.tool.name", "aitf.mcp.tool.server", "aitf.mcp.connection.id"}
	}
	if r.Approver != "" {
		// Whoever decided on a held call: approved it, unless the record is
		// the approval's refusal.
		c.Approval = "approved"
		if r.Decision == audit.Deny && strings.HasPrefix(r.Rule, "approval-") {
			c.Approval = "denied"
		}
		c.SeedFields = append(c.SeedFields, "mcp.tool.approval.status", "mcp.tool.approval.approver")
	}
	switch r.Decision {
	case audit.Deny:
		c.Denial = &Denial{Stage: r.Stage, Rule: r.Rule, Invariant: r.Invariant, Reason: r.Reason}
	case audit.Error:
		c.ErrorCode, c.ErrorMessage = -32603, "failed in "+r.Stage+" ("+r.Rule+")"
		if r.Reason != "" {
			c.ErrorMessage += ": " + r.Reason
		}
	}
	return c
}
