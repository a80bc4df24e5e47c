package ir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads one model from YAML. It returns the model (nil when the YAML
// itself cannot be read) and every problem found, each with its position.
// Unknown keys, duplicate keys, anchors, aliases and explicit tags are
// errors. Expressions are parsed and typed here; Lint adds the checks that
// need the clause catalog.
func Parse(data []byte, file string) (*Model, Diagnostics) {
	return ParseWith(data, file, ParseOptions{})
}

// ParseOptions changes how a model is read.
type ParseOptions struct {
	// Defines overrides the values of the model's constants (-D NAME=N). A
	// name the model does not declare is an error.
	Defines map[string]int
}

// ParseWith is Parse with options.
func ParseWith(data []byte, file string, opts ParseOptions) (*Model, Diagnostics) {
	p := &parser{d: diags{file: file}, defines: opts.Defines, broken: map[string]bool{}}
	if !p.checkBytes(data) {
		return nil, p.d.list
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) == 0 {
		p.d.add(Pos{Line: 1, Col: 1}, "empty", "the file is empty")
		return nil, p.d.list
	}
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.d.add(Pos{Line: 1, Col: 1}, "empty", "the file is empty")
		} else {
			p.d.add(yamlErrPos(err), "yaml", "invalid YAML: %v", err)
		}
		return nil, p.d.list
	}
	var second yaml.Node
	if err := decodeNode(dec, &second); err == nil {
		p.d.add(p.pos(&second), "yaml", "a second YAML document starts here; a model file holds exactly one")
	}
	if !p.checkDepth(&doc, 0) {
		return nil, p.d.list
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		// Nothing else can be read from a list or a scalar.
		p.d.add(p.pos(root), "yaml", "a model file is a mapping (ir_version: 1, model: NAME, ...), not %s", nodeKind(root))
		return nil, p.d.list
	}
	m := &Model{File: file}
	p.m = m
	p.model(root, m)
	return m, p.d.list
}

func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: %v", r)
		}
	}()
	return dec.Decode(n)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlErrPos is the line a YAML error names. The YAML library numbers the
// lines of its parser's errors ("did not find expected ...") from 0 and
// those of its scanner from 1; both are returned counted from 1.
func yamlErrPos(err error) Pos {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		if strings.Contains(err.Error(), "did not find expected") {
			n++
		}
		return Pos{Line: n, Col: 1}
	}
	return Pos{Line: 1, Col: 1}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %q", n.Value)
	}
	return "this"
}

type parser struct {
	d       diags
	defines map[string]int
	consts  map[string]int // the model's constants, after Defines
	m       *Model
	fixed   []boundVar // the parameters of the transition instance being read
	// broken names the domains and variables whose declarations had
	// errors: those errors are reported once, not again at every use.
	broken    map[string]bool
	scalars   map[string]int // scalarIndex
	scalarsOf int            // the number of variables scalars was built from
}

func (p *parser) pos(n *yaml.Node) Pos { return Pos{File: p.d.file, Line: n.Line, Col: n.Column} }

// ok reports the YAML features models must not use on n.
func (p *parser) ok(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode {
		p.d.add(p.pos(n), "yaml", "alias \"*%s\" is not allowed: write the value out", n.Value)
		return false
	}
	if n.Anchor != "" {
		p.d.add(p.pos(n), "yaml", "anchor \"&%s\" is not allowed", n.Anchor)
	}
	if n.Style&yaml.TaggedStyle != 0 {
		p.d.add(p.pos(n), "yaml", "explicit tag %q is not allowed", n.Tag)
		return false
	}
	return true
}

// fields walks a mapping, calling the handler of each known key; unknown
// and duplicate keys are reported.
func (p *parser) fields(n *yaml.Node, what string, handlers map[string]func(v *yaml.Node)) {
	if !p.ok(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.d.add(p.pos(n), "yaml", "%s must be a mapping", what)
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.ok(k) || !p.ok(v) {
			continue
		}
		if seen[k.Value] {
			p.d.add(p.pos(k), "duplicate-key", "duplicate key %q in %s", k.Value, what)
			continue
		}
		seen[k.Value] = true
		h, known := handlers[k.Value]
		if !known {
			keys := make([]string, 0, len(handlers))
			for key := range handlers {
				keys = append(keys, key)
			}
			slices.Sort(keys)
			p.d.add(p.pos(k), "unknown-key", "unknown key %q in %s (known: %v)", k.Value, what, keys)
			continue
		}
		h(v)
	}
}

func (p *parser) str(n *yaml.Node, dst *string) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.d.add(p.pos(n), "yaml", "expected a string")
		return
	}
	*dst = n.Value
}

func (p *parser) integer(n *yaml.Node, dst *int) bool {
	if c, ok := p.consts[n.Value]; ok && n.Kind == yaml.ScalarNode {
		*dst = c
		return true
	}
	v, err := strconv.Atoi(n.Value)
	if n.Kind != yaml.ScalarNode || err != nil {
		p.d.add(p.pos(n), "yaml", "expected an integer, not %q", n.Value)
		return false
	}
	*dst = v
	return true
}

func (p *parser) strList(n *yaml.Node, dst *[]string) {
	if n.Kind != yaml.SequenceNode {
		p.d.add(p.pos(n), "yaml", "expected a list of strings")
		return
	}
	for _, c := range n.Content {
		if p.ok(c) {
			var s string
			p.str(c, &s)
			*dst = append(*dst, s)
		}
	}
}

func (p *parser) oneOf(n *yaml.Node, dst *string, what string, allowed []string) {
	p.str(n, dst)
	if *dst != "" && !slices.Contains(allowed, *dst) {
		p.d.add(p.pos(n), "invalid-"+what, "%s %q is not one of %v", what, *dst, allowed)
	}
}

// exprPos is where the text of a scalar starts: after the opening quote.
func (p *parser) exprPos(n *yaml.Node) Pos {
	pos := p.pos(n)
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		pos.Col++
	}
	return pos
}

// expr parses and types an expression over the model's state, with the
// transition parameters being expanded (p.fixed) bound.
func (p *parser) expr(n *yaml.Node, want *Type) *Expr {
	return p.exprIn(n, &scope{vars: p.m.Vars, arrays: p.m.Arrays, records: p.m.Records, domains: p.m.Domains, bound: p.fixed, broken: p.broken, scalars: p.scalarIndex()}, want)
}

// scalarIndex maps the name of each scalar variable (not an array cell)
// to its index in p.m.Vars, rebuilt when variables have been added.
func (p *parser) scalarIndex() map[string]int {
	if p.scalars == nil || p.scalarsOf != len(p.m.Vars) {
		p.scalars, p.scalarsOf = map[string]int{}, len(p.m.Vars)
		for i, v := range p.m.Vars {
			if _, dup := p.scalars[v.Name]; !dup && v.Index == nil {
				p.scalars[v.Name] = i
			}
		}
	}
	return p.scalars
}

func (p *parser) exprIn(n *yaml.Node, sc *scope, want *Type) *Expr {
	if n.Kind != yaml.ScalarNode {
		p.d.add(p.pos(n), "yaml", "an expression must be a string")
		return nil
	}
	e, diag := ParseExpr(n.Value, p.exprPos(n))
	if diag != nil {
		diag.Pos.File = p.d.file
		p.d.list = append(p.d.list, *diag)
		return nil
	}
	p.substConstants(e, sc)
	t := resolve(e, sc, want, &p.d)
	if want != nil && t.Kind != 0 && !compatible(*want, t) {
		p.d.add(e.Pos, "type-mismatch", "expected %s, not %s", want, t)
	} else if want != nil && t.Kind != 0 && (symTag(*want) != "" || symTag(t) != "") {
		symMeet(e, t, symTag(*want), &p.d)
	}
	return e
}

// substConstants replaces every identifier that names a constant (and no
// variable) with the constant's value.
func (p *parser) substConstants(e *Expr, sc *scope) {
	if e == nil {
		return
	}
	if e.Op == OpVar {
		if v, ok := p.consts[e.Name]; ok && !sc.taken(e.Name) && e.Field == "" {
			*e = Expr{Op: OpConst, Val: v, Type: Type{Kind: Int, Min: v, Max: v}, Pos: e.Pos}
		}
		return
	}
	if _, ok := p.consts[e.Name]; ok && (e.Op == OpForall || e.Op == OpExists) {
		p.d.add(e.Pos, "name", "bound variable %q has the name of a constant", e.Name)
	}
	for _, a := range e.Args {
		p.substConstants(a, sc)
	}
}

func (p *parser) constant(n *yaml.Node, m *Model) {
	c := Constant{Pos: p.pos(n)}
	var valueGiven bool
	p.fields(n, "a constant", map[string]func(*yaml.Node){
		"name":  func(x *yaml.Node) { p.str(x, &c.Name) },
		"value": func(x *yaml.Node) { valueGiven = true; p.integer(x, &c.Value) },
		"doc":   func(x *yaml.Node) { p.str(x, &c.Doc) },
	})
	switch {
	case c.Name == "":
		p.d.add(c.Pos, "missing", "a constant needs a name")
		return
	case !validIdent(c.Name):
		p.d.add(c.Pos, "name", "constant name %q must be an identifier", c.Name)
		return
	case !valueGiven:
		p.d.add(c.Pos, "missing", "constant %q needs an integer value", c.Name)
	}
	if _, dup := p.consts[c.Name]; dup {
		p.d.add(c.Pos, "duplicate-id", "constant %q is declared twice", c.Name)
		return
	}
	from := ""
	if v, ok := p.defines[c.Name]; ok {
		c.Value = v
		from = fmt.Sprintf(" (from -D %s=%d)", c.Name, v)
	}
	if c.Value < -MaxIntBound || c.Value > MaxIntBound {
		p.d.add(c.Pos, "out-of-domain", "constant %q = %d%s is out of range (at most 2^20 in size)", c.Name, c.Value, from)
	}
	p.consts[c.Name] = c.Value
	m.Constants = append(m.Constants, c)
}

func (p *parser) model(n *yaml.Node, m *Model) {
	var varsNode, transNode, propsNode, constNode, domNode *yaml.Node
	versionSeen := false
	p.fields(n, "the model", map[string]func(*yaml.Node){
		"ir_version": func(v *yaml.Node) {
			versionSeen = true
			if p.integer(v, &m.IRVersion) && m.IRVersion != Version {
				p.d.add(p.pos(v), "ir-version", "ir_version %d is not supported (this warden reads %d)", m.IRVersion, Version)
			}
		},
		"model":        func(v *yaml.Node) { p.str(v, &m.Name) },
		"protocol":     func(v *yaml.Node) { p.str(v, &m.Protocol) },
		"protocols":    func(v *yaml.Node) { p.strList(v, &m.Protocols) },
		"pattern":      func(v *yaml.Node) { p.integer(v, &m.Pattern) },
		"spec_version": func(v *yaml.Node) { p.str(v, &m.SpecVersion) },
		"title":        func(v *yaml.Node) { p.str(v, &m.Title) },
		"description":  func(v *yaml.Node) { p.str(v, &m.Description) },
		"constants":    func(v *yaml.Node) { constNode = v },
		"domains":      func(v *yaml.Node) { domNode = v },
		"variables":    func(v *yaml.Node) { varsNode = v },
		"transitions":  func(v *yaml.Node) { transNode = v },
		"properties":   func(v *yaml.Node) { propsNode = v },
	})
	if !versionSeen {
		p.d.add(p.pos(n), "ir-version", "the model needs \"ir_version: %d\"", Version)
	}
	if m.Name == "" {
		p.d.add(p.pos(n), "missing", "the model needs a name (\"model:\")")
	}
	p.consts = map[string]int{}
	if constNode != nil {
		p.list(constNode, "constants", func(c *yaml.Node) { p.constant(c, m) })
	}
	for name := range p.defines {
		if _, ok := p.consts[name]; !ok {
			p.d.add(p.pos(n), "unknown-constant", "-D %s: the model declares no constant %q", name, name)
		}
	}
	if domNode != nil {
		p.list(domNode, "domains", func(c *yaml.Node) { p.domain(c, m) })
	}
	if varsNode != nil {
		p.list(varsNode, "variables", func(c *yaml.Node) { p.variable(c, m) })
		p.enumValuesNotVariables(m)
	}
	if transNode != nil {
		p.list(transNode, "transitions", func(c *yaml.Node) { m.declared++; p.transition(c, m) })
	}
	if propsNode != nil {
		p.list(propsNode, "properties", func(c *yaml.Node) { p.property(c, m) })
	}
}

// enumValuesNotVariables refuses a variable (or array, or record) named
// like a value of an enum the model declares: an identifier such as len
// would then read the variable where the enum's value was meant, silently.
func (p *parser) enumValuesNotVariables(m *Model) {
	values := map[string]string{} // value → the enum it belongs to
	note := func(t Type, of string) {
		if t.Kind == Set && t.Elem != nil {
			t = *t.Elem
		}
		if t.Kind == Enum {
			for _, v := range t.Values {
				if _, ok := values[v]; !ok {
					values[v] = of
				}
			}
		}
	}
	for _, d := range m.Domains {
		note(d.Type, "domain "+d.Name)
	}
	for _, v := range m.Vars {
		note(v.Type, fmt.Sprintf("%q", v.Name))
	}
	seen := map[string]bool{}
	check := func(name string, pos Pos) {
		if of, ok := values[name]; ok && !seen[name] {
			seen[name] = true
			p.d.add(pos, "duplicate-id", "variable %q has the name of a value of %s; rename one of them", name, of)
		}
	}
	for _, a := range m.Arrays {
		if a.Record == "" {
			check(a.Name, a.Pos)
		}
	}
	for _, r := range m.Records {
		check(r.Name, r.Pos)
	}
	for _, v := range m.Vars {
		if !strings.ContainsAny(v.Name, "[.") {
			check(v.Name, v.Pos)
		}
	}
}

func (p *parser) list(n *yaml.Node, what string, fn func(*yaml.Node)) {
	if !p.ok(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.d.add(p.pos(n), "yaml", "%s must be a list", what)
		return
	}
	for _, c := range n.Content {
		fn(c)
	}
}

// typeSpec is what a variable or domain declaration says about its type.
type typeSpec struct {
	typ            string // bool, enum, int, a domain, "set D", "D1 -> ... -> T"
	values         []string
	min, max       int
	minSet, maxSet bool
	failed         bool     // min or max was not an integer (and that is reported)
	boundNames     []string // the constants min and max name
}

// definedBy says which -D set the constants a declaration's bounds name,
// for a message about those bounds: " (AGENTS = 0 from -D AGENTS=0)".
func (p *parser) definedBy(ts *typeSpec) string {
	var parts []string
	for _, name := range ts.boundNames {
		if v, ok := p.defines[name]; ok {
			parts = append(parts, fmt.Sprintf("%s = %d from -D %s=%d", name, v, name, v))
		}
	}
	if parts == nil {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// scalarType resolves a type that is not an array: bool, enum, int, a
// declared domain, or "set D". what names the declaration in messages.
func (p *parser) scalarType(typ string, ts *typeSpec, what string, pos Pos) (Type, bool) {
	fields := strings.Fields(typ)
	switch {
	case typ == "bool":
		return Type{Kind: Bool}, true
	case typ == "enum":
		t := Type{Kind: Enum, Values: ts.values}
		if len(t.Values) < 1 {
			p.d.add(pos, "domain", "enum %s needs at least one value", what)
		}
		for i, val := range t.Values {
			if slices.Index(t.Values, val) != i {
				p.d.add(pos, "domain", "enum %s lists %q twice", what, val)
			}
			if !validIdent(val) {
				p.d.add(pos, "domain", "enum value %q of %s must be an identifier", val, what)
			}
			if _, ok := p.consts[val]; ok {
				p.d.add(pos, "duplicate-id", "enum value %q of %s has the name of a constant", val, what)
			}
		}
		return t, len(t.Values) > 0
	case typ == "int":
		t := Type{Kind: Int, Min: ts.min, Max: ts.max}
		if !ts.minSet || !ts.maxSet {
			if !ts.failed {
				p.d.add(pos, "domain", "int %s needs min and max", what)
			}
			return t, false
		} else if t.Min < -MaxIntBound || t.Max > MaxIntBound {
			p.d.add(pos, "domain", "int %s: its bounds %d..%d are outside -%d..%d", what, t.Min, t.Max, MaxIntBound, MaxIntBound)
			return t, false
		} else if t.Min > t.Max {
			p.d.add(pos, "domain", "int %s needs min <= max, not min %d > max %d%s", what, t.Min, t.Max, p.definedBy(ts))
			return t, false
		} else if t.Max-t.Min > 1<<16 {
			p.d.add(pos, "domain", "int %s has more than 65536 values; bound it more tightly", what)
			return t, false
		}
		return t, true
	case len(fields) == 2 && fields[0] == "set":
		dom := p.domainType(fields[1], pos)
		if dom == nil {
			return Type{}, false
		}
		if dom.Size() > MaxSetElems {
			p.d.add(pos, "domain", "set %s ranges over %d elements; at most %d", what, dom.Size(), MaxSetElems)
			return Type{}, false
		}
		return Type{Kind: Set, Elem: dom}, true
	case len(fields) == 1 && validIdent(typ):
		if dom := p.domainType(typ, pos); dom != nil {
			return *dom, true
		}
		return Type{}, false
	}
	p.d.add(pos, "invalid-type", "type %q of %s is not bool, enum, int, a domain, \"set D\" or \"D -> T\"", typ, what)
	return Type{}, false
}

func (p *parser) domainType(name string, pos Pos) *Type {
	for _, d := range p.m.Domains {
		if d.Name == name {
			t := d.Type
			return &t
		}
	}
	if !p.broken[name] {
		p.d.add(pos, "unknown-domain", "unknown domain %q (declare it under domains:)", name)
	}
	return nil
}

func (p *parser) typeFields(ts *typeSpec) map[string]func(*yaml.Node) {
	return map[string]func(*yaml.Node){
		"type":   func(x *yaml.Node) { p.str(x, &ts.typ) },
		"values": func(x *yaml.Node) { p.strList(x, &ts.values) },
		"min":    func(x *yaml.Node) { ts.minSet = p.bounds(x, &ts.min, ts) },
		"max":    func(x *yaml.Node) { ts.maxSet = p.bounds(x, &ts.max, ts) },
	}
}

// bounds reads a min or max: an integer or a constant's name.
func (p *parser) bounds(x *yaml.Node, dst *int, ts *typeSpec) bool {
	if !p.integer(x, dst) {
		ts.failed = true
		return false
	}
	if _, ok := p.consts[x.Value]; ok {
		ts.boundNames = append(ts.boundNames, x.Value)
	}
	return true
}

// domain reads one entry of domains: a named enum or int range.
func (p *parser) domain(n *yaml.Node, m *Model) {
	d := Domain{Pos: p.pos(n)}
	var ts typeSpec
	fields := p.typeFields(&ts)
	fields["name"] = func(x *yaml.Node) { p.str(x, &d.Name) }
	fields["doc"] = func(x *yaml.Node) { p.str(x, &d.Doc) }
	fields["symmetric"] = func(x *yaml.Node) {
		if x.Kind != yaml.ScalarNode || x.Value != "true" && x.Value != "false" {
			p.d.add(p.pos(x), "yaml", "symmetric must be true or false")
		}
		d.Symmetric = x.Value == "true"
	}
	p.fields(n, "a domain", fields)
	switch {
	case !validIdent(d.Name):
		p.d.add(d.Pos, "name", "domain name %q must be an identifier", d.Name)
		return
	case d.Name == "bool" || d.Name == "int" || d.Name == "enum" || d.Name == "set":
		// "type: bool" would still mean the built-in type, not this domain.
		p.d.add(d.Pos, "name", "domain name %q is a built-in type's; choose another", d.Name)
		p.broken[d.Name] = true
		return
	case ts.typ != "enum" && ts.typ != "int":
		p.d.add(d.Pos, "invalid-type", "domain %s is an enum or an int range, not %q", d.Name, ts.typ)
		p.broken[d.Name] = true
		return
	case slices.ContainsFunc(m.Domains, func(x Domain) bool { return x.Name == d.Name }):
		p.d.add(d.Pos, "duplicate-id", "domain %q is declared twice", d.Name)
		return
	}
	t, ok := p.scalarType(ts.typ, &ts, "domain "+d.Name, d.Pos)
	if !ok {
		p.broken[d.Name] = true
		return
	}
	if d.Symmetric {
		t.Sym = d.Name
	}
	d.Type = t
	m.Domains = append(m.Domains, d)
}

func (p *parser) variable(n *yaml.Node, m *Model) {
	v := Var{Pos: p.pos(n)}
	var ts typeSpec
	var initNode *yaml.Node
	fields := p.typeFields(&ts)
	nameGiven := false
	fields["name"] = func(x *yaml.Node) { nameGiven = true; p.str(x, &v.Name) }
	fields["init"] = func(x *yaml.Node) { initNode = x }
	fields["doc"] = func(x *yaml.Node) { p.str(x, &v.Doc) }
	p.fields(n, "a variable", fields)
	what := fmt.Sprintf("%q", v.Name)
	if v.Name == "" && !nameGiven {
		p.d.add(v.Pos, "missing", "a variable needs a name")
	} else if v.Name != "" && !validIdent(v.Name) {
		p.d.add(v.Pos, "name", "variable name %q must be an identifier", v.Name)
	} else if m.VarIndex(v.Name) >= 0 || m.ArrayIndex(v.Name) >= 0 || m.RecordIndex(v.Name) >= 0 {
		p.d.add(v.Pos, "duplicate-id", "variable %q is declared twice", v.Name)
	} else if _, ok := p.consts[v.Name]; ok {
		p.d.add(v.Pos, "duplicate-id", "variable %q has the name of a constant", v.Name)
	}
	if ts.typ != "enum" && len(ts.values) > 0 {
		p.d.add(v.Pos, "domain", "only enum variables have values")
	}
	if ts.typ == "" {
		p.d.add(v.Pos, "missing", "variable %s needs a type", what)
		m.Vars = append(m.Vars, v)
		return
	}
	if strings.Contains(ts.typ, "->") || strings.HasPrefix(strings.TrimSpace(ts.typ), "{") {
		before := len(p.d.list)
		if strings.Contains(ts.typ, "->") {
			p.arrayVar(v, &ts, initNode, m)
		} else {
			p.recordVar(v, &ts, initNode, m)
		}
		if len(p.d.list) > before && v.Name != "" {
			p.broken[v.Name] = true
		}
		return
	}
	t, ok := p.scalarType(ts.typ, &ts, what, v.Pos)
	if !ok {
		t = Type{} // reported; its uses are not checked against a type it does not have
	}
	v.Type = t
	if t.Kind == Int {
		v.Init = t.Min
	}
	p.symScalar(t, v.Name, v.Pos)
	if ok && initNode != nil {
		v.Init = p.initValue(initNode, t, nil)
	}
	m.Vars = append(m.Vars, v)
}

// arrayVar declares an array "D1 -> ... -> T": one cell variable per
// index tuple, named name[i1][i2]. Its init is one expression for every
// cell, which may read the indices when the type names them:
// type "ag: Agent -> set Cap", init "if ag == 1 then {read} else {}".
func (p *parser) arrayVar(v Var, ts *typeSpec, initNode *yaml.Node, m *Model) {
	parts := strings.Split(ts.typ, "->")
	a := Array{Name: v.Name, Doc: v.Doc, Pos: v.Pos, First: len(m.Vars)}
	ok := true
	var names []string
	for _, ix := range parts[:len(parts)-1] {
		ix = strings.TrimSpace(ix)
		// An index may be named for the init expression: "ag: Agent".
		name := ""
		if k, dom, found := strings.Cut(ix, ":"); found {
			name, ix = strings.TrimSpace(k), strings.TrimSpace(dom)
		}
		names = append(names, name)
		d := p.domainType(ix, v.Pos)
		if d == nil {
			ok = false
			continue
		}
		a.Index = append(a.Index, *d)
	}
	elemText := strings.TrimSpace(parts[len(parts)-1])
	if strings.HasPrefix(elemText, "{") {
		// An array of records: one array per field.
		fields, fok := p.recordType(elemText, fmt.Sprintf("%q's cells", v.Name), v.Pos)
		if !ok || !fok {
			return
		}
		inits := p.recordInit(initNode, v.Name, fields)
		if a.Cells()*len(fields) > 1<<12 {
			p.d.add(v.Pos, "domain", "array of records %q has %d cells; at most 4096", v.Name, a.Cells()*len(fields))
			return
		}
		r := Record{Name: v.Name, Index: a.Index, Doc: v.Doc, Pos: v.Pos}
		for i, f := range fields {
			fa := a
			fa.Name, fa.Record, fa.Field, fa.Elem, fa.First = v.Name+"."+f.Name, v.Name, f.Name, f.Type, len(m.Vars)
			f.Var = len(m.Arrays)
			p.addArray(fa, names, inits[i], m)
			fields[i] = f
		}
		r.Fields = fields
		m.Records = append(m.Records, r)
		return
	}
	cells := fmt.Sprintf("%q's cells", v.Name)
	// A cell type may be written in place, "D -> enum [a, b]" or
	// "D -> int [0..3]", as a record's field may.
	var its typeSpec
	if inline, bad := p.inlineType(elemText, "cell", &its); bad != "" {
		p.d.add(v.Pos, "invalid-type", "%s: %s", cells, bad)
		return
	} else if inline {
		elemText, ts = its.typ, &its
	}
	elem, eok := p.scalarType(elemText, ts, cells, v.Pos)
	if !ok || !eok {
		return
	}
	a.Elem = elem
	if a.Cells() > 1<<12 {
		p.d.add(v.Pos, "domain", "array %q has %d cells; at most 4096", v.Name, a.Cells())
		return
	}
	p.addArray(a, names, initNode, m)
}

// addArray appends a to the model with its cells, each initialised by
// initNode, which may read the named indices (names[i] names index i).
func (p *parser) addArray(a Array, names []string, initNode *yaml.Node, m *Model) {
	ai := len(m.Arrays)
	m.Arrays = append(m.Arrays, a)
	base := a.Name
	if a.Record != "" {
		base = a.Record
	}
	idx := make([]int, len(a.Index))
	var cells func(dim int)
	cells = func(dim int) {
		if dim == len(a.Index) {
			c := Var{Name: base, Type: a.Elem, Doc: a.Doc, Pos: a.Pos, Array: ai, Index: slices.Clone(idx)}
			var bound []boundVar
			for i, t := range a.Index {
				c.Name += "[" + t.Format(idx[i]) + "]"
				if names[i] != "" {
					bound = append(bound, boundVar{name: names[i], typ: t, fixed: true, val: idx[i]})
				}
			}
			if a.Record != "" {
				c.Name += "." + a.Field
			}
			if a.Elem.Kind == Int {
				c.Init = a.Elem.Min
			}
			if initNode != nil {
				c.Init = p.initValue(initNode, a.Elem, bound)
			} else if a.Elem.Sym != "" {
				p.d.add(a.Pos, "symmetry", "the cells of %s hold values of the symmetric domain %s and would all start at its first element; give an init that reads a named index over %s (\"ag: %s -> %s\", init: ag)", a.Name, a.Elem.Sym, a.Elem.Sym, a.Elem.Sym, a.Elem.Sym)
			}
			m.Vars = append(m.Vars, c)
			return
		}
		for _, x := range a.Index[dim].Elems() {
			idx[dim] = x
			cells(dim + 1)
		}
	}
	cells(0)
}

// symScalar reports a variable (not an array cell) of a symmetric domain:
// whatever its initial value, that value is one element told apart from
// the others. A set of the domain (starting empty) or an array indexed by
// it holds the same information symmetrically.
func (p *parser) symScalar(t Type, name string, pos Pos) {
	if t.Kind != Set && t.Sym != "" {
		p.d.add(pos, "symmetry", "variable %s holds one element of the symmetric domain %s, so its initial value tells that element apart; use \"set %s\" or an array indexed by %s", name, t.Sym, t.Sym, t.Sym)
	}
}

// recordVar declares a record variable "{f1: T1, f2: T2}": one scalar
// variable per field, named name.f1, name.f2.
func (p *parser) recordVar(v Var, ts *typeSpec, initNode *yaml.Node, m *Model) {
	fields, ok := p.recordType(ts.typ, fmt.Sprintf("%q", v.Name), v.Pos)
	if !ok {
		return
	}
	inits := p.recordInit(initNode, v.Name, fields)
	r := Record{Name: v.Name, Doc: v.Doc, Pos: v.Pos}
	for i, f := range fields {
		c := Var{Name: v.Name + "." + f.Name, Type: f.Type, Doc: v.Doc, Pos: v.Pos}
		p.symScalar(f.Type, c.Name, v.Pos)
		if f.Type.Kind == Int {
			c.Init = f.Type.Min
		}
		if inits[i] != nil {
			c.Init = p.initValue(inits[i], f.Type, nil)
		}
		fields[i].Var = len(m.Vars)
		m.Vars = append(m.Vars, c)
	}
	r.Fields = fields
	m.Records = append(m.Records, r)
}

// recordInit reads a record's init, a mapping from field name to initial
// value: {state: idle, owner: 1}. A field it leaves out starts at its
// domain's first value. The result is indexed like fields.
func (p *parser) recordInit(n *yaml.Node, name string, fields []Field) []*yaml.Node {
	out := make([]*yaml.Node, len(fields))
	if n == nil || !p.ok(n) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.d.add(p.pos(n), "init", "the init of record %q is a mapping from field to initial value, {%s: ...}", name, fields[0].Name)
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.ok(k) || !p.ok(v) {
			continue
		}
		fi := slices.IndexFunc(fields, func(f Field) bool { return f.Name == k.Value })
		switch {
		case fi < 0:
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.Name
			}
			p.d.add(p.pos(k), "unknown-field", "record %q has no field %q (its fields: %s)", name, k.Value, strings.Join(names, ", "))
		case out[fi] != nil:
			p.d.add(p.pos(k), "duplicate-key", "field %q is initialised twice", k.Value)
		default:
			out[fi] = v
		}
	}
	return out
}

// recordType reads "{f1: T1, f2: T2, ...}". A field's type is bool, a
// domain, "set D", "enum [v1, v2, ...]" or "int [lo..hi]" (lo and hi
// integers or constants).
func (p *parser) recordType(typ, what string, pos Pos) ([]Field, bool) {
	typ = strings.TrimSpace(typ)
	if !strings.HasPrefix(typ, "{") || !strings.HasSuffix(typ, "}") {
		p.d.add(pos, "invalid-type", "record type of %s must be {field: type, ...}, not %q", what, typ)
		return nil, false
	}
	var parts []string
	depth, startAt := 0, 1
	for i := 1; i < len(typ)-1; i++ {
		switch typ[i] {
		case '[':
			depth++
		case ']':
			depth--
		case '{':
			p.d.add(pos, "invalid-type", "a field of %s is a record; records do not nest", what)
			return nil, false
		case ',':
			if depth == 0 {
				parts = append(parts, typ[startAt:i])
				startAt = i + 1
			}
		}
	}
	parts = append(parts, typ[startAt:len(typ)-1])
	var fields []Field
	ok := true
	for _, part := range parts {
		name, ft, found := strings.Cut(part, ":")
		name, ft = strings.TrimSpace(name), strings.TrimSpace(ft)
		switch {
		case !found || name == "" || ft == "":
			p.d.add(pos, "invalid-type", "field %q of %s must be \"name: type\"", strings.TrimSpace(part), what)
			ok = false
			continue
		case !validIdent(name):
			p.d.add(pos, "name", "field name %q of %s must be an identifier", name, what)
			ok = false
			continue
		case slices.ContainsFunc(fields, func(f Field) bool { return f.Name == name }):
			p.d.add(pos, "duplicate-id", "%s has two fields named %q", what, name)
			ok = false
			continue
		}
		fwhat := fmt.Sprintf("field %s of %s", name, what)
		var ts typeSpec
		inline, bad := p.inlineType(ft, "field", &ts)
		switch {
		case bad != "":
			p.d.add(pos, "invalid-type", "%s: %s", fwhat, bad)
			ok = false
			continue
		case inline:
		case ft == "enum" || ft == "int":
			p.d.add(pos, "invalid-type", "%s: write \"enum [v1, v2]\" or \"int [lo..hi]\", or name a domain", fwhat)
			ok = false
			continue
		default:
			ts.typ = ft
		}
		t, tok := p.scalarType(ts.typ, &ts, fwhat, pos)
		if !tok {
			ok = false
			continue
		}
		fields = append(fields, Field{Name: name, Type: t})
	}
	if ok && len(fields) == 0 {
		p.d.add(pos, "invalid-type", "record type of %s has no fields", what)
		ok = false
	}
	return fields, ok
}

// inlineType reads a type written in place, "enum [v1, v2, ...]" or
// "int [lo..hi]" (lo and hi integers or constants), into ts; noun says
// what has the type in messages (field, cell). It reports
// whether text has one of those forms and, when it is malformed, why.
func (p *parser) inlineType(text, noun string, ts *typeSpec) (inline bool, bad string) {
	switch {
	case strings.HasPrefix(text, "enum") && text != "enum":
		vals := strings.TrimSpace(strings.TrimPrefix(text, "enum"))
		if !strings.HasPrefix(vals, "[") || !strings.HasSuffix(vals, "]") {
			return true, fmt.Sprintf("an enum %s is written \"enum [v1, v2, ...]\", not %q", noun, text)
		}
		for _, val := range strings.Split(vals[1:len(vals)-1], ",") {
			ts.values = append(ts.values, strings.TrimSpace(val))
		}
		ts.typ = "enum"
		return true, ""
	case strings.HasPrefix(text, "int") && strings.Contains(text, ".."):
		rng := strings.TrimSpace(strings.TrimPrefix(text, "int"))
		lo, hi, _ := strings.Cut(strings.Trim(rng, "[]"), "..")
		ts.typ = "int"
		ts.min, ts.minSet = p.bound(strings.TrimSpace(lo))
		ts.max, ts.maxSet = p.bound(strings.TrimSpace(hi))
		if !ts.minSet || !ts.maxSet || !strings.HasPrefix(rng, "[") || !strings.HasSuffix(rng, "]") {
			return true, fmt.Sprintf("an int %s is written \"int [lo..hi]\" with integers or constants, not %q", noun, text)
		}
		return true, ""
	}
	return false, ""
}

// bound reads an integer or a constant's value.
func (p *parser) bound(s string) (int, bool) {
	if c, ok := p.consts[s]; ok {
		return c, true
	}
	v, err := strconv.Atoi(s)
	return v, err == nil
}

// initValue is the value of an init expression: a constant once the
// array's named indices (bound) have their values.
func (p *parser) initValue(n *yaml.Node, t Type, bound []boundVar) int {
	before := len(p.d.list)
	e := p.exprIn(n, &scope{domains: p.m.Domains, bound: bound, broken: p.broken}, &t)
	if e == nil || len(p.d.list) > before {
		return 0
	}
	val, err := EvalConst(e, nil)
	if err != nil {
		p.d.add(p.pos(n), "init", "the initial value must be a constant: %v", err)
		return 0
	}
	if !t.Contains(val) {
		p.d.add(e.Pos, "out-of-domain", "initial value %s is outside %s", t.Format(val), t)
	}
	return val
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validIdent(s string) bool {
	return identRE.MatchString(s) && !slices.Contains(Keywords, s)
}

// ValidName reports whether s may name a constant, a variable, a domain,
// a transition or a property: an identifier that is not a keyword.
func ValidName(s string) bool { return validIdent(s) }

func (p *parser) writes(n *yaml.Node, m *Model, dst *[]Assign) {
	if !p.ok(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		p.d.add(p.pos(n), "yaml", "writes must be a mapping from variable to expression")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !p.ok(k) || !p.ok(v) {
			continue
		}
		if seen[k.Value] {
			p.d.add(p.pos(k), "duplicate-key", "%q is written twice", k.Value)
			continue
		}
		seen[k.Value] = true
		idx, found := p.scalarIndex()[k.Value]
		if !found {
			idx = -1
		}
		if m.RecordIndex(k.Value) >= 0 {
			p.d.add(p.pos(k), "record", "record %q is written one field at a time: \"%s.%s\"", k.Value, k.Value, m.Records[m.RecordIndex(k.Value)].Fields[0].Name)
			continue
		}
		if strings.ContainsAny(k.Value, "[.") {
			// An array cell or a record field: its indices are constants
			// once the transition's parameters have values.
			lv := p.expr(k, nil)
			if lv == nil || lv.Type.Kind == 0 {
				continue
			}
			if lv.Op != OpVar {
				p.d.add(p.pos(k), "write", "%q is not an array cell with constant indices", k.Value)
				continue
			}
			idx = lv.Var
			if slices.ContainsFunc(*dst, func(a Assign) bool { return a.Var == idx }) {
				p.d.add(p.pos(k), "duplicate-key", "%s is written twice", m.Vars[idx].Name)
				continue
			}
		} else if idx < 0 {
			if !p.broken[k.Value] {
				p.d.add(p.pos(k), "unknown-variable", "write to unknown variable %q", k.Value)
			}
			continue
		}
		t := m.Vars[idx].Type
		e := p.expr(v, &t)
		if e == nil {
			continue
		}
		if e.Op == OpConst && compatible(t, e.Type) && !t.Contains(e.Val) {
			p.d.add(e.Pos, "out-of-domain", "constant %s is outside the domain of %s (%s)", t.Format(e.Val), k.Value, t)
		}
		*dst = append(*dst, Assign{Var: idx, Expr: e, Pos: p.pos(k)})
	}
}

var boolType = Type{Kind: Bool}

// transition reads one transition; one with params: is read once per
// binding of its parameters, in order (the first parameter varies
// slowest), each instance with its arguments fixed.
func (p *parser) transition(n *yaml.Node, m *Model) {
	var params []boundVar
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "params" {
				params = p.params(n.Content[i+1])
				if params == nil {
					return
				}
			}
		}
	}
	if params == nil {
		p.transitionOnce(n, m, nil)
		return
	}
	instances := 1
	for _, b := range params {
		instances = min(instances*b.typ.Size(), 1<<31)
	}
	if instances > MaxInstances {
		p.d.add(p.pos(n), "domain", "the params of this transition have %d bindings, so as many instances; at most %d", instances, MaxInstances)
		return
	}
	var expand func(i int)
	expand = func(i int) {
		if i == len(params) {
			p.fixed = slices.Clone(params)
			var args []Arg
			for _, b := range params {
				args = append(args, Arg{Name: b.name, Val: b.val, Type: b.typ})
			}
			p.transitionOnce(n, m, args)
			p.fixed = nil
			return
		}
		for _, v := range params[i].typ.Elems() {
			params[i].val = v
			expand(i + 1)
		}
	}
	expand(0)
}

// params reads `params: {name: Domain, ...}`; nil when it is invalid.
func (p *parser) params(n *yaml.Node) []boundVar {
	if !p.ok(n) || n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		p.d.add(p.pos(n), "yaml", "params must be a mapping from parameter name to domain")
		return nil
	}
	var out []boundVar
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		sc := &scope{vars: p.m.Vars, arrays: p.m.Arrays, records: p.m.Records}
		_, isConst := p.consts[name]
		switch {
		case !validIdent(name):
			p.d.add(p.pos(k), "name", "parameter name %q must be an identifier", name)
			return nil
		case sc.taken(name) || isConst || slices.ContainsFunc(out, func(b boundVar) bool { return b.name == name }):
			p.d.add(p.pos(k), "name", "parameter %q has the name of a variable, a constant or another parameter", name)
			return nil
		}
		d := p.domainType(v.Value, p.pos(v))
		if d == nil {
			return nil
		}
		out = append(out, boundVar{name: name, typ: *d, fixed: true})
	}
	return out
}

func (p *parser) transitionOnce(n *yaml.Node, m *Model, args []Arg) {
	t := Transition{Pos: p.pos(n), Args: args}
	var kind string
	p.fields(n, "a transition", map[string]func(*yaml.Node){
		"params": func(*yaml.Node) {},
		"id":     func(x *yaml.Node) { p.str(x, &t.ID) },
		"kind":   func(x *yaml.Node) { p.oneOf(x, &kind, "kind", []string{"Protocol", "Environment", "Adversary"}) },
		"adversary": func(x *yaml.Node) {
			p.oneOf(x, &t.Adversary, "adversary", AdversaryCaps)
		},
		"actor":       func(x *yaml.Node) { p.str(x, &t.Actor) },
		"trigger":     func(x *yaml.Node) { p.str(x, &t.Trigger) },
		"guard":       func(x *yaml.Node) { t.Guard = p.expr(x, &boolType) },
		"writes":      func(x *yaml.Node) { p.writes(x, m, &t.Writes) },
		"modality":    func(x *yaml.Node) { p.oneOf(x, &t.Modality, "modality", Modalities) },
		"source_refs": func(x *yaml.Node) { p.strList(x, &t.SourceRefs) },
		"assumption":  func(x *yaml.Node) { p.str(x, &t.Assumption) },
		"description": func(x *yaml.Node) { p.str(x, &t.Description) },
		"message":     func(x *yaml.Node) { t.Message = p.message(x) },
		"warden":      func(x *yaml.Node) { t.Warden = p.warden(x, m) },
	})
	t.Kind = Kind(kind)
	if t.ID == "" {
		p.d.add(t.Pos, "missing", "a transition needs an id")
	} else if !validIdent(t.ID) {
		p.d.add(t.Pos, "name", "transition id %q must be an identifier", t.ID)
	}
	if kind == "" {
		p.d.add(t.Pos, "missing", "transition %q needs a kind (Protocol, Environment or Adversary)", t.ID)
	}
	m.Transitions = append(m.Transitions, t)
}

func (p *parser) message(n *yaml.Node) *Message {
	msg := &Message{}
	p.fields(n, "a message", map[string]func(*yaml.Node){
		"method":    func(x *yaml.Node) { p.str(x, &msg.Method) },
		"transport": func(x *yaml.Node) { p.str(x, &msg.Transport) },
		"notify": func(x *yaml.Node) {
			if x.Value != "true" && x.Value != "false" {
				p.d.add(p.pos(x), "yaml", "notify must be true or false")
			}
			msg.Notify = x.Value == "true"
		},
		"params": func(x *yaml.Node) {
			if p.noAnchors(x) {
				var v any
				if err := x.Decode(&v); err != nil {
					p.d.add(p.pos(x), "yaml", "params: %v", err)
				}
				msg.Params = v
			}
		},
	})
	if (msg.Method == "") == (msg.Transport == "") {
		p.d.add(p.pos(n), "message", "a message has exactly one of method and transport")
	}
	return msg
}

func (p *parser) noAnchors(n *yaml.Node) bool {
	if !p.ok(n) {
		return false
	}
	good := true
	for _, c := range n.Content {
		good = p.noAnchors(c) && good
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i].Value; seen[k] {
				p.d.add(p.pos(n.Content[i]), "duplicate-key", "duplicate key %q", k)
				good = false
			} else {
				seen[k] = true
			}
		}
	}
	return good
}

func (p *parser) warden(n *yaml.Node, m *Model) *Warden {
	w := &Warden{Pos: p.pos(n)}
	p.fields(n, "a warden block", map[string]func(*yaml.Node){
		"guard":  func(x *yaml.Node) { w.Guard = p.expr(x, &boolType) },
		"writes": func(x *yaml.Node) { p.writes(x, m, &w.Writes) },
		"rule":   func(x *yaml.Node) { p.str(x, &w.Rule) },
	})
	if w.Guard == nil && len(w.Writes) == 0 {
		p.d.add(w.Pos, "warden", "a warden block needs a guard or writes")
	}
	return w
}

func (p *parser) property(n *yaml.Node, m *Model) {
	pr := Property{Pos: p.pos(n), Kind: Invariant}
	var kind, fair string
	var kindPos, fairPos, exprPos Pos
	given := map[string]bool{} // expr, from, to: given, even if they had errors
	p.fields(n, "a property", map[string]func(*yaml.Node){
		"id":        func(x *yaml.Node) { p.str(x, &pr.ID) },
		"kind":      func(x *yaml.Node) { kindPos = p.pos(x); p.oneOf(x, &kind, "kind", PropertyKinds) },
		"principle": func(x *yaml.Node) { p.oneOf(x, &pr.Principle, "principle", Principles) },
		"class":     func(x *yaml.Node) { p.oneOf(x, &pr.Class, "class", Classes) },
		"expr":      func(x *yaml.Node) { exprPos = p.pos(x); pr.Expr = p.expr(x, &boolType); given["expr"] = true },
		"from":      func(x *yaml.Node) { pr.From = p.expr(x, &boolType); given["from"] = true },
		"to":        func(x *yaml.Node) { pr.To = p.expr(x, &boolType); given["to"] = true },
		"fairness": func(x *yaml.Node) {
			fairPos = p.pos(x)
			p.oneOf(x, &fair, "fairness", Fairnesses)
		},
		"source_refs": func(x *yaml.Node) { p.strList(x, &pr.SourceRefs) },
		"description": func(x *yaml.Node) { p.str(x, &pr.Description) },
	})
	if pr.ID == "" || !validIdent(pr.ID) {
		p.d.add(pr.Pos, "name", "property id %q must be an identifier", pr.ID)
	}
	if slices.Contains(PropertyKinds, kind) {
		pr.Kind = PropertyKind(kind)
	}
	if pr.Principle == "" || pr.Class == "" {
		p.d.add(pr.Pos, "missing", "property %q needs principle and class", pr.ID)
	}
	switch pr.Kind {
	case Invariant:
		if !given["expr"] {
			p.d.add(pr.Pos, "missing", "property %q needs expr (an invariant)", pr.ID)
		}
		if given["from"] || given["to"] {
			p.d.add(pr.Pos, "property-kind", "property %q: from and to belong to a leads-to property (kind: leads-to); an invariant has expr", pr.ID)
		}
		if fair != "" {
			p.d.add(fairPos, "property-kind", "property %q: fairness applies to a leads-to property only; an invariant holds in every reachable state", pr.ID)
		}
	case LeadsTo:
		if !given["from"] || !given["to"] {
			p.d.add(pr.Pos, "missing", "leads-to property %q needs from and to (from ~> to)", pr.ID)
		}
		if given["expr"] {
			p.d.add(exprPos, "property-kind", "leads-to property %q has from and to, not expr (declared leads-to at %s)", pr.ID, kindPos)
		}
		pr.Fairness = WeakFairness
		if slices.Contains(Fairnesses, fair) {
			pr.Fairness = Fairness(fair)
		}
	}
	m.Properties = append(m.Properties, pr)
}
