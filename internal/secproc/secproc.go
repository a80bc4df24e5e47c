// Package secproc is warden's security processor: it inspects MCP traffic
// (tool calls, tool results, tool descriptions, resources and prompts) and
// reports findings in the four categories of the AITF seed's "Security
// Considerations" (unauthorized file access, command injection, data
// exfiltration, privilege escalation), plus injected instructions in tool
// outputs and descriptions.
//
//	Event ──► walk (every string of Arguments / Content / Description,
//	  │        with its JSON path and member name)
//	  ├─► file access      path-like values: decode, normalise, roots, symlinks
//	  ├─► command injection metacharacters in parameters, dangerous commands,
//	  │                     argument injection
//	  ├─► exfiltration     destinations vs the allowlist, secrets in outputs,
//	  │                     read-then-send (per-session state, LRU + TTL)
//	  ├─► privilege escalation  grants (tools, scopes), admin tools, role changes
//	  ├─► injected instructions  override phrases, role spoofing, hidden text,
//	  │                     control characters, base64-wrapped directives
//	  └─► custom rules     regular expressions, then CEL expressions
//	                       (which see what came before them)
//	                       ──► []Finding, each with the category's Action
//
// Each finding carries the Action its category is configured with (or its
// custom rule's own). The gateway acts on the strongest one (see
// Strongest):
//
//   - Deny: refuse the message. For a tools/call the client gets the
//     gateway's denial error with stage "security" and the finding's Rule;
//     for a result the result is withheld and replaced by that error; for a
//     tool description the tool is removed from the tools/list answer.
//   - RequireApproval: hold the call (or the result) for a person's decision,
//     as the zero-trust stage's hold_for_approval does.
//   - Flag: let it pass; record the finding as span attributes
//     (SpanAttributes, an "aitf.security.threat_detected" event) and as an
//     OCSF Detection Finding (class 2004, see OCSFFinding).
//
// Every finding, whatever its action, is reported as telemetry.
//
// Concurrency: a Processor is immutable after New except for its session
// table, which has its own mutex; Inspect may be called from any number of
// goroutines. The session table is bounded (Config.Sessions) in both size and
// age.
//
// # CEL rules
//
// A Rule with When is a CEL expression of type bool over these variables:
//
//	kind       string  tool_call, tool_result, tool_description, resource, prompt
//	server     string  the upstream's name (Event.Upstream)
//	tool       string  the tool's name; "" if none
//	subject    string  the authenticated caller; "" if unknown
//	arguments  map     the arguments when they are a JSON object (numbers are
//	                   doubles); {} otherwise
//	findings   list    what the detectors and the pattern rules found in the
//	                   event: maps of category, rule, severity and path
//	content    string  the string inspected (string rules)
//	path       string  its JSON path, "arguments.url", "content.content[0].text"
//
// A rule that reads content or path is a string rule: it is evaluated on
// every string of the event, as a Pattern is, and each match is a finding at
// that string (so quarantine can replace it). Any other rule is evaluated
// once per event, and a match is one finding without a path. For example:
//
//	{Name: "big-transfer", Category: PrivilegeEscalation,
//		When: `kind == "tool_call" && tool == "transfer" && has(arguments.amount) && arguments.amount > 1000`}
//	{Name: "launch-codes", Category: Exfiltration, Action: Deny,
//		When: `kind == "tool_result" && content.matches("(?i)launch codes?:")`}
//
// A rule's evaluations on one event are bounded by RuleCostLimit. A rule
// that cannot be evaluated (a missing key, a type error, the cost limit)
// gives a finding with action Deny: the processor fails secure. Guard
// optional arguments with has(arguments.x), and test kind first.
package secproc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Category is one family of findings.
type Category string

// The categories: the seed's four, and injected instructions.
const (
	FileAccess           Category = "file_access"
	CommandInjection     Category = "command_injection"
	Exfiltration         Category = "exfiltration"
	PrivilegeEscalation  Category = "privilege_escalation"
	InjectedInstructions Category = "prompt_injection"
)

// Categories lists every category, in a stable order.
var Categories = []Category{FileAccess, CommandInjection, Exfiltration, PrivilegeEscalation, InjectedInstructions}

// Action is what the gateway does about a finding. Stronger actions compare
// greater. It is the one action type of warden's relays: the MCP gateway
// takes flag, require_approval and deny (ParseAction), the AG-UI relay
// flag, quarantine and deny (aguigw.ParseAction).
type Action int

// The actions, weakest first. The zero value means "the category's default"
// in a Policy, and never appears in a Finding.
const (
	ActionDefault Action = iota
	Flag
	// ActionQuarantine replaces each offending string with an inert marker
	// (Quarantine) and lets the rest through: the AG-UI relay's action for
	// a stream it cannot hold. The processor's own findings never carry it.
	ActionQuarantine
	RequireApproval
	Deny
)

var actionNames = map[Action]string{Flag: "flag", ActionQuarantine: "quarantine", RequireApproval: "require_approval", Deny: "deny"}

// String returns the configuration spelling: flag, quarantine,
// require_approval, deny.
func (a Action) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return "default"
}

// ParseAction parses flag, require_approval or deny: the actions the MCP
// gateway takes.
func ParseAction(s string) (Action, error) {
	for _, a := range []Action{Flag, RequireApproval, Deny} {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("secproc: unknown action %q (want flag, require_approval or deny)", s)
}

// Severity is a finding's severity, numbered as OCSF severity_id.
type Severity int

// Severities (OCSF severity_id values).
const (
	Low      Severity = 2
	Medium   Severity = 3
	High     Severity = 4
	Critical Severity = 5
)

// String returns low, medium, high or critical.
func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	case Critical:
		return "critical"
	}
	return "unknown"
}

// ParseSeverity parses low, medium, high or critical.
func ParseSeverity(s string) (Severity, error) {
	for _, v := range []Severity{Low, Medium, High, Critical} {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("secproc: unknown severity %q (want low, medium, high or critical)", s)
}

// Kind says what an Event is.
type Kind string

// The kinds of event.
const (
	KindToolCall        Kind = "tool_call"        // a tools/call request
	KindToolResult      Kind = "tool_result"      // the result of a tools/call
	KindToolDescription Kind = "tool_description" // one tool of a tools/list answer
	KindResource        Kind = "resource"         // resources/read: params and result
	KindPrompt          Kind = "prompt"           // prompts/get: arguments and result
)

// Event is one thing to inspect.
type Event struct {
	Kind     Kind   `json:"kind"`
	Upstream string `json:"upstream,omitempty"`
	// Session identifies the client session; read-then-send is tracked per
	// (Upstream, Session). "" is one session (stdio).
	Session string `json:"session,omitempty"`
	// Subject is the authenticated caller, for grants; "" if unknown.
	Subject string `json:"subject,omitempty"`
	Tool    string `json:"tool,omitempty"`
	// Arguments is the raw JSON of a tools/call's params.arguments, of a
	// resources/read's params (its "uri") or of a prompts/get's arguments.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Content is the raw JSON of a result (CallToolResult, ReadResourceResult,
	// GetPromptResult), or text that is not JSON.
	Content json.RawMessage `json:"content,omitempty"`
	// Description is a tool's description (tool_description).
	Description string `json:"description,omitempty"`
	// Scopes are the scopes the call is made with (from its token), checked
	// against the subject's grant.
	Scopes []string `json:"scopes,omitempty"`
}

// Finding is one thing the processor found.
type Finding struct {
	Category Category
	// Rule names the detector and its rule, "file_access/traversal"; custom
	// rules are "custom/<name>".
	Rule     string
	Severity Severity
	Action   Action
	// Message is one sentence for a person.
	Message string
	// Evidence is a short excerpt of the offending value, with secrets
	// redacted and control characters escaped.
	Evidence string
	// Path is the JSON path of the offending value: "arguments.path",
	// "content.content[0].text", "description", "tool", "scopes".
	Path string
	// Confidence is between 0 and 1.
	Confidence float64
}

// Strongest returns the strongest action among findings, or 0 if there are
// none.
func Strongest(findings []Finding) Action {
	var a Action
	for _, f := range findings {
		a = max(a, f.Action)
	}
	return a
}

// Processor inspects events. It is safe for concurrent use.
type Processor struct {
	// Immutable after New.
	cfg      Config
	actions  map[Category]Action
	roots    []root
	hosts    hostList
	grants   []Grant
	rules    []compiledRule
	sessions *sessionTable // has its own mutex
}

// New checks cfg and returns a processor. It reports every problem of cfg at
// once.
func New(cfg Config) (*Processor, error) {
	rules, err := cfg.check()
	if err != nil {
		return nil, err
	}
	p := &Processor{cfg: cfg, actions: map[Category]Action{}, rules: rules}
	for _, c := range Categories {
		p.actions[c] = cfg.policy(c).action(c)
	}
	p.roots = newRoots(cfg.AllowedRoots, !cfg.SkipSymlinks)
	p.hosts = newHostList(cfg.AllowedHosts)
	p.grants = slices.Clone(cfg.Grants)
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	p.sessions = newSessionTable(cfg.Sessions.max(), cfg.Sessions.ttl(), now)
	return p, nil
}

// Inspect returns the findings for ev, in a stable order (by category, then
// as found). It updates the session's read-then-send state. Malformed JSON
// in Arguments or Content is inspected as text. ctx is checked between
// detectors: a cancelled inspection returns what it found so far.
func (p *Processor) Inspect(ctx context.Context, ev Event) []Finding {
	in := newInput(ev)
	var fs findings
	steps := []func(*input, *findings){p.fileAccess, p.commandInjection, p.exfiltration, p.privilege, p.injected, p.customRules}
	for _, step := range steps {
		if ctx.Err() != nil {
			break
		}
		step(in, &fs)
	}
	out := fs.list
	for i := range out {
		if out[i].Action == 0 {
			out[i].Action = p.actions[out[i].Category]
		}
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return slices.Index(Categories, a.Category) - slices.Index(Categories, b.Category)
	})
	return out
}

// findings collects the findings of one inspection, at most one per
// (category, rule, path).
type findings struct {
	list []Finding
}

func (fs *findings) add(f Finding) {
	for _, g := range fs.list {
		if g.Category == f.Category && g.Rule == f.Rule && g.Path == f.Path {
			return
		}
	}
	if f.Confidence == 0 {
		f.Confidence = 0.9
	}
	fs.list = append(fs.list, f)
}
