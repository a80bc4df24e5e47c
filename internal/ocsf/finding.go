package ocsf

import (
	"encoding/json"
	"strconv"
	"time"
)

// DetectionFinding is OCSF class 2004 with the security_control profile.
type DetectionFinding struct {
	Base
	FindingInfo   FindingInfo `json:"finding_info"`
	ActionID      int         `json:"action_id,omitempty"`
	Action        string      `json:"action,omitempty"`
	DispositionID int         `json:"disposition_id,omitempty"`
	Disposition   string      `json:"disposition,omitempty"`
	ConfidenceID  int         `json:"confidence_id,omitempty"`
	IsAlert       bool        `json:"is_alert"`
	RiskLevelID   int         `json:"risk_level_id,omitempty"`
	RiskScore     int         `json:"risk_score,omitempty"`
	Attacks       []Attack    `json:"attacks,omitempty"`
	Policy        *Policy     `json:"policy,omitempty"`
	Evidences     []Evidence  `json:"evidences,omitempty"`
}

// FindingInfo is the finding_info object.
type FindingInfo struct {
	UID      string    `json:"uid"`
	Title    string    `json:"title"`
	Desc     string    `json:"desc,omitempty"`
	Types    []string  `json:"types,omitempty"`
	Analytic *Analytic `json:"analytic,omitempty"`
	Attacks  []Attack  `json:"attacks,omitempty"`
}

// Analytic names the rule that produced a finding.
type Analytic struct {
	Name   string `json:"name"`
	UID    string `json:"uid,omitempty"`
	TypeID int    `json:"type_id"` // 1 Rule
	Type   string `json:"type,omitempty"`
}

// Attack is an ATT&CK/ATLAS reference.
type Attack struct {
	Technique *Technique `json:"technique,omitempty"`
	Version   string     `json:"version,omitempty"`
}

// Technique is a technique reference.
type Technique struct {
	UID  string `json:"uid"`
	Name string `json:"name,omitempty"`
}

// Policy is the policy that decided.
type Policy struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	Desc string `json:"desc,omitempty"`
}

// Evidence is one evidences entry: the API call that was refused.
type Evidence struct {
	API *API `json:"api,omitempty"`
}

// Finding is a security finding to report as a Detection Finding: a
// gateway denial, or a finding of the security processor.
type Finding struct {
	UID         string // stable id; "" derives one from the call
	Title       string
	Description string
	Rule        string // the analytic: stage/rule or policy name
	Severity    int    // OCSF severity_id; 0 means Medium
	Blocked     bool   // the call was refused
	Quarantined bool   // the offending text was replaced and the rest relayed
	Controls    []Control
	RiskScore   int // 0..100
}

// DenialFinding returns the Detection Finding for a call the gateway
// denied. It panics if c.Denial is nil.
func (b Builder) DenialFinding(c *Call) *DetectionFinding {
	d := c.Denial
	f := Finding{
		Title:       "MCP " + method(c) + " denied by " + d.Stage,
		Description: d.Reason,
		Rule:        d.Stage + ": " + d.Rule,
		Severity:    SeverityMedium,
		Blocked:     true,
		Controls:    DenialControls(d.Stage, d.Rule),
	}
	if d.Invariant != "" {
		f.Rule += " (" + d.Invariant + ")"
	}
	return b.Finding(c, f)
}

// Finding builds the Detection Finding f about call c. Its finding_info.uid
// is f.UID, or the call's activity uid suffixed with the rule, so that
// consumers can join it to the API Activity event.
func (b Builder) Finding(c *Call, f Finding) *DetectionFinding {
	sev := f.Severity
	if sev == 0 {
		sev = SeverityMedium
	}
	uid := f.UID
	if uid == "" {
		uid = orDefault(activityUID(c), strconv.FormatInt(eventTime(c), 10)) + "/" + f.Rule
	}
	e := &DetectionFinding{
		Base: Base{
			ActivityID: 1, ActivityName: "Create",
			CategoryUID: CategoryFindings, CategoryName: "Findings",
			Class: ClassDetectionFinding, ClassName: "Detection Finding",
			TypeUID:    ClassDetectionFinding*100 + 1,
			Time:       eventTime(c),
			SeverityID: sev, Severity: severityName(sev),
			StatusID: 1, Status: "New",
			Message: f.Title,
			Metadata: Metadata{Version: b.version(), Product: b.product(), Profiles: []string{"security_control"},
				CorrelationUID: activityUID(c)},
		},
		FindingInfo: FindingInfo{UID: uid, Title: f.Title, Desc: f.Description,
			Analytic: &Analytic{Name: f.Rule, TypeID: 1, Type: "Rule"}},
		ConfidenceID: ConfidenceHigh,
		IsAlert:      true,
		RiskScore:    f.RiskScore,
		Policy:       &Policy{Name: f.Rule},
	}
	switch {
	case f.Blocked:
		e.ActionID, e.Action = ActionDenied, "Denied"
		e.DispositionID, e.Disposition = DispositionBlocked, "Blocked"
	case f.Quarantined:
		e.ActionID, e.Action = ActionModified, "Modified"
		e.DispositionID, e.Disposition = DispositionQuarantined, "Quarantined"
	default:
		e.ActionID, e.Action = ActionAllowed, "Allowed"
		e.DispositionID, e.Disposition = DispositionAllowed, "Allowed"
	}
	for _, ctl := range f.Controls {
		if ctl.Framework == MITREATLAS {
			e.Attacks = append(e.Attacks, Attack{Technique: &Technique{UID: ctl.ID, Name: ctl.Name()}})
		}
	}
	e.FindingInfo.Attacks = e.Attacks
	e.Evidences = []Evidence{{API: &API{Operation: method(c), Request: request(c)}}}
	e.Unmapped = unmappedIn(c, new(Unmapped))
	// Class 2004 does not take the trace profile: the trace ids go here, as
	// OpenTelemetry names them on a log record.
	if c.TraceID != "" {
		e.Unmapped.TraceID = c.TraceID
		e.Unmapped.SpanID = c.SpanID
	}
	// The finding's own controls, not the call's (unmappedIn copies those).
	e.Unmapped.Compliance = ComplianceTags(f.Controls)
	return e
}

func severityName(id int) string {
	switch id {
	case 1:
		return "Informational"
	case 2:
		return "Low"
	case 3:
		return "Medium"
	case 4:
		return "High"
	case 5:
		return "Critical"
	case 6:
		return "Fatal"
	}
	return "Unknown"
}

// ToolExecution is the seed's "OCSF class 7003 Tool Execution" as class
// tool_execution of warden's OCSF extension aitf (internal/ocsf/extension):
// class_uid 7006001 (extension uid 70, category 6 Application Activity,
// class 1), with the seed's attributes without their prefix. The events
// name the extension in metadata.extensions.
type ToolExecution struct {
	Base
	MCPServer        string                 `json:"mcp_server,omitempty"`
	MCPTransport     string                 `json:"mcp_transport,omitempty"`
	ConnectionID     string                 `json:"connection_id,omitempty"`
	Method           string                 `json:"method"`
	ToolName         string                 `json:"tool_name,omitempty"`
	ToolInput        json.RawMessage        `json:"tool_input,omitempty"`
	ToolOutput       json.RawMessage        `json:"tool_output,omitempty"`
	IsError          bool                   `json:"is_error"`
	ResponseError    string                 `json:"response_error,omitempty"`
	DurationMS       float64                `json:"duration_ms"`
	ApprovalRequired bool                   `json:"approval_required"`
	Approved         *bool                  `json:"approved,omitempty"`
	Approver         string                 `json:"approver,omitempty"`
	ResourceURI      string                 `json:"resource_uri,omitempty"`
	PromptName       string                 `json:"prompt_name,omitempty"`
	ComplianceTags   map[Framework][]string `json:"compliance_tags,omitempty"`
}

// The extension that defines ToolExecution (internal/ocsf/extension/extension.json).
const (
	ExtensionName    = "aitf"
	ExtensionUID     = 70
	ExtensionVersion = "1.0.0"
)

// AITF activity ids of Tool Execution, one per seed span type (warden's
// numbering: the seed gives the class but no activities), as the
// extension's class defines them.
var aitfActivities = map[string]struct {
	id   int
	name string
}{
	SpanToolInvoke:        {1, "Invoke"},
	SpanToolDiscover:      {2, "Discover"},
	SpanResourceRead:      {3, "Read"},
	SpanResourceSubscribe: {4, "Subscribe"},
	SpanPromptGet:         {5, "Get"},
	SpanSamplingRequest:   {6, "Sample"},
	SpanServerConnect:     {7, "Connect"},
	SpanServerDisconnect:  {8, "Disconnect"},
}

// ToolExecution builds the AITF Tool Execution event for c.
func (b Builder) ToolExecution(c *Call) *ToolExecution {
	act, ok := aitfActivities[c.SeedSpan]
	if !ok {
		act.id, act.name = ActivityOther, method(c)
	}
	e := &ToolExecution{
		Base: Base{
			ActivityID: act.id, ActivityName: act.name,
			CategoryUID: CategoryApplication, CategoryName: "Application Activity",
			Class: ClassToolExecution, ClassName: "Tool Execution",
			TypeUID:    ClassToolExecution*100 + act.id,
			Time:       eventTime(c),
			SeverityID: SeverityInformational, Severity: "Informational",
			StatusID: StatusSuccess, Status: "Success",
			Metadata: Metadata{Version: b.version(), Product: b.product(), UID: activityUID(c), CorrelationUID: c.Session,
				Extensions: []Extension{{Name: ExtensionName, UID: strconv.Itoa(ExtensionUID), Version: ExtensionVersion}}},
			Trace: trace(c),
		},
		MCPServer: c.Upstream, MCPTransport: c.Transport, ConnectionID: c.Session, Method: method(c),
		ToolName: c.Tool, ToolInput: c.Arguments, ToolOutput: c.Result,
		ResourceURI: c.ResourceURI, PromptName: c.Prompt,
		Approver: c.Approver,
	}
	if e.Trace != nil {
		e.Metadata.Profiles = []string{"trace"}
	}
	if bad, detail := failed(c); bad {
		// A refusal is an error too: the caller got an error, not a result.
		e.IsError = true
		e.StatusID, e.Status, e.StatusDetail = StatusFailure, "Failure", detail
		e.SeverityID, e.Severity = SeverityLow, "Low"
		if c.Denial != nil {
			e.SeverityID, e.Severity = SeverityMedium, "Medium"
		}
		e.ResponseError = orDefault(c.ErrorMessage, detail)
	}
	if !c.Start.IsZero() && !c.End.IsZero() {
		e.DurationMS = float64(c.End.Sub(c.Start)) / float64(time.Millisecond)
	}
	if c.Approval != "" {
		e.ApprovalRequired = true
		approved := c.Approval == "approved"
		e.Approved = &approved
	}
	e.ComplianceTags = callTags(c)
	return e
}
