package secproc

// CEL rules: custom rules written as CEL expressions (cel.dev/cel-go).
//
//	Rule.When ──► compiled once, by New (errors carry their position in
//	  │           the expression); the checker decides the rule's scope:
//	  ├─ reads content or path ─► a string rule: evaluated on each string
//	  │                           of the event; each match is a finding at
//	  │                           that string, as a pattern's would be
//	  └─ reads neither ─────────► an event rule: evaluated once per event;
//	                              a match is one finding with no path
//
// One rule's evaluations on one event share a budget of RuleCostLimit, and
// each evaluation is cut off there. A rule that cannot be evaluated (a
// missing key, a value of the wrong type, the budget) gives one finding
// with action Deny: the message is refused, whatever the rule's own action.
//
// A compiled rule (cel.Program) is immutable and shared; the per-event
// state lives in a celEvent, which is made for one Inspect call.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// RuleCostLimit bounds the work of one CEL rule on one event: each
// evaluation is stopped when its cost reaches it, and so is the rule once
// the costs of its evaluations on the event's strings add up to it. The
// unit is CEL's: about one per operation, and 0.1 per byte for each pass
// of a string function over a string (multiplied by a tenth of the
// argument's length for contains, and by a quarter of the pattern's length
// for matches). It is enough for a string rule with a few matches of
// 40-character patterns over a 4 MiB message (the default
// gateway.limits.max_message_bytes), and stops a comprehension that would
// grow with the square of a message.
const RuleCostLimit = 10_000_000

// The variables of CEL rules.
const (
	varKind      = "kind"      // string: tool_call, tool_result, tool_description, resource, prompt
	varServer    = "server"    // string: the upstream's name
	varTool      = "tool"      // string: the tool's name ("" if none)
	varSubject   = "subject"   // string: the authenticated caller ("" if unknown)
	varArguments = "arguments" // map(string, dyn): the arguments, decoded (numbers are doubles)
	varFindings  = "findings"  // list(map(string, string)): what came before: category, rule, severity, path
	varContent   = "content"   // string: the string inspected (string rules)
	varPath      = "path"      // string: its JSON path (string rules)
)

// ruleEnv is the CEL environment of rules, built once.
var ruleEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varKind, cel.StringType),
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varSubject, cel.StringType),
		cel.Variable(varArguments, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varFindings, cel.ListType(cel.MapType(cel.StringType, cel.StringType))),
		cel.Variable(varContent, cel.StringType),
		cel.Variable(varPath, cel.StringType),
		ext.Strings(),
	)
})

// celRule is a compiled CEL rule.
type celRule struct {
	prg       cel.Program
	perString bool // the expression reads content or path
}

// compileWhen compiles the expression of rule i. The errors are
// *RuleError, with the position of each CEL error.
func compileWhen(i int, expr string) (*celRule, []error) {
	bad := func(line, col int, format string, args ...any) []error {
		return []error{&RuleError{Index: i, Field: "when", Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}}
	}
	env, err := ruleEnv()
	if err != nil {
		return nil, bad(0, 0, "CEL environment: %v", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		var errs []error
		for _, e := range iss.Errors() {
			msg := firstLine(e.Message)
			line, col := e.Location.Line(), e.Location.Column()+1
			if line < 1 || col < 1 {
				errs = append(errs, bad(0, 0, "CEL: %s", msg)...)
				continue
			}
			errs = append(errs, bad(line, col, "CEL, at %d:%d of the expression: %s", line, col, msg)...)
		}
		return nil, errs
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, bad(0, 0, "the expression must be a bool, not %s", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(RuleCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, bad(0, 0, "CEL: %v", err)
	}
	perString := false
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if len(ref.OverloadIDs) == 0 && (ref.Name == varContent || ref.Name == varPath) {
			perString = true
		}
	}
	return &celRule{prg: prg, perString: perString}, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// evalCEL evaluates r, a CEL rule, on ev and adds its findings to fs.
func (r *compiledRule) evalCEL(ev *celEvent, fs *findings) {
	budget := uint64(RuleCostLimit)
	name := "custom/" + r.Name
	if !r.cel.perString {
		ev.cur = nil
		match, err := r.cel.eval(ev, &budget)
		switch {
		case err != nil:
			fs.add(r.evalError(err, nil))
		case match:
			fs.add(Finding{Category: r.Category, Rule: name, Severity: r.severity(), Action: r.Action,
				Message: "custom rule " + r.Name + " matched", Confidence: 0.7})
		}
		return
	}
	for i := range ev.strs {
		s := &ev.strs[i]
		ev.cur = s
		match, err := r.cel.eval(ev, &budget)
		if err != nil {
			fs.add(r.evalError(err, s))
			return // the message is refused: the other strings do not matter
		}
		if match {
			fs.add(Finding{Category: r.Category, Rule: name, Severity: r.severity(), Action: r.Action,
				Message: "custom rule " + r.Name + " matched", Evidence: excerpt(s.value, -1, 0),
				Path: s.path, Confidence: 0.7})
		}
	}
}

// evalError is the finding of a rule that could not be evaluated (on s, if
// not nil): it denies the message.
func (r *compiledRule) evalError(err error, s *str) Finding {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	f := Finding{Category: r.Category, Rule: "custom/" + r.Name, Severity: r.severity(), Action: Deny,
		Message: "custom rule " + r.Name + " could not be evaluated (" + msg + "), so the message is refused", Confidence: 0.5}
	if s != nil {
		f.Message = "custom rule " + r.Name + " could not be evaluated on " + s.path + " (" + msg + "), so the message is refused"
		f.Evidence = excerpt(s.value, -1, 0)
	}
	return f
}

var errBudget = fmt.Errorf("its cost on the event reached the limit of %d", RuleCostLimit)

// eval runs the rule once, charging its cost to budget.
func (c *celRule) eval(ev *celEvent, budget *uint64) (bool, error) {
	out, det, err := c.prg.Eval(ev)
	var cost uint64
	if det != nil && det.ActualCost() != nil {
		cost = *det.ActualCost()
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return false, errBudget
		}
		return false, err
	}
	if cost > *budget {
		return false, errBudget
	}
	*budget -= cost
	match, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("the expression gave a %s, not a bool", out.Type().TypeName())
	}
	return match, nil
}

// celEvent is the activation of CEL rules for one event: the event's
// variables, and the string being inspected by a string rule.
type celEvent struct {
	in       *input
	strs     []str
	findings []map[string]string
	cur      *str // nil for an event rule

	args    any // decoded on first use
	argsSet bool
}

func newCELEvent(in *input, before []Finding) *celEvent {
	ev := &celEvent{in: in, strs: in.all(), findings: make([]map[string]string, len(before))}
	for i, f := range before {
		ev.findings[i] = map[string]string{"category": string(f.Category), "rule": f.Rule,
			"severity": f.Severity.String(), "path": f.Path}
	}
	return ev
}

// ResolveName implements interpreter.Activation.
func (a *celEvent) ResolveName(name string) (any, bool) {
	ev := &a.in.ev
	switch name {
	case varKind:
		return string(ev.Kind), true
	case varServer:
		return ev.Upstream, true
	case varTool:
		return ev.Tool, true
	case varSubject:
		return ev.Subject, true
	case varArguments:
		if !a.argsSet {
			a.args, a.argsSet = decodeArguments(ev.Arguments), true
		}
		return a.args, true
	case varFindings:
		return a.findings, true
	case varContent:
		if a.cur == nil {
			return "", true
		}
		return a.cur.value, true
	case varPath:
		if a.cur == nil {
			return "", true
		}
		return a.cur.path, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *celEvent) Parent() interpreter.Activation { return nil }

// decodeArguments decodes an event's arguments for CEL: a JSON object as a
// map (numbers as doubles), anything else (absent, null, text that is not
// JSON, JSON that is not an object) as an empty map. The strings of the
// latter are still each a rule's content.
func decodeArguments(raw json.RawMessage) any {
	var m map[string]any
	if jsonrpc.Unmarshal(raw, &m) != nil || m == nil {
		return map[string]any{}
	}
	return m
}
