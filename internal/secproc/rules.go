package secproc

import "slices"

// customRules applies the configured rules: the regular expressions to
// every string of the event, then the CEL rules, which see what everything
// before them found.
func (p *Processor) customRules(in *input, fs *findings) {
	for i := range p.rules {
		r := &p.rules[i]
		if r.re == nil || !p.applies(r, in) {
			continue
		}
		for _, s := range in.all() {
			if loc := r.re.FindStringIndex(s.value); loc != nil {
				fs.add(Finding{Category: r.Category, Rule: "custom/" + r.Name, Severity: r.severity(), Action: r.Action,
					Message: "custom rule " + r.Name + " matched", Evidence: excerpt(s.value, loc[0], loc[1]),
					Path: s.path, Confidence: 0.7})
			}
		}
	}
	var ev *celEvent // built for the first CEL rule that applies
	for i := range p.rules {
		r := &p.rules[i]
		if r.cel == nil || !p.applies(r, in) {
			continue
		}
		if ev == nil {
			ev = newCELEvent(in, fs.list)
		}
		r.evalCEL(ev, fs)
	}
}

// applies reports whether r is to be evaluated on in.
func (p *Processor) applies(r *compiledRule, in *input) bool {
	return p.on(r.Category) && (len(r.Kinds) == 0 || slices.Contains(r.Kinds, in.ev.Kind))
}

func (r *compiledRule) severity() Severity {
	if r.Severity == 0 {
		return Medium
	}
	return r.Severity
}
