package secproc

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/ocsf"
	"go.opentelemetry.io/otel/attribute"
)

// EventThreatDetected is the span event AITF defines for a security
// finding (AITF events.md, the seed's generation: "aitf." prefixed). The
// gateway adds one per finding, with Finding.EventAttributes, to the span
// of the operation inspected.
const EventThreatDetected = "aitf.security.threat_detected"

// The attributes of EventThreatDetected (AITF), and warden's own.
const (
	AttrThreatType      = "aitf.security.threat_type"
	AttrOWASPCategory   = "aitf.security.owasp_category"
	AttrRiskLevel       = "aitf.security.risk_level"
	AttrRiskScore       = "aitf.security.risk_score"
	AttrConfidence      = "aitf.security.confidence"
	AttrDetectionMethod = "aitf.security.detection_method"
	AttrBlocked         = "aitf.security.blocked"
	AttrDetails         = "aitf.security.details"

	AttrCategory = "warden.security.category"
	AttrRule     = "warden.security.rule"
	AttrAction   = "warden.security.action"
	AttrPath     = "warden.security.path"

	// Span attributes summarising an operation's findings.
	AttrThreatDetected = "aitf.security.threat_detected"
	AttrFindingCount   = "warden.security.finding_count"
	AttrCategories     = "warden.security.categories"
	AttrRules          = "warden.security.rules"
)

// ThreatType returns the AITF threat_type and OWASP LLM category of f.
// The seed's categories map to AITF's table as: file access and privilege
// escalation → excessive_agency (LLM06); command injection →
// command_injection (LLM05, as AITF's own processor reports it); secrets in
// outputs → sensitive_data_exposure (LLM02); other exfiltration →
// data_exfiltration (LLM02); injected instructions → prompt_injection, or
// jailbreak for persona changes (LLM01).
func (f Finding) ThreatType() (threatType, owasp string) {
	switch f.Category {
	case FileAccess, PrivilegeEscalation:
		return "excessive_agency", "LLM06"
	case CommandInjection:
		return "command_injection", "LLM05"
	case Exfiltration:
		if strings.HasSuffix(f.Rule, "secret-in-output") {
			return "sensitive_data_exposure", "LLM02"
		}
		return "data_exfiltration", "LLM02"
	case InjectedInstructions:
		if strings.Contains(f.Rule, "persona-change") {
			return "jailbreak", "LLM01"
		}
		return "prompt_injection", "LLM01"
	}
	return "unknown", ""
}

// RiskScore is 0..100, from the severity weighted by the confidence.
func (f Finding) RiskScore() int {
	base := map[Severity]float64{Low: 30, Medium: 55, High: 80, Critical: 100}[f.Severity]
	return int(base*(0.5+f.Confidence/2) + 0.5)
}

func (f Finding) detectionMethod() string {
	r := f.Rule
	switch {
	case strings.Contains(r, "beyond-grant"), strings.Contains(r, "outside-roots"), strings.Contains(r, "not-allowed"),
		strings.Contains(r, "symlink"), strings.Contains(r, "admin-tool"):
		return "policy"
	case strings.Contains(r, "read-then-send"), strings.Contains(r, "secret-replay"):
		return "session"
	}
	return "pattern"
}

// EventAttributes returns the attributes of f's EventThreatDetected event.
func (f Finding) EventAttributes() []attribute.KeyValue {
	tt, owasp := f.ThreatType()
	details, _ := json.Marshal(map[string]any{"category": f.Category, "rule": f.Rule, "action": f.Action.String(),
		"path": f.Path, "message": f.Message, "evidence": f.Evidence})
	return []attribute.KeyValue{
		attribute.String(AttrThreatType, tt),
		attribute.String(AttrOWASPCategory, owasp),
		attribute.String(AttrRiskLevel, f.Severity.String()),
		attribute.Float64(AttrRiskScore, float64(f.RiskScore())),
		attribute.Float64(AttrConfidence, f.Confidence),
		attribute.String(AttrDetectionMethod, f.detectionMethod()),
		attribute.Bool(AttrBlocked, f.Action == Deny),
		attribute.String(AttrDetails, string(details)),
		attribute.String(AttrCategory, string(f.Category)),
		attribute.String(AttrRule, f.Rule),
		attribute.String(AttrAction, f.Action.String()),
		attribute.String(AttrPath, f.Path),
	}
}

// SpanAttributes returns the attributes summarising findings on the span
// of the operation inspected, or nil if there are none.
func SpanAttributes(findings []Finding) []attribute.KeyValue {
	if len(findings) == 0 {
		return nil
	}
	var cats, rules []string
	for _, f := range findings {
		if !slices.Contains(cats, string(f.Category)) {
			cats = append(cats, string(f.Category))
		}
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
	}
	return []attribute.KeyValue{
		attribute.Bool(AttrThreatDetected, true),
		attribute.Int(AttrFindingCount, len(findings)),
		attribute.StringSlice(AttrCategories, cats),
		attribute.StringSlice(AttrRules, rules),
		attribute.String(AttrAction, Strongest(findings).String()),
	}
}

// ocsfControls are the framework controls of each category, for the OCSF
// Detection Finding's attacks and compliance tags.
var ocsfControls = map[Category][]ocsf.Control{
	FileAccess:           {{Framework: ocsf.OWASPLLM, ID: "LLM06"}, {Framework: ocsf.MITREATLAS, ID: "AML.T0053"}},
	CommandInjection:     {{Framework: ocsf.OWASPLLM, ID: "LLM05"}, {Framework: ocsf.MITREATLAS, ID: "AML.T0053"}},
	Exfiltration:         {{Framework: ocsf.OWASPLLM, ID: "LLM02"}, {Framework: ocsf.MITREATLAS, ID: "AML.T0057"}},
	PrivilegeEscalation:  {{Framework: ocsf.OWASPLLM, ID: "LLM06"}, {Framework: ocsf.MITREATLAS, ID: "AML.T0053"}},
	InjectedInstructions: {{Framework: ocsf.OWASPLLM, ID: "LLM01"}, {Framework: ocsf.MITREATLAS, ID: "AML.T0051"}},
}

// OCSFFinding returns f as the input of ocsf.Builder.Finding, which makes
// the Detection Finding (class 2004) for the call it concerns. uid is the
// finding's id ("" lets the builder derive one from the call and rule).
func (f Finding) OCSFFinding(uid string) ocsf.Finding {
	tt, _ := f.ThreatType()
	return ocsf.Finding{
		UID:         uid,
		Title:       "warden security processor: " + strings.ReplaceAll(tt, "_", " ") + " (" + f.Rule + ")",
		Description: f.Message + "; at " + f.Path + ": " + f.Evidence,
		Rule:        "security: " + f.Rule,
		Severity:    int(f.Severity),
		Blocked:     f.Action == Deny,
		Quarantined: f.Action == ActionQuarantine,
		Controls:    slices.Clone(ocsfControls[f.Category]),
		RiskScore:   f.RiskScore(),
	}
}
