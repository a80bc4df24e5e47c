package ocsf

import (
	"slices"
	"strings"
)

// Framework is a compliance or threat framework of the seed's Compliance
// column.
type Framework string

// The frameworks the seed cites.
const (
	OWASPLLM   Framework = "owasp_llm"   // OWASP Top 10 for LLM Applications (2025)
	MITREATLAS Framework = "mitre_atlas" // MITRE ATLAS techniques
	NISTAIRMF  Framework = "nist_ai_rmf" // NIST AI Risk Management Framework subcategories
	EUAIAct    Framework = "eu_ai_act"   // EU AI Act articles
)

// Control is one entry of a framework, as the seed cites it: "LLM06",
// "AML.T0040", "GOVERN-1.2", "Art.14".
type Control struct {
	Framework Framework `json:"framework"`
	ID        string    `json:"id"`
}

// Name returns the control's title where warden knows it, else "".
func (c Control) Name() string { return controlNames[c.ID] }

var controlNames = map[string]string{
	"LLM01":     "Prompt Injection",
	"LLM02":     "Sensitive Information Disclosure",
	"LLM03":     "Supply Chain",
	"LLM05":     "Improper Output Handling",
	"LLM06":     "Excessive Agency",
	"LLM10":     "Unbounded Consumption",
	"AML.T0040": "AI Model Inference API Access",
	"AML.T0044": "Full AI Model Access",
	"AML.T0048": "External Harms",
	"AML.T0051": "LLM Prompt Injection",
	"Art.13":    "Transparency and provision of information to deployers",
	"Art.14":    "Human oversight",
}

// The seed's span types, by the names its headings use.
const (
	SpanServerConnect     = "aitf.mcp.server.connect"
	SpanServerDisconnect  = "aitf.mcp.server.disconnect"
	SpanToolDiscover      = "aitf.mcp.tool.discover"
	SpanToolInvoke        = "aitf.mcp.tool.invoke"
	SpanResourceRead      = "aitf.mcp.resource.read"
	SpanResourceSubscribe = "aitf.mcp.resource.subscribe"
	SpanPromptGet         = "aitf.mcp.prompt.get"
	SpanSamplingRequest   = "aitf.mcp.sampling.request"
)

func owasp(ids ...string) []Control { return controls(OWASPLLM, ids) }
func atlas(ids ...string) []Control { return controls(MITREATLAS, ids) }
func nist(ids ...string) []Control  { return controls(NISTAIRMF, ids) }
func euact(ids ...string) []Control { return controls(EUAIAct, ids) }

func controls(f Framework, ids []string) []Control {
	cs := make([]Control, len(ids))
	for i, id := range ids {
		cs[i] = Control{Framework: f, ID: id}
	}
	return cs
}

func join(parts ...[]Control) []Control { return slices.Concat(parts...) }

// seedControls is the seed's Compliance column: for each span type, each
// field (span attributes and the attributes of its events) and the controls
// cited for it. A field whose cell is "—" is present with no controls.
// TestControlsMatchTheSeed compares this table with the seed's text.
var seedControls = map[string]map[string][]Control{
	SpanServerConnect: {
		"aitf.mcp.server.name":       join(owasp("LLM06"), atlas("AML.T0040")),
		"aitf.mcp.server.transport":  atlas("AML.T0040"),
		"aitf.mcp.connection.id":     nist("GOVERN-1.2"),
		"aitf.mcp.server.version":    nist("MAP-1.1"),
		"aitf.mcp.server.url":        atlas("AML.T0040"),
		"aitf.mcp.protocol.version":  nist("MAP-1.1"),
		"mcp.capabilities.tools":     owasp("LLM06"),
		"mcp.capabilities.resources": nil,
		"mcp.capabilities.prompts":   nil,
		"mcp.capabilities.sampling":  nil,
		"mcp.capabilities.roots":     nil,
	},
	SpanServerDisconnect: {
		"aitf.mcp.server.name":   owasp("LLM06"),
		"aitf.mcp.connection.id": nist("GOVERN-1.2"),
	},
	SpanToolDiscover: {
		"aitf.mcp.server.name":   owasp("LLM06"),
		"aitf.mcp.tool.count":    owasp("LLM06"),
		"aitf.mcp.tool.names":    join(owasp("LLM06"), atlas("AML.T0048")),
		"aitf.mcp.connection.id": nist("GOVERN-1.2"),
	},
	SpanToolInvoke: {
		"aitf.mcp.tool.name":              join(owasp("LLM06"), atlas("AML.T0048")),
		"aitf.mcp.tool.server":            join(owasp("LLM06"), atlas("AML.T0040")),
		"aitf.mcp.connection.id":          nist("GOVERN-1.2"),
		"aitf.mcp.tool.input":             join(owasp("LLM01"), atlas("AML.T0051")),
		"aitf.mcp.tool.output":            owasp("LLM05", "LLM02"),
		"aitf.mcp.tool.response_error":    nist("MEASURE-2.5"),
		"aitf.mcp.tool.is_error":          nist("MEASURE-2.5"),
		"aitf.mcp.tool.duration_ms":       join(nist("MEASURE-2.5"), owasp("LLM10")),
		"aitf.mcp.server.transport":       atlas("AML.T0040"),
		"aitf.mcp.tool.approval_required": euact("Art.14"),
		"aitf.mcp.tool.approved":          euact("Art.14"),
		"mcp.tool.input.content":          owasp("LLM01"),
		"mcp.tool.output.content":         owasp("LLM05", "LLM02"),
		"mcp.tool.output.type":            nil,
		"mcp.tool.approval.status":        euact("Art.14"),
		"mcp.tool.approval.approver":      join(euact("Art.14"), nist("GOVERN-1.7")),
	},
	SpanResourceRead: {
		"aitf.mcp.resource.uri":        owasp("LLM02"),
		"aitf.mcp.server.name":         owasp("LLM06"),
		"aitf.mcp.connection.id":       nist("GOVERN-1.2"),
		"aitf.mcp.resource.name":       nil,
		"aitf.mcp.resource.mime_type":  nil,
		"aitf.mcp.resource.size_bytes": owasp("LLM10"),
	},
	SpanResourceSubscribe: {
		"aitf.mcp.resource.uri":  owasp("LLM02"),
		"aitf.mcp.server.name":   owasp("LLM06"),
		"aitf.mcp.connection.id": nist("GOVERN-1.2"),
	},
	SpanPromptGet: {
		"aitf.mcp.prompt.name":        owasp("LLM01"),
		"aitf.mcp.server.name":        owasp("LLM06"),
		"aitf.mcp.prompt.arguments":   owasp("LLM01"),
		"aitf.mcp.prompt.description": euact("Art.13"),
	},
	SpanSamplingRequest: {
		"aitf.mcp.server.name":              join(owasp("LLM06"), atlas("AML.T0048")),
		"aitf.mcp.sampling.model":           atlas("AML.T0044"),
		"aitf.mcp.sampling.max_tokens":      owasp("LLM10"),
		"aitf.mcp.sampling.include_context": owasp("LLM02"),
		"gen_ai.usage.input_tokens":         owasp("LLM10"),
		"gen_ai.usage.output_tokens":        owasp("LLM10"),
	},
}

// Controls returns the controls the seed cites for the given fields of a
// span type, without duplicates, ordered by framework and id. With no
// fields it returns every control of the span type. Fields the seed does not
// list for the span are ignored.
func Controls(span string, fields ...string) []Control {
	table := seedControls[span]
	var out []Control
	add := func(cs []Control) {
		for _, c := range cs {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	if len(fields) == 0 {
		for _, cs := range table {
			add(cs)
		}
	}
	for _, f := range fields {
		add(table[f])
	}
	slices.SortFunc(out, func(a, b Control) int {
		if c := strings.Compare(string(a.Framework), string(b.Framework)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// SeedFields returns the fields the seed lists for a span type (span and
// event attributes), sorted.
func SeedFields(span string) []string {
	var fs []string
	for f := range seedControls[span] {
		fs = append(fs, f)
	}
	slices.Sort(fs)
	return fs
}

// ComplianceTags groups controls by framework, the form events carry:
// {"owasp_llm": ["LLM01", "LLM06"], "mitre_atlas": [...], ...}.
func ComplianceTags(cs []Control) map[Framework][]string {
	if len(cs) == 0 {
		return nil
	}
	m := make(map[Framework][]string)
	for _, c := range cs {
		m[c.Framework] = append(m[c.Framework], c.ID)
	}
	return m
}

// DenialControls returns the controls a gateway stage's refusal bears on,
// by its stage and rule, for the Detection Finding of the refusal: what
// was refused, not every control the call's span could be tagged with (a
// tool-policy refusal is excessive agency, not prompt injection). nil for
// refusals that bear on no control (a malformed message, the session's
// state, the audit log, shutdown).
//
//	tool-policy, method-policy, authorize   LLM06
//	zero-trust                              LLM06; approval-* also Art.14
//	pin (a tool's definition changed)       LLM03
//	taint (data flowing to where it may not) LLM02
//	security, by the rule's category        as the security processor's
//	                                        findings (secproc.OCSFFinding)
func DenialControls(stage, rule string) []Control {
	switch stage {
	case "tool-policy", "method-policy", "authorize":
		return owasp("LLM06")
	case "zero-trust":
		if strings.HasPrefix(rule, "approval-") {
			return join(owasp("LLM06"), euact("Art.14"))
		}
		return owasp("LLM06")
	case "pin":
		return owasp("LLM03")
	case "taint":
		return owasp("LLM02")
	case "security":
		category, _, _ := strings.Cut(rule, "/")
		return securityControls(category)
	}
	return nil
}

// securityControls are the controls of a security processor category
// (secproc.Category); TestDenialControlsOfSecurityMatchTheFindings holds
// them to the processor's own.
func securityControls(category string) []Control {
	switch category {
	case "file_access", "privilege_escalation":
		return join(owasp("LLM06"), atlas("AML.T0053"))
	case "command_injection":
		return join(owasp("LLM05"), atlas("AML.T0053"))
	case "exfiltration":
		return join(owasp("LLM02"), atlas("AML.T0057"))
	case "prompt_injection":
		return join(owasp("LLM01"), atlas("AML.T0051"))
	}
	return nil
}
