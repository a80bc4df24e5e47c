package attack

import (
	"context"

	"github.com/agentwarden/warden/internal/oatf"
)

// IndicatorResult is one indicator's verdict with where its evidence came
// from and what the document says about it.
type IndicatorResult struct {
	oatf.IndicatorVerdict
	Description string
	Tier        string
	Pos         oatf.Pos // where the indicator is written
	Filter      Filter
	Considered  int    // trace entries left after filtering
	Seq         int64  // the entry that matched (0 when none)
	Actor       string // of the matching entry
	Method      string // of the matching entry
	// Unmatchable says why the indicator could never match (its target is
	// never recorded in the traffic it selects; see CheckTargets), or "".
	Unmatchable string
}

// Evaluate evaluates every indicator of a normalized document against a
// trace and computes the verdict. For each indicator the trace is filtered by
// protocol, surface, actor and direction (OATF §6); the indicator is matched
// if any remaining entry matches. An error on one entry does not hide a
// match on another; without a match, any error makes the result error.
func Evaluate(ctx context.Context, doc *oatf.Document, trace []Entry, ev *oatf.Evaluator) ([]IndicatorResult, oatf.Verdict) {
	attack := doc.Attack()
	var results []IndicatorResult
	var verdicts []oatf.IndicatorVerdict
	unmatchable := map[int]string{}
	for _, p := range checkTargets(doc) {
		unmatchable[p.index] = p.diag.Message
	}
	for i, ind := range items(attack.Get("indicators")) {
		r := evaluateOne(ctx, ind, trace, ev)
		r.Unmatchable = unmatchable[i]
		results = append(results, r)
		verdicts = append(verdicts, r.IndicatorVerdict)
	}
	logic := attack.Get("correlation").Get("logic").StringOr("any")
	v := oatf.ComputeVerdict(logic, doc.IndicatorRefs(), verdicts)
	return results, v
}

func evaluateOne(ctx context.Context, ind *oatf.Value, trace []Entry, ev *oatf.Evaluator) IndicatorResult {
	id := ind.Get("id").StringOr("")
	r := IndicatorResult{Description: ind.Get("description").StringOr(""), Tier: ind.Get("tier").StringOr(""),
		Pos: ind.Pos, Filter: FilterFor(ind)}
	var firstErr *oatf.IndicatorVerdict
	skipped := 0
	for _, e := range trace {
		if !r.Filter.Keep(e) {
			continue
		}
		r.Considered++
		v := ev.Evaluate(ctx, ind, e.Content)
		switch v.Result {
		case oatf.Matched:
			r.IndicatorVerdict = v
			r.Seq, r.Actor, r.Method = e.Seq, e.Actor, e.Method
			return r
		case oatf.Error:
			if firstErr == nil {
				firstErr = &v
			}
		case oatf.Skipped:
			skipped++
		}
	}
	switch {
	case firstErr != nil:
		r.IndicatorVerdict = *firstErr
	case r.Considered == 0:
		// Nothing to look at: not matched, unless the method cannot be
		// evaluated at all (no CEL or semantic evaluator).
		v := ev.Evaluate(ctx, ind, oatf.NewMap())
		r.IndicatorVerdict = oatf.IndicatorVerdict{IndicatorID: id, Result: oatf.NotMatched, Timestamp: v.Timestamp}
		if v.Result == oatf.Skipped {
			r.IndicatorVerdict = v
		}
	case skipped == r.Considered:
		r.IndicatorVerdict = oatf.IndicatorVerdict{IndicatorID: id, Result: oatf.Skipped}
	default:
		r.IndicatorVerdict = oatf.IndicatorVerdict{IndicatorID: id, Result: oatf.NotMatched}
	}
	r.IndicatorVerdict.IndicatorID = id
	return r
}
