package oatf

import "time"

// Attack results (§9).
const (
	Exploited    = "exploited"
	NotExploited = "not_exploited"
	Partial      = "partial"
	// Error (an indicator result) is also an attack result.
)

// Summary counts indicator results; the counts sum to the number of
// indicators.
type Summary struct {
	Matched    int `json:"matched"`
	NotMatched int `json:"not_matched"`
	Error      int `json:"error"`
	Skipped    int `json:"skipped"`
}

// Verdict is an attack-level result with its §9.3 metadata. MaxTier is the
// highest tier (the documented extension) among matched indicators.
type Verdict struct {
	Result            string
	MaxTier           string
	IndicatorVerdicts []IndicatorVerdict
	Summary           Summary
	Timestamp         time.Time
}

// IndicatorRef names an indicator for ComputeVerdict: its id and optional
// tier.
type IndicatorRef struct {
	ID   string
	Tier string
}

// IndicatorRefs lists the indicators of a document.
func (d *Document) IndicatorRefs() []IndicatorRef {
	var refs []IndicatorRef
	for _, ind := range d.Attack().Get("indicators").itemsOrNil() {
		refs = append(refs, IndicatorRef{ID: ind.Get("id").StringOr(""), Tier: ind.Get("tier").StringOr("")})
	}
	return refs
}

// ComputeVerdict combines indicator results under the correlation logic
// ("any" or "all") (SDK §4.5). An indicator without a result counts as
// skipped; no indicators at all is an error.
func ComputeVerdict(logic string, indicators []IndicatorRef, results []IndicatorVerdict) Verdict {
	byID := make(map[string]IndicatorVerdict, len(results))
	for _, r := range results {
		byID[r.IndicatorID] = r
	}
	v := Verdict{Timestamp: time.Now().UTC()}
	best := 0
	for _, ind := range indicators {
		r, ok := byID[ind.ID]
		if !ok {
			r = IndicatorVerdict{IndicatorID: ind.ID, Result: Skipped}
		}
		v.IndicatorVerdicts = append(v.IndicatorVerdicts, r)
		switch r.Result {
		case Matched:
			v.Summary.Matched++
			if rank := tierRank(ind.Tier); rank > best {
				best, v.MaxTier = rank, ind.Tier
			}
		case NotMatched:
			v.Summary.NotMatched++
		case Error:
			v.Summary.Error++
		default:
			v.Summary.Skipped++
		}
	}
	n := len(indicators)
	switch {
	case n == 0 || v.Summary.Skipped == n:
		v.Result = Error
	case v.Summary.Error > 0:
		v.Result = Error
	case logic == "all":
		switch {
		case v.Summary.Matched == n:
			v.Result = Exploited
		case v.Summary.Matched > 0:
			v.Result = Partial
		default:
			v.Result = NotExploited
		}
	default:
		v.Result = NotExploited
		if v.Summary.Matched > 0 {
			v.Result = Exploited
		}
	}
	return v
}
