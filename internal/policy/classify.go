// Package policy evaluates the CEL rules of warden's configuration on tool
// calls. Its first use is classification: rules give each call a data
// classification level, 1 (most sensitive) to 5, and the level selects the
// tier of the Zero-Trust Tool Invocation Standard whose requirements the
// gateway enforces:
//
//	level 1    → Tier 3: Tier 2, and a client signature by a pinned key
//	level 2..3 → Tier 2: token, DPoP, and an audit record (a configuration
//	             with such a rule and no audit log is refused)
//	level 4..5 → Tier 1: token bound to the exact parameters, used once
//	no rule    → unclassified: only the upstream's require_* lists apply
//
// A rule is a CEL expression of type bool over these variables:
//
//	server   string               the upstream's name
//	tool     map: name string, annotations map (as the upstream's tools/list
//	         declared them; {} when not seen)
//	args     the call's arguments (JSON: numbers are doubles)
//	subject  string               the principal the call acts for
//
// For example:
//
//	rules := []policy.Rule{
//		{Name: "big-transfer", Level: 1, When: `tool.name == "transfer_funds" && args.amount > 10000`},
//		{Name: "destructive", Level: 2, When: `tool.annotations.destructiveHint == true`},
//	}
//	c, err := policy.NewClassifier(rules)
//	res, err := c.Classify(policy.Input{Server: "pay", Tool: "transfer_funds", Arguments: args})
//
// When several rules match, the most sensitive level wins, whatever their
// order. A rule that cannot be evaluated for a call (a missing key, a type
// error, its cost limit) fails the classification, and the gateway refuses
// the call: a stage that cannot decide denies. Write has(args.x) guards for
// optional arguments.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Levels and tiers.
const (
	MostSensitive  = 1
	LeastSensitive = 5
)

// TierOf returns the tier of the standard that level requires: 3 for level
// 1, 2 for levels 2 and 3, 1 for levels 4 and 5, and 0 for unclassified.
func TierOf(level int) int {
	switch {
	case level <= 0:
		return 0
	case level == 1:
		return 3
	case level <= 3:
		return 2
	default:
		return 1
	}
}

// Rule is one classification rule of the configuration.
type Rule struct {
	Name  string // shown in refusals and the audit log; "" means "rule N"
	Level int    // 1..5
	When  string // CEL, of type bool
}

// Input is what rules see of one tools/call.
type Input struct {
	Server, Tool, Subject string
	// Annotations are the tool's annotations from the upstream's tools/list;
	// nil means none seen.
	Annotations map[string]any
	// Arguments is the raw JSON of params.arguments; nil means {}. It is
	// decoded only if a rule reads args.
	Arguments []byte
}

// Result is the classification of one call.
type Result struct {
	Level int    // 0: no rule matched
	Rule  string // the name of the rule that set Level
}

// Tier is TierOf(r.Level).
func (r Result) Tier() int { return TierOf(r.Level) }

// costLimit bounds one rule's evaluation. Rules on the hot path of every
// tool call must be cheap; this refuses a comprehension over a huge
// argument list rather than let it stall the gateway.
const costLimit = 100_000

// Classifier evaluates a fixed set of rules. It is immutable after
// NewClassifier and safe for concurrent use.
type Classifier struct {
	rules []compiled // by level, most sensitive first; stable for equal levels
}

type compiled struct {
	name  string
	level int
	prg   cel.Program
}

// env is the CEL environment of classification rules.
func env() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("server", cel.StringType),
		cel.Variable("tool", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("args", cel.DynType),
		cel.Variable("subject", cel.StringType),
	)
}

// RuleError is a rule that does not compile, or is not a bool expression.
type RuleError struct {
	Index int    // in the list given to NewClassifier
	Field string // "level" or "when"
	Msg   string
}

func (e *RuleError) Error() string { return fmt.Sprintf("[%d].%s: %s", e.Index, e.Field, e.Msg) }

// NewClassifier compiles rules. The error, if any, is an errors.Join of
// *RuleError, one per bad rule.
func NewClassifier(rules []Rule) (*Classifier, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	c := &Classifier{}
	var errs []error
	for i, r := range rules {
		if r.Level < MostSensitive || r.Level > LeastSensitive {
			errs = append(errs, &RuleError{i, "level", fmt.Sprintf("level must be 1 (most sensitive) to 5, not %d", r.Level)})
		}
		prg, msg := compile(e, r.When)
		if msg != "" {
			errs = append(errs, &RuleError{i, "when", msg})
			continue
		}
		name := r.Name
		if name == "" {
			name = fmt.Sprintf("rule %d", i)
		}
		c.rules = append(c.rules, compiled{name: name, level: r.Level, prg: prg})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(c.rules, func(a, b compiled) int { return a.level - b.level })
	return c, nil
}

// compile checks one expression; msg says what is wrong with it.
func compile(e *cel.Env, expr string) (cel.Program, string) {
	if strings.TrimSpace(expr) == "" {
		return nil, "the rule needs a CEL expression"
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, "CEL: " + iss.Err().Error()
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, "the expression must be a bool, not " + ast.OutputType().String()
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, "CEL: " + err.Error()
	}
	return prg, ""
}

// Len returns the number of rules.
func (c *Classifier) Len() int { return len(c.rules) }

// Classify returns the most sensitive level whose rule matches in. An error
// names the rule that could not be evaluated; the caller must then treat
// the call as unclassifiable and refuse it.
func (c *Classifier) Classify(in Input) (Result, error) {
	if c == nil || len(c.rules) == 0 {
		return Result{}, nil
	}
	annotations := in.Annotations
	if annotations == nil {
		annotations = map[string]any{}
	}
	var args any
	var argsErr error
	decoded := false
	vars := map[string]any{
		"server":  in.Server,
		"subject": in.Subject,
		"tool":    map[string]any{"name": in.Tool, "annotations": annotations},
		"args": func() any { // decoded once, and only if a rule reads it
			if !decoded {
				decoded = true
				args, argsErr = decodeArgs(in.Arguments)
			}
			if argsErr != nil {
				return types.NewErr("arguments: %v", argsErr)
			}
			return args
		},
	}
	act, err := cel.NewActivation(vars)
	if err != nil {
		return Result{}, err
	}
	for _, r := range c.rules {
		out, _, err := r.prg.Eval(act)
		if err != nil {
			return Result{}, fmt.Errorf("classification rule %q could not be evaluated: %v", r.name, err)
		}
		match, ok := out.Value().(bool)
		if !ok {
			return Result{}, fmt.Errorf("classification rule %q gave %v, not a bool", r.name, out.Type())
		}
		if match {
			return Result{Level: r.level, Rule: r.name}, nil
		}
	}
	return Result{}, nil
}

// decodeArgs decodes the call's arguments for CEL, numbers as doubles,
// with the gateway's one strict decoder.
func decodeArgs(raw []byte) (any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	var v any
	if err := jsonrpc.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}
