package oatf

import (
	"fmt"
	"regexp"
	"strings"
)

// SupportedVersion is the OATF format version this package implements.
const SupportedVersion = "0.1"

// Validate applies the conformance rules of OATF 0.1 (V-001..V-049) and the
// SDK warnings (W-001..W-007) to a parsed document and returns every
// violation, each with its path and position. It never stops at the first
// problem. V-018 and V-029 are reported as warnings, as the rules say. The
// scenario library's documented extension warns too: an indicator's tier
// (RuleTierExtension) and attack.x-scoring (RuleScoringExtension).
func Validate(doc *Document) []Diagnostic { return ValidateOptions{}.Validate(doc) }

// ValidateOptions relax validation for documents written for other tools.
// The zero value is strict OATF 0.1.
type ValidateOptions struct {
	// Library accepts what the public scenario library does that OATF 0.1
	// forbids: a condition regex that RE2 cannot compile (Perl lookarounds)
	// is a V-013 warning instead of an error, and such an indicator
	// evaluates to "error". Risk: the indicator can never match.
	Library bool
}

// Validate is Validate with these options.
func (o ValidateOptions) Validate(doc *Document) []Diagnostic {
	if doc == nil || doc.Root == nil {
		return []Diagnostic{{Severity: SeverityError, Rule: RuleSyntax, Message: "no document"}}
	}
	v := &validator{root: doc.Root, actorIndex: map[string]*actorInfo{}, library: o.Library}
	v.document()
	return v.diags
}

// actorInfo is what indicator and template checks need to know of an actor.
type actorInfo struct {
	name       string
	mode       string
	extractors map[string]bool
}

type validator struct {
	root       *Value
	diags      []Diagnostic
	attackID   string
	execMode   string
	actors     []*actorInfo
	actorIndex map[string]*actorInfo
	library    bool
	// templates are checked once every actor's extractors are known.
	templates []templateUse
}

type templateUse struct {
	actor *actorInfo
	path  string
	val   *Value
}

func (v *validator) report(sev Severity, rule, path string, at *Value, format string, args ...any) {
	var pos Pos
	if at != nil {
		pos = at.Pos
	}
	v.diags = append(v.diags, Diagnostic{Severity: sev, Rule: rule, Path: path, Message: fmt.Sprintf(format, args...), Pos: pos})
}

func (v *validator) errf(rule, path string, at *Value, format string, args ...any) {
	v.report(SeverityError, rule, path, at, format, args...)
}

func (v *validator) warnf(rule, path string, at *Value, format string, args ...any) {
	v.report(SeverityWarning, rule, path, at, format, args...)
}

// enum reports V-005 when val is present and not one of allowed.
func (v *validator) enum(val *Value, path string, allowed []string) {
	if val != nil && val.Kind == String && !contains(allowed, val.Str) {
		v.errf("V-005", path, val, "%q is not one of %s", val.Str, strings.Join(allowed, ", "))
	}
}

func (v *validator) document() {
	root := v.root
	oatf := root.Get("oatf")
	switch {
	case oatf == nil:
		v.errf("V-001", "oatf", root, `the document must declare oatf: "%s"`, SupportedVersion)
	case oatf.Kind != String || oatf.Str != SupportedVersion:
		v.errf("V-001", "oatf", oatf, `unsupported OATF version %s; this implementation supports "%s"`, CompactJSON(oatf), SupportedVersion)
	}
	if oatf != nil && root.Pairs[0].Key != "oatf" {
		v.warnf("W-001", "oatf", oatf, "oatf should be the first key of the document")
	}
	attack := root.Get("attack")
	if !present(attack) {
		v.errf("V-003", "attack", root, "the document must have exactly one attack object")
		return
	}
	v.attack(attack)
}

var (
	attackIDRe    = regexp.MustCompile(`^[A-Z][A-Z0-9-]*-[0-9]{3,}$`)
	indicatorIDRe = regexp.MustCompile(`^[A-Z][A-Z0-9-]*-[0-9]{3,}-[0-9]{2,}$`)
	modeRe        = regexp.MustCompile(`^[a-z][a-z0-9_]*_(server|client)$`)
	protocolRe    = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	actorNameRe   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	extractorRe   = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	celIdentRe    = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	indicatorNum  = `-[0-9]{2,}$`
)

func (v *validator) attack(a *Value) {
	const p = "attack"
	if id := a.Get("id"); present(id) {
		v.attackID = id.Str
		if !attackIDRe.MatchString(id.Str) {
			v.errf("V-023", p+".id", id, "attack.id %q must match %s", id.Str, attackIDRe)
		}
	}
	if ver := a.Get("version"); present(ver) && ver.Kind == Int && ver.Int < 1 {
		v.errf("V-035", p+".version", ver, "attack.version must be a positive integer, got %d", ver.Int)
	}
	v.enum(a.Get("status"), p+".status", enumStatus)
	v.severity(a.Get("severity"), p+".severity")
	if impact := a.Get("impact"); present(impact) {
		seen := map[string]bool{}
		for i, it := range impact.Items {
			ip := fmt.Sprintf("%s.impact[%d]", p, i)
			v.enum(it, ip, enumImpact)
			if seen[it.Str] {
				v.errf("V-045", ip, it, "impact %q is listed twice", it.Str)
			}
			seen[it.Str] = true
		}
	}
	if c := a.Get("classification"); present(c) {
		v.enum(c.Get("category"), p+".classification.category", enumCategory)
		for i, m := range c.Get("mappings").itemsOrNil() {
			v.enum(m.Get("relationship"), fmt.Sprintf("%s.classification.mappings[%d].relationship", p, i), enumRelationship)
		}
	}
	if m := a.member("x-scoring"); m != nil {
		// Like tier, a documented extension from the scenario library:
		// kept through normalize and serialize, never interpreted.
		v.diags = append(v.diags, Diagnostic{Severity: SeverityWarning, Rule: RuleScoringExtension, Path: p + ".x-scoring",
			Pos: m.KeyPos, Message: "x-scoring is an extension (from the scenario library) that warden keeps but does not interpret; " +
				"the verdict's max_tier comes from the indicators' tier"})
	}
	if g := a.Get("grace_period"); present(g) {
		if _, err := ParseDuration(g.Str); err != nil {
			v.errf("V-046", p+".grace_period", g, "grace_period %q: %v", g.Str, err)
		}
	}
	exec := a.Get("execution")
	if !present(exec) {
		v.errf("V-004", p+".execution", a, "attack.execution is required")
	} else {
		v.execution(exec, p+".execution")
	}
	v.checkTemplates()
	inds := a.Get("indicators")
	if present(inds) {
		if len(inds.Items) == 0 {
			v.errf("V-006", p+".indicators", inds, "indicators, when present, must not be empty")
		}
		ids := map[string]bool{}
		for i, ind := range inds.Items {
			v.indicator(ind, fmt.Sprintf("%s.indicators[%d]", p, i), ids)
		}
	}
	if c := a.Get("correlation"); present(c) {
		if !present(inds) {
			v.errf("V-047", p+".correlation", c, "correlation is only allowed with indicators")
		}
		v.enum(c.Get("logic"), p+".correlation.logic", enumLogic)
	}
}

func (x *Value) itemsOrNil() []*Value {
	if x == nil || x.Kind != Seq {
		return nil
	}
	return x.Items
}

func (v *validator) severity(s *Value, path string) {
	if !present(s) {
		return
	}
	if s.Kind == String {
		v.enum(s, path, enumLevel)
		return
	}
	v.enum(s.Get("level"), path+".level", enumLevel)
	if c := s.Get("confidence"); present(c) && c.Kind == Int && (c.Int < 0 || c.Int > 100) {
		v.errf("V-017", path+".confidence", c, "confidence must be between 0 and 100, got %d", c.Int)
	}
}

func (v *validator) indicator(ind *Value, p string, ids map[string]bool) {
	if id := ind.Get("id"); present(id) {
		if ids[id.Str] {
			v.errf("V-010", p+".id", id, "indicator id %q is used twice", id.Str)
		}
		ids[id.Str] = true
		// V-024: the general pattern AND the attack's id as the prefix.
		if v.attackID != "" && (!indicatorIDRe.MatchString(id.Str) ||
			!regexp.MustCompile("^"+regexp.QuoteMeta(v.attackID)+indicatorNum).MatchString(id.Str)) {
			v.errf("V-024", p+".id", id, "indicator id %q must be %s-NN and match %s", id.Str, v.attackID, indicatorIDRe)
		}
	}
	protocol := ind.Get("protocol")
	effective := ExtractProtocol(v.execMode)
	switch {
	case present(protocol):
		effective = protocol.Str
		if !protocolRe.MatchString(protocol.Str) {
			v.errf("V-034", p+".protocol", protocol, "protocol %q must match %s", protocol.Str, protocolRe)
		} else if !isKnownProtocol(protocol.Str) {
			v.warnf("W-003", p+".protocol", protocol, "protocol %q is not one OATF 0.1 defines (%s)", protocol.Str, strings.Join(knownProtocols, ", "))
		}
	case v.execMode == "":
		v.errf("V-028", p+".protocol", ind, "indicator.protocol is required when execution.mode is absent")
	}
	if effective != "" && len(v.actors) > 0 {
		found := false
		for _, a := range v.actors {
			found = found || ExtractProtocol(a.mode) == effective
		}
		if !found {
			v.warnf("W-005", p+".protocol", orValue(protocol, ind), "no actor speaks protocol %q, so this indicator can never match", effective)
		}
	}
	if s := ind.Get("surface"); present(s) && isKnownProtocol(effective) && !contains(protocolSurfaces[effective], s.Str) {
		v.warnf("V-018", p+".surface", s, "surface %q is not an operation of protocol %s", s.Str, effective)
	}
	target := ind.Get("target")
	if !present(target) {
		v.errf("V-021", p+".target", ind, "indicator.target is required")
	} else if !IsWildcardPath(target.Str) {
		v.errf("V-021", p+".target", target, "target %q is not a wildcard path (segments of [A-Za-z0-9_-], optionally ending in [*])", target.Str)
	}
	if a := ind.Get("actor"); present(a) && v.actorIndex[a.Str] == nil {
		v.errf("V-048", p+".actor", a, "indicator.actor %q names no actor", a.Str)
	}
	v.enum(ind.Get("direction"), p+".direction", enumSource)
	if c := ind.Get("confidence"); present(c) && c.Kind == Int && (c.Int < 0 || c.Int > 100) {
		v.errf("V-025", p+".confidence", c, "confidence must be between 0 and 100, got %d", c.Int)
	}
	v.severity(ind.Get("severity"), p+".severity")
	if t := ind.Get("tier"); present(t) {
		if tierRank(t.Str) == 0 {
			v.errf(RuleTierExtension, p+".tier", t, "tier %q is not one of %s", t.Str, strings.Join(tiers, ", "))
		} else {
			v.warnf(RuleTierExtension, p+".tier", t, "tier is an extension to OATF 0.1 (from the scenario library), not part of the standard")
		}
	}
	var keys []string
	for _, k := range enumMethod {
		if present(ind.Get(k)) {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		v.errf("V-012", p, ind, "an indicator needs exactly one of pattern, expression, semantic; it has %d", len(keys))
	}
	if m := ind.Get("method"); present(m) {
		v.enum(m, p+".method", enumMethod)
		// V-049: the indicator must contain the key its method names.
		if contains(enumMethod, m.Str) && !contains(keys, m.Str) {
			v.errf("V-049", p+".method", m, "method is %q but the indicator has no %s", m.Str, m.Str)
		}
	}
	if pat := ind.Get("pattern"); present(pat) {
		v.pattern(pat, p+".pattern")
	}
	if e := ind.Get("expression"); present(e) {
		v.expression(e, p+".expression")
	}
	if s := ind.Get("semantic"); present(s) {
		v.semantic(s, p+".semantic")
	}
}

func orValue(a, b *Value) *Value {
	if a != nil {
		return a
	}
	return b
}

func (v *validator) pattern(pat *Value, p string) {
	if t := pat.Get("target"); present(t) && !IsWildcardPath(t.Str) {
		v.errf("V-021", p+".target", t, "target %q is not a wildcard path", t.Str)
	}
	if c := pat.Get("condition"); c != nil {
		v.condition(c, p+".condition")
		return
	}
	ops := NewMap()
	for _, m := range pat.Pairs {
		if isConditionOp(m.Key) {
			ops.Pairs = append(ops.Pairs, m)
		}
	}
	if len(ops.Pairs) == 0 {
		v.errf("V-012", p, pat, "pattern needs a condition or an operator (contains, regex, ...)")
		return
	}
	if ops.Has("exists") && len(ops.Pairs) == 1 {
		v.errf("V-012", p+".exists", ops.Get("exists"), "exists cannot be used as pattern shorthand; write condition: {exists: ...}")
	}
	v.condition(ops, p)
}

// condition checks the operands of an operator object.
func (v *validator) condition(c *Value, p string) {
	if !isOperatorObject(c) {
		return
	}
	for _, m := range c.Pairs {
		op, arg, ap := m.Key, m.Value, p+"."+m.Key
		switch op {
		case "contains", "starts_with", "ends_with", "regex":
			if arg.Kind != String {
				v.errf(RuleTypeMismatch, ap, arg, "%s takes a string", op)
			} else if op == "regex" {
				if _, err := compileRegex(arg.Str); err != nil {
					sev := SeverityError
					if v.library {
						sev = SeverityWarning
					}
					v.report(sev, "V-013", ap, arg, "invalid RE2 regular expression: %v", err)
				}
			}
		case "any_of":
			if arg.Kind != Seq {
				v.errf(RuleTypeMismatch, ap, arg, "any_of takes a list")
			}
		case "gt", "lt", "gte", "lte":
			if !arg.IsNumber() {
				v.errf(RuleTypeMismatch, ap, arg, "%s takes a number", op)
			}
		case "exists":
			if arg.Kind != Bool {
				v.errf(RuleTypeMismatch, ap, arg, "exists takes true or false")
			}
		}
	}
}

func (v *validator) predicate(pred *Value, p string) {
	if !present(pred) || pred.Kind != Map {
		return
	}
	for _, m := range pred.Pairs {
		kp := p + "." + m.Key
		if !IsSimplePath(m.Key) {
			v.errf("V-027", kp, m.Value, "predicate key %q is not a simple path (no wildcards or indexes)", m.Key)
		}
		v.condition(m.Value, kp)
	}
}

func (v *validator) expression(e *Value, p string) {
	cel := e.Get("cel")
	if !present(cel) {
		v.errf("V-014", p+".cel", e, "expression.cel is required")
	} else if err := parseCEL(cel.Str); err != nil {
		v.errf("V-014", p+".cel", cel, "CEL does not parse: %v", err)
	}
	vars := e.Get("variables")
	if !present(vars) {
		return
	}
	for _, m := range vars.Pairs {
		vp := p + ".variables." + m.Key
		switch {
		case !celIdentRe.MatchString(m.Key):
			v.errf("V-039", vp, m.Value, "variable name %q is not a CEL identifier", m.Key)
		case m.Key == "message":
			// A valid identifier (V-039 holds), but it hides the message.
			v.warnf(RuleShadowedVariable, vp, m.Value, "variable message shadows the message the expression is evaluated on")
		}
		if m.Value.Kind != String || !IsSimplePath(m.Value.Str) {
			v.errf("V-026", vp, m.Value, "variable path %s is not a simple path", CompactJSON(m.Value))
		}
	}
}

func (v *validator) semantic(s *Value, p string) {
	v.warnf("W-007", p, s, "semantic indicators are experimental and need an evaluator; without one they are skipped")
	if t := s.Get("target"); present(t) && !IsWildcardPath(t.Str) {
		v.errf("V-021", p+".target", t, "target %q is not a wildcard path", t.Str)
	}
	if th := s.Get("threshold"); present(th) && th.IsNumber() && (th.Number() < 0 || th.Number() > 1) {
		v.errf("V-022", p+".threshold", th, "threshold must be between 0.0 and 1.0, got %v", th.Number())
	}
	v.enum(s.Get("intent_class"), p+".intent_class", enumIntentClass)
}
