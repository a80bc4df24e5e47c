package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/ocsf"
)

// Operation is what the gateway knows about one MCP operation: a request and
// its response, a notification, or a session's connect and disconnect. The
// gateway fills it per request/response pair and hands it to
// Recorder.Start and Recorder.End (or Recorder.Record). Raw JSON fields are
// the exact bytes the strict decoder validated; the Recorder reads them
// with internal/jsonrpc and never keeps them after End.
type Operation struct {
	// Span overrides the span type derived from Method. Set it to
	// SpanServerDisconnect when a session ends (there is no MCP method for
	// that); leave it zero otherwise.
	Span SpanType

	Method string
	// FromUpstream is true for requests the MCP server sent to the client
	// (sampling/createMessage, elicitation/create, roots/list).
	FromUpstream bool
	// AsClient is true when warden is itself the client of the operation
	// (conformance replay) rather than a gateway between a client and a
	// server. It decides the kind of a span with OpenTelemetry
	// names only: CLIENT for the requests warden sends, SERVER for those it
	// receives (FromUpstream), the reverse of the gateway's.
	AsClient     bool
	Notification bool   // no id, no response
	RequestID    string // the raw JSON-RPC id (`7`, `"abc"`), "" for notifications

	Session         string // MCP session id ("" for stdio and stateless sessions)
	ConnectionID    string // warden's connection id; Session when empty
	Transport       string // the client leg: TransportStdio, TransportSSE or TransportStreamableHTTP
	ServerTransport string // the upstream leg: TransportStdio or TransportStreamableHTTP, "" if unknown (OCSF records it)
	Upstream        string // the upstream's name in the configuration (the seed's server name)
	UpstreamURL     string // for network upstreams
	UpstreamVersion string // serverInfo.version, when known from initialize
	ProtocolVersion string // negotiated MCP revision, when known
	Actor           string // the caller's identity (token subject), if known
	Client          string // clientInfo.name, if known
	ClientIP        string

	Tool         string // params.name of tools/call (as the gateway decoded it)
	ResourceName string // display name of the resource read, if known

	Params    []byte // raw params of the request or notification, nil when absent
	Arguments []byte // raw params.arguments of tools/call, nil when absent
	Result    []byte // raw result of a successful response, nil otherwise
	Error     *RPCError

	// Denial is set when a gateway stage refused the call.
	Denial *Denial

	// Approval is the human approval status: "requested" (the call is
	// still held), "approved" or "denied"; "" when no approval was
	// involved. Approver is who decided. Held is when the call was held for
	// the decision and Decided when the decision came (Start and End when
	// zero): the span gets one mcp.tool.approval event at Held with status
	// requested and, for a decision, one at Decided with the status and the
	// approver.
	Approval      string
	Approver      string
	Held, Decided time.Time

	ParamsHash string // hex SHA-256 of the JCS arguments (zero-trust)
	JTI        string // token id consumed for the call
	AuditSeq   uint64 // the audit record written for the call, 0 if none
	AuditHash  string

	// Usage is the model usage of a sampling request, when the client
	// reported it (MCP has no standard field; the Recorder also reads
	// result.usage.{inputTokens,outputTokens} and result._meta.usage).
	Usage *Usage

	// Attributes are added to the span as they are (the security
	// processor's summary of its findings, for one).
	Attributes []attribute.KeyValue
	// Findings become OCSF Detection Findings (class 2004) next to the
	// operation's own events.
	Findings []ocsf.Finding
	// Events are added to the span as they are, under either convention
	// (one aitf.security.threat_detected per finding of the security
	// processor, for one).
	Events []Event

	Start, End time.Time
}

// RequestOperation returns the operation of a request or notification with
// method and raw params (valid JSON, or nil), as a party that is not the
// gateway sees it (the attack runner, conformance replay): for tools/call,
// Tool and Arguments are read from params. The caller fills in the rest.
func RequestOperation(method string, params []byte) *Operation {
	op := &Operation{Method: method, Params: params}
	if method == "tools/call" {
		op.Tool = lookupString(params, "name")
		op.Arguments, _ = lookup(params, "arguments")
	}
	return op
}

// SetResponse sets op's Result, or its Error, from the response m.
func (op *Operation) SetResponse(m *jsonrpc.Message) {
	if m.Error != nil {
		op.Error = &RPCError{Code: m.Error.Code, Message: m.Error.Message}
		return
	}
	op.Result = m.Result
}

// RPCError is the JSON-RPC error the call ended with (sent by the upstream,
// or by warden for a denial).
type RPCError struct {
	Code    int64
	Message string
}

// Denial is a gateway stage's refusal. Code is the JSON-RPC error code
// warden answered with (0 means jsonrpc.CodeDenied).
type Denial struct {
	Stage, Rule, Invariant, Reason string
	Code                           int64
}

// code returns the JSON-RPC code of the refusal.
func (d *Denial) code() int64 {
	if d.Code == 0 {
		return jsonrpc.CodeDenied
	}
	return d.Code
}

// Event is a span event: its name, its attributes, and when it happened
// (the operation's start when zero).
type Event struct {
	Name       string
	Attributes []attribute.KeyValue
	Time       time.Time
}

// Usage is token usage.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Transports, as the seed names them.
const (
	TransportStdio          = "stdio"
	TransportSSE            = "sse"
	TransportStreamableHTTP = "streamable_http"
)

// SpanType is one of the seed's eight span types, or SpanOther for methods
// the seed has no span for (ping, notifications, …: they get an OTel-named
// span only).
type SpanType int

// The span types.
const (
	SpanOther SpanType = iota
	SpanServerConnect
	SpanServerDisconnect
	SpanToolDiscover
	SpanToolInvoke
	SpanResourceRead
	SpanResourceSubscribe
	SpanPromptGet
	SpanSamplingRequest
)

// Seed returns the seed's name of the span type ("aitf.mcp.tool.invoke"),
// or "" for SpanOther.
func (t SpanType) Seed() string {
	switch t {
	case SpanServerConnect:
		return ocsf.SpanServerConnect
	case SpanServerDisconnect:
		return ocsf.SpanServerDisconnect
	case SpanToolDiscover:
		return ocsf.SpanToolDiscover
	case SpanToolInvoke:
		return ocsf.SpanToolInvoke
	case SpanResourceRead:
		return ocsf.SpanResourceRead
	case SpanResourceSubscribe:
		return ocsf.SpanResourceSubscribe
	case SpanPromptGet:
		return ocsf.SpanPromptGet
	case SpanSamplingRequest:
		return ocsf.SpanSamplingRequest
	}
	return ""
}

// spanType derives the span type of op.
func (op *Operation) spanType() SpanType {
	if op.Span != SpanOther {
		return op.Span
	}
	switch op.Method {
	case "initialize":
		return SpanServerConnect
	case "tools/list":
		return SpanToolDiscover
	case "tools/call":
		return SpanToolInvoke
	case "resources/read":
		return SpanResourceRead
	case "resources/subscribe":
		return SpanResourceSubscribe
	case "prompts/get":
		return SpanPromptGet
	case "sampling/createMessage":
		return SpanSamplingRequest
	}
	return SpanOther
}

// serverTransport is the transport of the server's leg: ServerTransport,
// or Transport when warden is itself the client (it has one leg only).
func (op *Operation) serverTransport() string {
	if op.ServerTransport == "" && op.AsClient {
		return op.Transport
	}
	return op.ServerTransport
}

func (op *Operation) connectionID() string {
	if op.ConnectionID != "" {
		return op.ConnectionID
	}
	return op.Session
}

// failed reports whether the operation ended in an error of any kind.
func (op *Operation) failed() bool {
	return op.Denial != nil || op.Error != nil || op.toolError()
}

// toolError reports a CallToolResult with isError true.
func (op *Operation) toolError() bool {
	if op.Result == nil {
		return false
	}
	v, ok := lookup(op.Result, "isError")
	return ok && string(v) == "true"
}
