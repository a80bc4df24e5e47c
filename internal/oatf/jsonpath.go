package oatf

// A JSONPath (RFC 9535) engine over Values, for extractors. It supports the
// whole selector syntax: names, wildcards, indexes, slices, unions,
// descendants and filters with comparisons, logical operators and the five
// standard functions (length, count, match, search, value).
//
//	$.tools[0].inputSchema     $..name     $.items[?@.price < 10 && @.tag]
//
// Results are in document order and keep the message's key order.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

type jsonPath struct{ segs []jpSegment }

type jpSegment struct {
	descendant bool
	sels       []jpSelector
}

type jpSelKind uint8

const (
	selName jpSelKind = iota
	selWild
	selIndex
	selSlice
	selFilter
)

type jpSelector struct {
	kind   jpSelKind
	name   string
	index  int
	slice  [3]*int
	filter jpExpr
}

type jpExpr interface{}

type (
	jpOr  struct{ terms []jpExpr }
	jpAnd struct{ terms []jpExpr }
	jpNot struct{ e jpExpr }
	jpCmp struct {
		op   string
		l, r jpExpr
	}
	jpLit   struct{ v *Value }
	jpQuery struct {
		relative bool
		path     *jsonPath
	}
	jpFunc struct {
		name string
		args []jpExpr
	}
)

var jsonPathCache sync.Map // string -> *jsonPath

// compileJSONPath parses an RFC 9535 query (V-015), with caching.
func compileJSONPath(s string) (*jsonPath, error) {
	if p, ok := jsonPathCache.Load(s); ok {
		return p.(*jsonPath), nil
	}
	ps := &jpParser{s: s}
	p, err := ps.parseQuery()
	if err != nil {
		return nil, err
	}
	jsonPathCache.Store(s, p)
	return p, nil
}

type jpParser struct {
	s     string
	i     int
	depth int
}

func (p *jpParser) errf(format string, args ...any) error {
	return fmt.Errorf("JSONPath %q, offset %d: %s", p.s, p.i, fmt.Sprintf(format, args...))
}

func (p *jpParser) parseQuery() (*jsonPath, error) {
	if !strings.HasPrefix(p.s, "$") {
		return nil, p.errf("a query starts with $")
	}
	p.i = 1
	q, err := p.segments()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.s) {
		return nil, p.errf("unexpected %q", p.s[p.i:])
	}
	return q, nil
}

func (p *jpParser) skipWS() {
	for p.i < len(p.s) && strings.IndexByte(" \t\n\r", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *jpParser) peekSegment() bool {
	j := p.i
	for j < len(p.s) && strings.IndexByte(" \t\n\r", p.s[j]) >= 0 {
		j++
	}
	return j < len(p.s) && (p.s[j] == '.' || p.s[j] == '[')
}

func (p *jpParser) segments() (*jsonPath, error) {
	q := &jsonPath{}
	for p.peekSegment() {
		p.skipWS()
		var seg jpSegment
		if strings.HasPrefix(p.s[p.i:], "..") {
			seg.descendant = true
			p.i += 2
			if p.i < len(p.s) && p.s[p.i] == '[' {
				sels, err := p.bracket()
				if err != nil {
					return nil, err
				}
				seg.sels = sels
			} else {
				sel, err := p.dotMember()
				if err != nil {
					return nil, err
				}
				seg.sels = []jpSelector{sel}
			}
		} else if p.s[p.i] == '.' {
			p.i++
			sel, err := p.dotMember()
			if err != nil {
				return nil, err
			}
			seg.sels = []jpSelector{sel}
		} else {
			sels, err := p.bracket()
			if err != nil {
				return nil, err
			}
			seg.sels = sels
		}
		q.segs = append(q.segs, seg)
	}
	return q, nil
}

func isNameFirst(r rune) bool {
	return r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || r >= 0x80
}

func (p *jpParser) dotMember() (jpSelector, error) {
	if p.i < len(p.s) && p.s[p.i] == '*' {
		p.i++
		return jpSelector{kind: selWild}, nil
	}
	start := p.i
	for p.i < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.i:])
		if !(isNameFirst(r) || (p.i > start && r >= '0' && r <= '9')) {
			break
		}
		p.i += n
	}
	if p.i == start {
		return jpSelector{}, p.errf("expected a member name or *")
	}
	return jpSelector{kind: selName, name: p.s[start:p.i]}, nil
}

func (p *jpParser) bracket() ([]jpSelector, error) {
	p.i++ // [
	var sels []jpSelector
	for {
		p.skipWS()
		sel, err := p.selector()
		if err != nil {
			return nil, err
		}
		sels = append(sels, sel)
		p.skipWS()
		if p.i >= len(p.s) {
			return nil, p.errf("unclosed [")
		}
		if p.s[p.i] == ']' {
			p.i++
			return sels, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.errf("expected , or ]")
		}
		p.i++
	}
}

func (p *jpParser) selector() (jpSelector, error) {
	if p.i >= len(p.s) {
		return jpSelector{}, p.errf("expected a selector")
	}
	switch c := p.s[p.i]; {
	case c == '*':
		p.i++
		return jpSelector{kind: selWild}, nil
	case c == '\'' || c == '"':
		s, err := p.stringLit()
		return jpSelector{kind: selName, name: s}, err
	case c == '?':
		p.i++
		e, err := p.logicalOr()
		return jpSelector{kind: selFilter, filter: e}, err
	}
	// index or slice
	var parts [3]*int
	n := 0
	for {
		p.skipWS()
		if v, ok, err := p.intLit(); err != nil {
			return jpSelector{}, err
		} else if ok {
			parts[n] = &v
		}
		p.skipWS()
		if p.i < len(p.s) && p.s[p.i] == ':' && n < 2 {
			n++
			p.i++
			continue
		}
		break
	}
	if n == 0 {
		if parts[0] == nil {
			return jpSelector{}, p.errf("expected a selector")
		}
		return jpSelector{kind: selIndex, index: *parts[0]}, nil
	}
	return jpSelector{kind: selSlice, slice: parts}, nil
}

var jpIntRe = regexp.MustCompile(`^(0|-?[1-9][0-9]*)`)

func (p *jpParser) intLit() (int, bool, error) {
	m := jpIntRe.FindString(p.s[p.i:])
	if m == "" {
		return 0, false, nil
	}
	v, err := strconv.Atoi(m)
	if err != nil || v > 1<<53 || v < -(1<<53) {
		return 0, false, p.errf("integer out of range")
	}
	p.i += len(m)
	return v, true, nil
}

func (p *jpParser) stringLit() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", p.errf("unfinished escape")
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '/', '\\', '\'', '"':
				if (e == '\'' || e == '"') && e != q {
					return "", p.errf("invalid escape \\%c", e)
				}
				b.WriteByte(e)
			case 'u':
				if p.i+4 > len(p.s) {
					return "", p.errf("short \\u escape")
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
				if err != nil {
					return "", p.errf("invalid \\u escape")
				}
				p.i += 4
				b.WriteRune(rune(r))
			default:
				return "", p.errf("invalid escape \\%c", e)
			}
		case c < 0x20:
			return "", p.errf("control character in string")
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", p.errf("unclosed string")
}

func (p *jpParser) logicalOr() (jpExpr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxPathDepth {
		return nil, p.errf("filter nested too deeply")
	}
	var terms []jpExpr
	for {
		e, err := p.logicalAnd()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
		p.skipWS()
		if !strings.HasPrefix(p.s[p.i:], "||") {
			break
		}
		p.i += 2
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return jpOr{terms}, nil
}

func (p *jpParser) logicalAnd() (jpExpr, error) {
	var terms []jpExpr
	for {
		e, err := p.basic()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
		p.skipWS()
		if !strings.HasPrefix(p.s[p.i:], "&&") {
			break
		}
		p.i += 2
	}
	if len(terms) == 1 {
		return terms[0], nil
	}
	return jpAnd{terms}, nil
}

func (p *jpParser) basic() (jpExpr, error) {
	p.skipWS()
	if strings.HasPrefix(p.s[p.i:], "!") && !strings.HasPrefix(p.s[p.i:], "!=") {
		p.i++
		p.skipWS()
		e, err := p.basicOperand()
		if err != nil {
			return nil, err
		}
		return jpNot{e}, nil
	}
	l, err := p.basicOperand()
	if err != nil {
		return nil, err
	}
	p.skipWS()
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if strings.HasPrefix(p.s[p.i:], op) {
			p.i += len(op)
			p.skipWS()
			r, err := p.comparable()
			if err != nil {
				return nil, err
			}
			return jpCmp{op, l, r}, nil
		}
	}
	if _, isLit := l.(jpLit); isLit {
		return nil, p.errf("a literal is not a test")
	}
	return l, nil
}

// basicOperand is a parenthesized expression, a query, a function or a literal.
func (p *jpParser) basicOperand() (jpExpr, error) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		p.i++
		e, err := p.logicalOr()
		if err != nil {
			return nil, err
		}
		p.skipWS()
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, p.errf("expected )")
		}
		p.i++
		return e, nil
	}
	return p.comparable()
}

var jpNumRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`)

func (p *jpParser) comparable() (jpExpr, error) {
	if p.i >= len(p.s) {
		return nil, p.errf("expected an operand")
	}
	rest := p.s[p.i:]
	switch c := rest[0]; {
	case c == '@' || c == '$':
		p.i++
		q, err := p.segments()
		if err != nil {
			return nil, err
		}
		return jpQuery{relative: c == '@', path: q}, nil
	case c == '\'' || c == '"':
		s, err := p.stringLit()
		return jpLit{NewString(s)}, err
	case strings.HasPrefix(rest, "true"):
		p.i += 4
		return jpLit{NewBool(true)}, nil
	case strings.HasPrefix(rest, "false"):
		p.i += 5
		return jpLit{NewBool(false)}, nil
	case strings.HasPrefix(rest, "null"):
		p.i += 4
		return jpLit{NewNull()}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		m := jpNumRe.FindString(rest)
		if m == "" {
			return nil, p.errf("invalid number")
		}
		p.i += len(m)
		return jpLit{resolvePlain(m)}, nil
	}
	for _, fn := range []string{"length", "count", "match", "search", "value"} {
		if strings.HasPrefix(rest, fn+"(") {
			p.i += len(fn) + 1
			var args []jpExpr
			for {
				p.skipWS()
				a, err := p.logicalOr()
				if err != nil {
					return nil, err
				}
				args = append(args, a)
				p.skipWS()
				if p.i < len(p.s) && p.s[p.i] == ',' {
					p.i++
					continue
				}
				break
			}
			if p.i >= len(p.s) || p.s[p.i] != ')' {
				return nil, p.errf("expected ) after %s arguments", fn)
			}
			p.i++
			want := map[string]int{"length": 1, "count": 1, "value": 1, "match": 2, "search": 2}[fn]
			if len(args) != want {
				return nil, p.errf("%s takes %d arguments", fn, want)
			}
			return jpFunc{fn, args}, nil
		}
	}
	return nil, p.errf("unexpected %q", rest[:min(len(rest), 10)])
}

// query evaluates the path against root. limit > 0 stops after that many
// results.
func (q *jsonPath) query(root *Value, limit int) []*Value {
	return q.eval(root, root, limit)
}

func (q *jsonPath) eval(root, start *Value, limit int) []*Value {
	nodes := []*Value{start}
	for _, seg := range q.segs {
		var next []*Value
		for _, n := range nodes {
			if seg.descendant {
				walkDescendants(n, 0, func(d *Value) {
					next = applySelectors(seg.sels, root, d, next)
				})
			} else {
				next = applySelectors(seg.sels, root, n, next)
			}
		}
		nodes = next
		if len(nodes) == 0 {
			return nil
		}
	}
	if limit > 0 && len(nodes) > limit {
		nodes = nodes[:limit]
	}
	return nodes
}

func walkDescendants(v *Value, depth int, f func(*Value)) {
	if depth > MaxDepth {
		return
	}
	f(v)
	switch v.Kind {
	case Seq:
		for _, it := range v.Items {
			walkDescendants(it, depth+1, f)
		}
	case Map:
		for _, m := range v.Pairs {
			walkDescendants(m.Value, depth+1, f)
		}
	}
}

func applySelectors(sels []jpSelector, root, v *Value, out []*Value) []*Value {
	for _, s := range sels {
		switch s.kind {
		case selName:
			if m := v.member(s.name); m != nil {
				out = append(out, m.Value)
			}
		case selWild:
			out = append(out, children(v)...)
		case selIndex:
			if v.Kind == Seq {
				i := s.index
				if i < 0 {
					i += len(v.Items)
				}
				if i >= 0 && i < len(v.Items) {
					out = append(out, v.Items[i])
				}
			}
		case selSlice:
			if v.Kind == Seq {
				out = appendSlice(out, v.Items, s.slice)
			}
		case selFilter:
			for _, c := range children(v) {
				if jpTest(s.filter, root, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

func children(v *Value) []*Value {
	switch v.Kind {
	case Seq:
		return v.Items
	case Map:
		out := make([]*Value, len(v.Pairs))
		for i, m := range v.Pairs {
			out[i] = m.Value
		}
		return out
	}
	return nil
}

func appendSlice(out, items []*Value, sl [3]*int) []*Value {
	n := len(items)
	step := 1
	if sl[2] != nil {
		step = *sl[2]
	}
	if step == 0 {
		return out
	}
	norm := func(i int) int {
		if i < 0 {
			return i + n
		}
		return i
	}
	if step > 0 {
		lo, hi := 0, n
		if sl[0] != nil {
			lo = min(max(norm(*sl[0]), 0), n)
		}
		if sl[1] != nil {
			hi = min(max(norm(*sl[1]), 0), n)
		}
		for i := lo; i < hi; i += step {
			out = append(out, items[i])
		}
		return out
	}
	lo, hi := -1, n-1
	if sl[0] != nil {
		hi = min(max(norm(*sl[0]), -1), n-1)
	}
	if sl[1] != nil {
		lo = min(max(norm(*sl[1]), -1), n-1)
	}
	for i := hi; i > lo; i += step {
		out = append(out, items[i])
	}
	return out
}

// jpTest evaluates a filter expression as a logical value.
func jpTest(e jpExpr, root, cur *Value) bool {
	switch t := e.(type) {
	case jpOr:
		for _, x := range t.terms {
			if jpTest(x, root, cur) {
				return true
			}
		}
		return false
	case jpAnd:
		for _, x := range t.terms {
			if !jpTest(x, root, cur) {
				return false
			}
		}
		return true
	case jpNot:
		return !jpTest(t.e, root, cur)
	case jpQuery:
		return len(jpNodes(t, root, cur)) > 0
	case jpCmp:
		return jpCompare(t.op, jpValue(t.l, root, cur), jpValue(t.r, root, cur))
	case jpFunc:
		switch t.name {
		case "match", "search":
			s, re := jpValue(t.args[0], root, cur), jpValue(t.args[1], root, cur)
			if s == nil || re == nil || s.Kind != String || re.Kind != String {
				return false
			}
			expr := re.Str
			if t.name == "match" {
				expr = `^(?:` + expr + `)$`
			}
			r, err := compileRegex(expr)
			return err == nil && r.MatchString(s.Str)
		}
		return jpValue(t, root, cur) != nil
	}
	return false
}

func jpNodes(q jpQuery, root, cur *Value) []*Value {
	start := root
	if q.relative {
		start = cur
	}
	return q.path.eval(root, start, 0)
}

// jpValue evaluates a comparable; nil means "Nothing".
func jpValue(e jpExpr, root, cur *Value) *Value {
	switch t := e.(type) {
	case jpLit:
		return t.v
	case jpQuery:
		if n := jpNodes(t, root, cur); len(n) == 1 {
			return n[0]
		}
		return nil
	case jpFunc:
		switch t.name {
		case "length":
			v := jpValue(t.args[0], root, cur)
			if v == nil {
				return nil
			}
			switch v.Kind {
			case String:
				return NewInt(int64(utf8.RuneCountInString(v.Str)))
			case Seq:
				return NewInt(int64(len(v.Items)))
			case Map:
				return NewInt(int64(len(v.Pairs)))
			}
			return nil
		case "count":
			if q, ok := t.args[0].(jpQuery); ok {
				return NewInt(int64(len(jpNodes(q, root, cur))))
			}
			return nil
		case "value":
			if q, ok := t.args[0].(jpQuery); ok {
				if n := jpNodes(q, root, cur); len(n) == 1 {
					return n[0]
				}
			}
			return nil
		}
		return NewBool(jpTest(t, root, cur))
	}
	return NewBool(jpTest(e, root, cur))
}

func jpCompare(op string, a, b *Value) bool {
	eq := func() bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return Equal(a, b)
	}
	less := func(x, y *Value) bool {
		if x == nil || y == nil {
			return false
		}
		if x.IsNumber() && y.IsNumber() {
			return x.Number() < y.Number()
		}
		if x.Kind == String && y.Kind == String {
			return x.Str < y.Str
		}
		return false
	}
	switch op {
	case "==":
		return eq()
	case "!=":
		return !eq()
	case "<":
		return less(a, b)
	case ">":
		return less(b, a)
	case "<=":
		return less(a, b) || eq()
	}
	return less(b, a) || eq()
}
