// Package report runs every property of the built-in models (plain and
// behind warden) and turns the results into AgentRFC's protocol × principle
// matrix, with each cell's taxonomy class and triage label, as JSON and
// Markdown.
//
// Triage follows the decision table of the conformance reference. With
// model-check results only (no replay yet), a cell is AMBIGUITY-FAIL when
// its violation depends on an ambiguous clause or on a Protocol step the
// specification does not determine (NOT_SPECIFIED), SPEC-FAIL when the
// specification permits the violation, and PASS when the property holds;
// "replay": "pending" says that replay may still turn SPEC-FAIL into
// BOTH-FAIL or MODEL-FAIL, and PASS into IMPL-FAIL.
//
// Each property is checked twice: without Adversary transitions, and (if it
// holds there) with them, so every violation says whether it needs the
// attacker.
package report

import (
	"context"
	"path"
	"slices"

	"github.com/agentwarden/warden/internal/conform/catalog"
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/ir"
	"github.com/agentwarden/warden/internal/conform/replay"
)

// Triage labels.
const (
	SpecFail      = "SPEC-FAIL"
	ImplFail      = "IMPL-FAIL"
	BothFail      = "BOTH-FAIL"
	ModelFail     = "MODEL-FAIL"
	AmbiguityFail = "AMBIGUITY-FAIL"
	Pass          = "PASS"
)

// Finding is the outcome of one property of one model.
type Finding struct {
	Model          string   `json:"model"`
	Protocols      []string `json:"protocols"`
	Property       string   `json:"property"`
	Principle      string   `json:"principle"`
	Class          string   `json:"class"`
	Result         string   `json:"result"` // holds | violated | incomplete
	Adversary      bool     `json:"adversary"`
	TraceLen       int      `json:"trace_len,omitempty"`
	Actions        []string `json:"actions,omitempty"` // for a lasso, the prefix
	Cycle          []string `json:"cycle,omitempty"`   // a leads-to lasso's cycle, ending with the action (or "stutter") that closes it
	Triage         string   `json:"triage"`
	AmbiguousRefs  []string `json:"ambiguous_refs,omitempty"`
	Counterexample string   `json:"counterexample,omitempty"` // relative path of the ITF trace
	States         int      `json:"states"`
	WardenResult   string   `json:"warden_result"`
	// Coverage is "partial" when a hashcompact or bitstate search found
	// no violation (plain or behind warden): that "holds" is not a proof,
	// and CoverageNote gives the mode and its odds. Otherwise "complete".
	Coverage     string       `json:"coverage"`
	CoverageNote string       `json:"coverage_note,omitempty"`
	Trace        *check.Trace `json:"-"`
}

// Coverage values.
const (
	CoverageComplete = "complete"
	CoveragePartial  = "partial"
)

// coverage fills f's coverage from the results behind it.
func (f *Finding) coverage(rs ...*check.Result) {
	f.Coverage = CoverageComplete
	for _, r := range rs {
		if r.Partial() {
			f.Coverage, f.CoverageNote = CoveragePartial, "partial coverage: "+r.Coverage.String()
			return
		}
	}
}

// Results is every finding, in model and property order.
type Results struct {
	Findings []Finding

	impl, behind *replay.Report // set by Against
}

// Options bounds the checks.
type Options struct {
	Check check.Options
}

// Run checks every property of every model, plain and behind warden.
func Run(ctx context.Context, ms []*ir.Model, cat *catalog.Catalog, opts Options) (*Results, error) {
	res := &Results{}
	for _, m := range ms {
		fs, err := CheckModel(ctx, m, cat, opts)
		if err != nil {
			return nil, err
		}
		res.Findings = append(res.Findings, fs...)
	}
	return res, nil
}

// CheckModel checks every property of m and of m behind warden.
func CheckModel(ctx context.Context, m *ir.Model, cat *catalog.Catalog, opts Options) ([]Finding, error) {
	plain, err := check.Compile(m)
	if err != nil {
		return nil, err
	}
	guarded, err := check.Compile(m.Guarded())
	if err != nil {
		return nil, err
	}
	protocols := m.Protocols
	if !m.IsComposition() {
		protocols = []string{m.Protocol}
	}
	var out []Finding
	for _, p := range m.Properties {
		r, adv, err := twice(ctx, plain, p.ID, opts.Check)
		if err != nil {
			return nil, err
		}
		f := Finding{Model: m.Name, Protocols: protocols, Property: p.ID, Principle: p.Principle, Class: p.Class,
			Result: string(r.Status), Adversary: adv, States: r.States}
		if r.Status == check.Violated {
			f.TraceLen = r.Trace.Len()
			f.Actions = r.Trace.Actions()
			if c := r.Trace.Cycle; c != nil {
				f.Actions, f.Cycle = f.Actions[:c.Start], r.Trace.CycleActions()
			}
			f.Trace = r.Trace
			f.Counterexample = TracePath(m.Name, p.ID)
		}
		f.Triage, f.AmbiguousRefs = Triage(r, m, cat)
		w, _, err := twice(ctx, guarded, p.ID, opts.Check)
		if err != nil {
			return nil, err
		}
		f.WardenResult = string(w.Status)
		f.coverage(r, w)
		out = append(out, f)
	}
	return out, nil
}

// TracePath is where a model's counterexample for a property is written,
// relative to the output directory.
func TracePath(model, property string) string {
	return path.Join("traces", model, property+".itf.json")
}

// twice checks without Adversary transitions, then, if the property held,
// with them. adversary reports whether the violation needed the attacker.
func twice(ctx context.Context, p *check.Program, prop string, opts check.Options) (*check.Result, bool, error) {
	o := opts
	o.NoAdversary = true
	r, err := check.Verify(ctx, p, prop, o)
	if err != nil || r.Status == check.Violated {
		return r, false, err
	}
	o.NoAdversary = false
	r2, err := check.Verify(ctx, p, prop, o)
	if err != nil {
		return nil, false, err
	}
	return r2, r2.Status == check.Violated, nil
}

// Triage labels a model-check result without replay, and lists the
// ambiguous clauses that decided an AMBIGUITY-FAIL.
//
// A violation is an AMBIGUITY-FAIL only when it depends on an unclear
// clause, not when an unclear clause merely sits on its path. The clauses
// it depends on (dependsOn) are the property's own source_refs, and those
// cited by a step of the counterexample that wrote what the property reads
// (directly or through the values it computed from) and that bear on the
// property's principle. Such a clause counts when the catalog marks it
// ambiguous, and such a step counts when it is a Protocol step the
// specification leaves NOT_SPECIFIED.
func Triage(r *check.Result, m *ir.Model, cat *catalog.Catalog) (string, []string) {
	switch r.Status {
	case check.Holds:
		return Pass, nil
	case check.Incomplete:
		return "", nil
	}
	p, ok := m.Property(r.Trace.Property)
	if !ok {
		return SpecFail, nil
	}
	var amb []string
	add := func(id string) {
		if !slices.Contains(amb, id) {
			amb = append(amb, id)
		}
	}
	for _, t := range dependsOn(r.Trace, p) {
		for _, id := range t.SourceRefs {
			if cl, ok := cat.Clause(id); ok && cl.Ambiguous && bearsOn(cl, p.Principle) {
				add(id)
			}
		}
		if t.Kind == ir.Protocol && t.Modality == "NOT_SPECIFIED" {
			for _, id := range t.SourceRefs {
				if cl, ok := cat.Clause(id); !ok || bearsOn(cl, p.Principle) {
					add(id)
				}
			}
			if len(t.SourceRefs) == 0 {
				add(t.ID)
			}
		}
	}
	for _, id := range p.SourceRefs {
		if cl, ok := cat.Clause(id); ok && cl.Ambiguous {
			add(id)
		}
	}
	if len(amb) > 0 {
		return AmbiguityFail, amb
	}
	return SpecFail, nil
}

// dependsOn returns the steps of a counterexample the violation depends
// on: walking back from the violating state, a step counts when one of its
// writes assigns a variable the property reads, or one that a counted
// step read (in its guard or in the written value). A read through an
// array index that depends on a bound variable (a quantifier's, as in P3)
// may read any cell of the array (ir.Model.Reads). A step that wrote
// nothing the violation needed (a handshake's bookkeeping, a flag another
// property reads) does not count.
func dependsOn(tr *check.Trace, p *ir.Property) []*ir.Transition {
	m := tr.Model
	need := make([]bool, len(m.Vars))
	mark := func(v int) { need[v] = true }
	for _, x := range p.Exprs() { // a leads-to property reads its From and To
		m.Reads(x, mark)
	}
	var out []*ir.Transition
	for i := len(tr.Steps) - 1; i >= 1; i-- {
		t := &m.Transitions[tr.Steps[i].Action]
		var reads []*ir.Expr
		for _, w := range t.Writes {
			if need[w.Var] {
				reads = append(reads, w.Expr)
			}
		}
		if len(reads) == 0 {
			continue
		}
		out = append(out, t)
		for _, w := range t.Writes {
			need[w.Var] = false // overwritten here: earlier writes of it are dead
		}
		reads = append(reads, t.Guard)
		for _, e := range reads {
			m.Reads(e, mark)
		}
	}
	slices.Reverse(out)
	return out
}

// bearsOn reports whether a clause concerns a principle. A composition
// invariant (CS) depends on the clauses of both protocols whatever
// principle they state.
func bearsOn(cl catalog.Clause, principle string) bool {
	return principle == "CS" || slices.Contains(cl.Principles, principle)
}

// Cell is one protocol × principle entry of the matrix.
type Cell struct {
	Protocol       string   `json:"protocol"`
	Principle      string   `json:"principle"`
	Result         string   `json:"result"` // holds | violated
	Class          string   `json:"class"`
	Triage         string   `json:"triage"`
	ModelTriage    string   `json:"model_triage"` // the label from the model check alone
	Replay         string   `json:"replay"`       // "pending" (no replay), "live" or "mock"
	Adversary      bool     `json:"adversary"`
	Properties     []string `json:"properties"` // model/property ids behind the cell
	TraceLen       int      `json:"trace_len,omitempty"`
	Counterexample string   `json:"counterexample,omitempty"`
	WardenResult   string   `json:"warden_result"`
	// Coverage is "partial" when any property behind the cell holds only
	// as far as a partial search saw (Finding.Coverage).
	Coverage     string `json:"coverage"`
	CoverageNote string `json:"coverage_note,omitempty"`
	// Implementation and BehindWarden are the replay columns (matrix
	// --against TARGET), for the target's protocol only.
	Implementation *Column `json:"implementation,omitempty"`
	BehindWarden   *Column `json:"behind_warden,omitempty"`
}

// NotModelled is the result of a cell no model has a property for (only
// when the matrix is built from a user's models).
const NotModelled = "not modelled"

// Matrix builds the 5 × 11 matrix. A CS cell aggregates the composition
// invariants of every composition the protocol takes part in; any other
// cell is the protocol model's property for that principle. A cell is
// violated when any of its properties is, and then shows the first
// violated one (in model order); otherwise it shows the first property.
func (res *Results) Matrix() ([]Cell, error) {
	var cells []Cell
	for _, proto := range catalog.Protocols {
		for _, pr := range ir.Principles {
			var fs []Finding
			for _, f := range res.Findings {
				if f.Principle != pr || !slices.Contains(f.Protocols, proto) {
					continue
				}
				if (pr == "CS") != (len(f.Protocols) > 1) {
					continue
				}
				fs = append(fs, f)
			}
			if len(fs) == 0 {
				// Only with a user's models (conform matrix --model):
				// every built-in cell has a property.
				cells = append(cells, Cell{Protocol: proto, Principle: pr, Result: NotModelled, WardenResult: NotModelled,
					Coverage: CoverageComplete})
				continue
			}
			shown := fs[0]
			for _, f := range fs {
				if f.Result == string(check.Violated) {
					shown = f
					break
				}
			}
			c := Cell{Protocol: proto, Principle: pr, Result: shown.Result, Class: shown.Class, Triage: shown.Triage,
				ModelTriage: shown.Triage, Replay: "pending", Adversary: shown.Adversary, TraceLen: shown.TraceLen,
				Counterexample: shown.Counterexample, WardenResult: string(check.Holds), Coverage: CoverageComplete}
			ordered := append([]Finding{shown}, fs...)
			if c.Implementation = column(res.impl, proto, ordered, false); c.Implementation != nil {
				c.Triage, c.Replay = c.Implementation.Triage, c.Implementation.Mode
			}
			c.BehindWarden = column(res.behind, proto, ordered, true)
			for _, f := range fs {
				c.Properties = append(c.Properties, f.Model+"/"+f.Property)
				if f.WardenResult != string(check.Holds) {
					c.WardenResult = f.WardenResult
				}
				if f.Coverage == CoveragePartial && c.Coverage != CoveragePartial {
					c.Coverage, c.CoverageNote = f.Coverage, f.CoverageNote
				}
			}
			cells = append(cells, c)
		}
	}
	return cells, nil
}

// Compositions returns the findings of the composition models.
func (res *Results) Compositions() []Finding {
	var out []Finding
	for _, f := range res.Findings {
		if len(f.Protocols) > 1 {
			out = append(out, f)
		}
	}
	return out
}
