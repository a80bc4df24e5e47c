package secproc

import "slices"

// customRules applies the configured regular expressions to every string of
// the event.
func (p *Processor) customRules(in *input, fs *findings) {
	for _, r := range p.rules {
		if !p.on(r.Category) || len(r.Kinds) > 0 && !slices.Contains(r.Kinds, in.ev.Kind) {
			continue
		}
		sev := r.Severity
		if sev == 0 {
			sev = Medium
		}
		for _, s := range in.all() {
			if loc := r.re.FindStringIndex(s.value); loc != nil {
				fs.add(Finding{Category: r.Category, Rule: "custom/" + r.Name, Severity: sev,
					Message: "custom rule " + r.Name + " matched", Evidence: excerpt(s.value, loc[0], loc[1]),
					Path: s.path, Confidence: 0.7})
			}
		}
	}
}
