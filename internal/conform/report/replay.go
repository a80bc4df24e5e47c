package report

import (
	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/replay"
)

// Column is one implementation column of a cell: what replay showed on a
// target, and the triage label it gives with the model check.
type Column struct {
	Target   string         `json:"target"`
	Mode     string         `json:"mode"` // live | mock
	Outcome  replay.Outcome `json:"outcome"`
	Triage   string         `json:"triage"`
	Evidence string         `json:"evidence"`
	Clauses  []string       `json:"clauses,omitempty"`
	Property string         `json:"property"`
}

// TriageReplay labels a finding from the model check and the replay
// outcome, by the reference's decision table:
//
//	model check                       replay          label
//	violated, ambiguous clause on it  any             AMBIGUITY-FAIL
//	violated                          reproduced      BOTH-FAIL
//	violated                          blocked         SPEC-FAIL
//	violated                          unrealisable    MODEL-FAIL
//	holds                             reproduced      IMPL-FAIL
//	holds                             blocked         PASS
//	holds                             unrealisable    PASS (nothing to confirm)
//	any                               inconclusive    the model-only label (silence or a crash confirms nothing)
//
// modelLabel is the model-only label (Triage), which carries the ambiguity.
func TriageReplay(modelResult, modelLabel string, outcome replay.Outcome) string {
	if outcome == replay.Inconclusive {
		return modelLabel // the target gave no verdict: replay confirms nothing
	}
	if modelResult == string(check.Violated) {
		switch {
		case modelLabel == AmbiguityFail:
			return AmbiguityFail
		case outcome == replay.Reproduced:
			return BothFail
		case outcome == replay.Blocked:
			return SpecFail
		}
		return ModelFail
	}
	if modelResult == string(check.Holds) && outcome == replay.Reproduced {
		return ImplFail
	}
	if modelResult == string(check.Holds) {
		return Pass
	}
	return modelLabel
}

// Against records replay reports for the implementation and for the
// implementation behind warden; Matrix then fills the cells of the
// report's protocol. Either may be nil.
func (res *Results) Against(impl, behind *replay.Report) {
	res.impl, res.behind = impl, behind
}

// column builds the column of a cell from a replay report, for the model
// property shown in the cell (or any property of the cell replay has a
// result for). guarded selects the model result behind warden.
func column(rep *replay.Report, protocol string, fs []Finding, guarded bool) *Column {
	if rep == nil || rep.Protocol != protocol {
		return nil
	}
	for _, f := range fs {
		r, ok := rep.Result(f.Property)
		if !ok || r.Model != f.Model {
			continue
		}
		result, label := f.Result, f.Triage
		if guarded {
			result, label = f.WardenResult, Pass
			if result == string(check.Violated) {
				label = SpecFail
			}
		}
		return &Column{Target: rep.Target, Mode: rep.Mode, Outcome: r.Outcome, Evidence: r.Evidence,
			Clauses: r.Clauses, Property: f.Model + "/" + f.Property, Triage: TriageReplay(result, label, r.Outcome)}
	}
	return nil
}
