// Package ocsf builds the OCSF events warden emits for each MCP operation:
// hand-written structs for the few classes it needs, builders from a Call
// (what the gateway knows about one operation), compliance enrichment, the
// audit chain's attestation (Chain), and a quick check of required fields.
// The test suite validates every event against the official OCSF schema
// with package ocsfschema.
//
// Two profiles:
//
//   - ProfileStandard: OCSF 1.8.0. Every operation is an API Activity
//     (class 6003, category 6) with the ai_operation and trace profiles:
//     activity_id 99 (Other) with the JSON-RPC method as activity_name,
//     actor, src_endpoint, api.operation, epoch-millisecond time, and
//     everything OCSF has no place for under unmapped (MCP attribute names,
//     compliance tags). A policy denial is also a Detection Finding (class
//     2004) with the security_control profile, linked to the activity by
//     its metadata.correlation_uid (= the activity's metadata.uid, which
//     finding_info.uid extends with the rule), with the trace ids under
//     unmapped (class 2004 does not take the trace profile).
//   - ProfileAITF: the seed's "OCSF Class 7003 Tool Execution" (AITF MCP
//     span conventions, MCP_ACTIVITY). 7003 is Process Remediation Activity
//     in OCSF, so the class is defined in warden's OCSF extension aitf
//     (internal/ocsf/extension, uid 70) as class_uid 7006001, which the
//     events name in metadata.extensions. Findings are the same 2004 events.
//
// Compliance enrichment maps each event to the controls of the seed's
// Compliance column (OWASP LLM Top 10, MITRE ATLAS, NIST AI RMF, EU AI Act)
// for the seed fields the operation carried; see Controls.
//
// Builders are pure functions of their input; events are plain values safe
// to marshal concurrently.
package ocsf

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the OCSF version of the events, unless a Builder says
// otherwise; SchemaVersionIntegrity is the version whose record_integrity
// profile carries the audit chain (Attest).
const (
	SchemaVersion          = "1.8.0"
	SchemaVersionIntegrity = "1.9.0-dev"
)

// Profile selects the shape of the events.
type Profile string

// The profiles warden emits.
const (
	ProfileStandard Profile = "standard"
	ProfileAITF     Profile = "aitf"
)

// Category, class and other OCSF enumeration values used here.
const (
	CategoryFindings    = 2
	CategoryApplication = 6

	ClassDetectionFinding = 2004
	ClassAPIActivity      = 6003
	// ClassToolExecution is the seed's "7003 Tool Execution" as class 1 of
	// category 6 in warden's extension aitf (uid 70): 70×100000 + 6×1000 + 1.
	ClassToolExecution = ExtensionUID*100000 + CategoryApplication*1000 + 1

	ActivityOther = 99

	SeverityInformational = 1
	SeverityLow           = 2
	SeverityMedium        = 3
	SeverityHigh          = 4

	StatusSuccess = 1
	StatusFailure = 2

	AIRoleTool = 3 // message_context.ai_role_id

	ActionAllowed  = 1 // security_control action_id
	ActionDenied   = 2
	ActionModified = 4 // the gateway changed what it relayed (a quarantine)

	DispositionAllowed     = 1
	DispositionBlocked     = 2
	DispositionQuarantined = 3

	ConfidenceHigh = 3
)

// Event is any event this package builds.
type Event interface {
	// ClassUID is the event's class_uid.
	ClassUID() int
}

// Base holds the attributes every OCSF event carries.
type Base struct {
	ActivityID   int      `json:"activity_id"`
	ActivityName string   `json:"activity_name,omitempty"`
	CategoryUID  int      `json:"category_uid"`
	CategoryName string   `json:"category_name,omitempty"`
	Class        int      `json:"class_uid"`
	ClassName    string   `json:"class_name,omitempty"`
	TypeUID      int      `json:"type_uid"`
	Time         int64    `json:"time"` // epoch milliseconds
	SeverityID   int      `json:"severity_id"`
	Severity     string   `json:"severity,omitempty"`
	StatusID     int      `json:"status_id,omitempty"`
	Status       string   `json:"status,omitempty"`
	StatusCode   string   `json:"status_code,omitempty"`
	StatusDetail string   `json:"status_detail,omitempty"`
	Message      string   `json:"message,omitempty"`
	Metadata     Metadata `json:"metadata"`
	Trace        *Trace   `json:"trace,omitempty"`
	// AttestationList is the record_integrity profile's (OCSF 1.9): see
	// Attest.
	AttestationList []Attestation `json:"attestation_list,omitempty"`
	// Unmapped carries what OCSF has no attribute for.
	Unmapped *Unmapped `json:"unmapped,omitempty"`
}

// Unmapped is the unmapped object of warden's events: the MCP attributes
// OCSF has no place for, under their OpenTelemetry and AITF names, and the
// compliance tags. Each field is one member, left out when empty; its
// name is in the field's comment. It is encoded as a JSON object with its
// members sorted by name, as encoding/json sorts a map's keys (see Map),
// by the hand-written encoder (encode.go), with no map built per event.
type Unmapped struct {
	Method          string // mcp.method.name
	Session         string // mcp.session.id
	ProtocolVersion string // mcp.protocol.version
	ServerTransport string // mcp.server.transport
	ClientTransport string // mcp.client.transport
	ServerURL       string // mcp.server.url
	ResourceURI     string // mcp.resource.uri
	ToolName        string // gen_ai.tool.name
	PromptName      string // gen_ai.prompt.name
	ParamsHash      string // warden.params_hash
	JTI             string // warden.jti
	AuditHash       string // warden.audit.hash
	AuditSeq        uint64 // warden.audit.seq
	ApprovalStatus  string // mcp.tool.approval.status
	Approver        string // mcp.tool.approval.approver
	Stage           string // warden.stage
	Rule            string // warden.rule
	Invariant       string // warden.invariant
	// Params is a notification's params (mcp.params): it has no
	// api.request to hold them.
	Params json.RawMessage // mcp.params
	// TraceID and SpanID are a Detection Finding's trace ids: class 2004
	// does not take the trace profile.
	TraceID, SpanID string // trace_id, span_id
	// Compliance is shared, read-only, by the events of calls with the
	// same seed span and fields (callTags).
	Compliance map[Framework][]string // compliance
	// Extra holds members of other names and kinds, encoded by
	// encoding/json; a name that is also a field's replaces the field.
	Extra map[string]any
}

// ClassUID implements Event.
func (b *Base) ClassUID() int { return b.Class }

// Metadata is the OCSF metadata object.
type Metadata struct {
	Version        string      `json:"version"`
	Product        Product     `json:"product"`
	Profiles       []string    `json:"profiles,omitempty"`
	Extensions     []Extension `json:"extensions,omitempty"`
	UID            string      `json:"uid,omitempty"`
	Sequence       uint64      `json:"sequence,omitempty"`
	CorrelationUID string      `json:"correlation_uid,omitempty"`
	LogName        string      `json:"log_name,omitempty"`
}

// Extension names a schema extension an event uses (metadata.extensions).
type Extension struct {
	Name    string `json:"name"`
	UID     string `json:"uid"`
	Version string `json:"version"`
}

// Product names the producer of an event.
type Product struct {
	Name       string `json:"name"`
	VendorName string `json:"vendor_name"`
	Version    string `json:"version,omitempty"`
}

// Trace is the trace profile's object: the join key to OpenTelemetry.
type Trace struct {
	UID  string     `json:"uid"`
	Span *TraceSpan `json:"span,omitempty"`
}

// TraceSpan is a span within a Trace.
type TraceSpan struct {
	UID       string `json:"uid"`
	StartTime int64  `json:"start_time,omitempty"` // epoch ms
	EndTime   int64  `json:"end_time,omitempty"`
	Operation string `json:"operation,omitempty"`
}

// Actor is who performed the activity.
type Actor struct {
	AppName string   `json:"app_name,omitempty"`
	User    *User    `json:"user,omitempty"`
	Session *Session `json:"session,omitempty"`
}

// User is an OCSF user.
type User struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// Session is an OCSF session.
type Session struct {
	UID string `json:"uid"`
}

// Endpoint is an OCSF network endpoint.
type Endpoint struct {
	Name    string `json:"name,omitempty"`
	SvcName string `json:"svc_name,omitempty"`
	IP      string `json:"ip,omitempty"`
	Port    int    `json:"port,omitempty"`
}

// API is the api object of API Activity.
type API struct {
	Operation string       `json:"operation"`
	Service   *Service     `json:"service,omitempty"`
	Request   *APIRequest  `json:"request,omitempty"`
	Response  *APIResponse `json:"response,omitempty"`
}

// Service names a service.
type Service struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// APIRequest is api.request.
type APIRequest struct {
	UID  string          `json:"uid,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// APIResponse is api.response.
type APIResponse struct {
	Code         int64           `json:"code,omitempty"`
	Error        string          `json:"error,omitempty"`
	ErrorMessage string          `json:"error_message,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
}

// MessageContext is the ai_operation profile's message_context object.
type MessageContext struct {
	AIRoleID int      `json:"ai_role_id"`
	Service  *Service `json:"service,omitempty"`
	Name     string   `json:"name,omitempty"`
	UID      string   `json:"uid,omitempty"`
}

// AIModel is the ai_operation profile's ai_model object.
type AIModel struct {
	AIProvider string `json:"ai_provider"`
	Name       string `json:"name"`
}

// epochMillis converts t to OCSF's timestamp_t (0 for the zero time).
func epochMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
