package oatf

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// Indicator results (§9).
const (
	Matched    = "matched"
	NotMatched = "not_matched"
	Error      = "error"
	Skipped    = "skipped"
)

// Evaluation error kinds (SDK §7).
const (
	ErrPathResolution    = "path_resolution"
	ErrRegexTimeout      = "regex_timeout"
	ErrCEL               = "cel_error"
	ErrType              = "type_error"
	ErrSemantic          = "semantic_error"
	ErrUnsupportedMethod = "unsupported_method"
)

// IndicatorVerdict is the result of evaluating one indicator.
type IndicatorVerdict struct {
	IndicatorID string
	Result      string // Matched, NotMatched, Error, Skipped
	Evidence    string // the matching text, when matched
	ErrorKind   string // one of the Err* kinds, when Result is Error
	Message     string
	Timestamp   time.Time
}

// CELEvaluator evaluates a CEL expression with the given variables bound
// ("message" among them) and returns its boolean result.
type CELEvaluator interface {
	EvaluateCEL(ctx context.Context, expr string, vars map[string]any) (bool, error)
}

// SemanticEvaluator scores how well text matches an intent, from 0 to 1.
// OATF ships none: callers plug in their own model.
type SemanticEvaluator interface {
	Score(ctx context.Context, text string, s *Value) (float64, error)
}

// EvalOptions configure an Evaluator. The zero value evaluates pattern and
// expression indicators with the built-in CEL engine and skips semantic ones.
type EvalOptions struct {
	// CEL evaluates expression indicators; nil means the built-in engine.
	CEL CELEvaluator
	// NoCEL skips expression indicators (result "skipped").
	NoCEL bool
	// Semantic evaluates semantic indicators; nil skips them.
	Semantic SemanticEvaluator
	// ExpressionTimeout bounds one CEL evaluation (default 100 ms).
	ExpressionTimeout time.Duration
	// DocumentBudget bounds the total CEL time of one Evaluator (default
	// 30 s); once spent, expression indicators return an error.
	DocumentBudget time.Duration
}

// Evaluator evaluates indicators against protocol messages. It is safe for
// concurrent use.
type Evaluator struct {
	opts EvalOptions
	cel  CELEvaluator

	mu    sync.Mutex
	spent time.Duration // CEL time used, guarded by mu
}

// NewEvaluator returns an Evaluator.
func NewEvaluator(opts EvalOptions) *Evaluator {
	if opts.ExpressionTimeout <= 0 {
		opts.ExpressionTimeout = 100 * time.Millisecond
	}
	if opts.DocumentBudget <= 0 {
		opts.DocumentBudget = 30 * time.Second
	}
	e := &Evaluator{opts: opts, cel: opts.CEL}
	if e.cel == nil && !opts.NoCEL {
		e.cel = DefaultCEL()
	}
	return e
}

// Evaluate evaluates one indicator (a Value as written in a document,
// normalized or not) against one message.
func (e *Evaluator) Evaluate(ctx context.Context, ind *Value, message *Value) IndicatorVerdict {
	out := IndicatorVerdict{IndicatorID: ind.Get("id").StringOr(""), Timestamp: time.Now().UTC()}
	fail := func(kind, msg string) IndicatorVerdict {
		out.Result, out.ErrorKind, out.Message = Error, kind, msg
		return out
	}
	switch {
	case present(ind.Get("pattern")):
		pat := ind.Get("pattern")
		cond := pat.Get("condition")
		if cond == nil {
			cond = NewMap()
			for _, m := range pat.Pairs {
				if isConditionOp(m.Key) {
					cond.Pairs = append(cond.Pairs, m)
				}
			}
		}
		target := pat.Get("target").StringOr(ind.Get("target").StringOr(""))
		values := ResolveWildcardPath(target, message)
		if len(values) == 0 {
			// Only {exists: false} can hold for a target that is not there.
			out.Result = NotMatched
			if EvaluateCondition(cond, nil) {
				out.Result = Matched
			}
			return out
		}
		for _, v := range values {
			if EvaluateCondition(cond, v) {
				out.Result, out.Evidence = Matched, scalarText(v)
				return out
			}
		}
		out.Result = NotMatched
		return out
	case present(ind.Get("expression")):
		if e.cel == nil {
			out.Result = Skipped
			return out
		}
		expr := ind.Get("expression")
		vars := map[string]any{"message": message.ToAny()}
		for _, m := range expr.Get("variables").pairsOrNil() {
			v, found := ResolveSimplePath(m.Value.StringOr(""), message)
			if !found {
				vars[m.Key] = types.NullValue
				continue
			}
			vars[m.Key] = v.ToAny()
		}
		ok, err := e.evalCEL(ctx, expr.Get("cel").StringOr(""), vars)
		if err != nil {
			var ee *EvalError
			if errors.As(err, &ee) {
				return fail(ee.Kind, ee.Msg)
			}
			return fail(ErrCEL, err.Error())
		}
		out.Result = NotMatched
		if ok {
			out.Result = Matched
		}
		return out
	case present(ind.Get("semantic")):
		if e.opts.Semantic == nil {
			out.Result = Skipped
			return out
		}
		sem := ind.Get("semantic")
		target := sem.Get("target").StringOr(ind.Get("target").StringOr(""))
		threshold := 0.7
		if t := sem.Get("threshold"); t.IsNumber() {
			threshold = t.Number()
		}
		best := -1.0
		for _, v := range ResolveWildcardPath(target, message) {
			score, err := e.opts.Semantic.Score(ctx, scalarText(v), sem)
			if err != nil {
				return fail(ErrSemantic, err.Error())
			}
			if score > best {
				best, out.Evidence = score, scalarText(v)
			}
		}
		out.Result = NotMatched
		if best >= threshold {
			out.Result = Matched
		} else {
			out.Evidence = ""
		}
		return out
	}
	return fail(ErrUnsupportedMethod, "the indicator has no pattern, expression or semantic")
}

func (x *Value) pairsOrNil() []*Member {
	if x == nil || x.Kind != Map {
		return nil
	}
	return x.Pairs
}

// EvalError is an evaluation failure with its SDK kind.
type EvalError struct {
	Kind string
	Msg  string
}

func (e *EvalError) Error() string { return e.Kind + ": " + e.Msg }

func (e *Evaluator) evalCEL(ctx context.Context, expr string, vars map[string]any) (bool, error) {
	e.mu.Lock()
	remaining := e.opts.DocumentBudget - e.spent
	e.mu.Unlock()
	if remaining <= 0 {
		return false, &EvalError{ErrCEL, "the document's CEL time budget is spent"}
	}
	ctx, cancel := context.WithTimeout(ctx, min(e.opts.ExpressionTimeout, remaining))
	defer cancel()
	start := time.Now()
	ok, err := e.cel.EvaluateCEL(ctx, expr, vars)
	e.mu.Lock()
	e.spent += time.Since(start)
	e.mu.Unlock()
	return ok, err
}

// celCostLimit bounds the work of one expression, whatever the clock says.
const celCostLimit = 1_000_000

// builtinCEL is the default CELEvaluator: cel-go with a cost limit,
// cancellation, and a cache of compiled programs keyed by expression and
// variable names.
type builtinCEL struct {
	mu       sync.Mutex
	programs map[string]cel.Program // guarded by mu
}

var defaultCEL = &builtinCEL{programs: map[string]cel.Program{}}

// DefaultCEL returns the built-in CEL evaluator.
func DefaultCEL() CELEvaluator { return defaultCEL }

var parseEnv = sync.OnceValues(func() (*cel.Env, error) { return cel.NewEnv() })

// parseCEL checks syntax only (V-014).
func parseCEL(expr string) error {
	env, err := parseEnv()
	if err != nil {
		return err
	}
	if _, iss := env.Parse(expr); iss != nil && iss.Err() != nil {
		return iss.Err()
	}
	return nil
}

func (b *builtinCEL) EvaluateCEL(ctx context.Context, expr string, vars map[string]any) (bool, error) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	slices.Sort(names)
	key := strings.Join(names, ",") + "\x00" + expr
	b.mu.Lock()
	prg, ok := b.programs[key]
	b.mu.Unlock()
	if !ok {
		opts := make([]cel.EnvOption, 0, len(names))
		for _, n := range names {
			opts = append(opts, cel.Variable(n, cel.DynType))
		}
		env, err := cel.NewEnv(opts...)
		if err != nil {
			return false, &EvalError{ErrCEL, err.Error()}
		}
		ast, iss := env.Compile(expr)
		if iss != nil && iss.Err() != nil {
			return false, &EvalError{ErrUnsupportedMethod, iss.Err().Error()}
		}
		prg, err = env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
		if err != nil {
			return false, &EvalError{ErrCEL, err.Error()}
		}
		b.mu.Lock()
		if len(b.programs) > 1024 {
			b.programs = map[string]cel.Program{}
		}
		b.programs[key] = prg
		b.mu.Unlock()
	}
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return false, &EvalError{ErrCEL, err.Error()}
	}
	v, isBool := out.Value().(bool)
	if !isBool {
		return false, &EvalError{ErrType, fmt.Sprintf("the expression returned %s, not a boolean", out.Type())}
	}
	return v, nil
}
