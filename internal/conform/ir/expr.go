package ir

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Op is the operator of an expression node.
type Op int

const (
	OpConst   Op = iota + 1 // Val, of Type
	OpVar                   // Var (index into Model.Vars)
	OpNot                   // !a
	OpNeg                   // -a
	OpAnd                   // a && b
	OpOr                    // a || b
	OpImplies               // a => b
	OpEq                    // a == b
	OpNe                    // a != b
	OpLt                    // a < b
	OpLe                    // a <= b
	OpGt                    // a > b
	OpGe                    // a >= b
	OpAdd                   // a + b
	OpSub                   // a - b
	OpIte                   // if a then b else c
	OpBound                 // a variable bound by a quantifier (Name)
	OpIndex                 // Name[Args...]: a cell of the array Var (index into Model.Arrays)
	OpSetLit                // {Args...}
	OpIn                    // a in S
	OpSubset                // S subseteq T
	OpUnion                 // S union T
	OpInter                 // S inter T
	OpDiff                  // S \ T
	OpCard                  // card(S)
	OpForall                // forall Name in Dom: Args[0]
	OpExists                // exists Name in Dom: Args[0]
)

var opText = map[Op]string{
	OpNot: "!", OpNeg: "-", OpAnd: "&&", OpOr: "||", OpImplies: "=>", OpEq: "==", OpNe: "!=",
	OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpAdd: "+", OpSub: "-",
	OpIn: "in", OpSubset: "subseteq", OpUnion: "union", OpInter: "inter", OpDiff: "\\",
	OpForall: "forall", OpExists: "exists",
}

// Text is the operator as written in a model.
func (o Op) Text() string { return opText[o] }

// Expr is a typed expression node. After Parse, every node of a model that
// has no diagnostics has its Type set, every OpVar its Var, and every enum
// literal is an OpConst holding the value's index.
type Expr struct {
	Op   Op
	Args []*Expr
	Name string // OpVar: the variable; OpConst of an enum: the value's name; OpBound, OpForall, OpExists: the bound variable; OpIndex: the array
	// Field is the field read of a record (r.f) or of an array of records
	// (a[i].f): set by ParseExpr, kept on an OpIndex (whose Var is then
	// the field's array), folded into Name once an OpVar is resolved.
	Field string
	Var   int // OpVar: index into Model.Vars; OpIndex: index into Model.Arrays
	Val   int // OpConst: 0/1 for bool, the index for enum, the integer for int, the bit-vector for a set
	Type  Type
	Dom   *Domain // OpForall, OpExists: the domain the bound variable ranges over
	// Fixed is, for an OpConst, the transition parameter or named array
	// index whose value it is; "" for a literal or a constant. A value of a
	// symmetric domain may come from a parameter, never from a literal.
	Fixed string
	Pos   Pos
}

// String prints e in the model syntax, fully parenthesised.
func (e *Expr) String() string {
	switch e.Op {
	case OpConst:
		if e.Type.Kind == Enum {
			return e.Name
		}
		return e.Type.Format(e.Val)
	case OpVar:
		if e.Field != "" {
			return e.Name + "." + e.Field
		}
		return e.Name
	case OpNot, OpNeg:
		return e.Op.Text() + e.Args[0].String()
	case OpIte:
		return fmt.Sprintf("(if %s then %s else %s)", e.Args[0], e.Args[1], e.Args[2])
	case OpBound:
		return e.Name
	case OpIndex:
		var b strings.Builder
		b.WriteString(e.Name)
		for _, a := range e.Args {
			b.WriteString("[" + a.String() + "]")
		}
		if e.Field != "" {
			b.WriteString("." + e.Field)
		}
		return b.String()
	case OpSetLit:
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = a.String()
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case OpCard:
		return "card(" + e.Args[0].String() + ")"
	case OpForall, OpExists:
		dom := "?"
		if e.Dom != nil {
			dom = e.Dom.Name
		}
		return fmt.Sprintf("(%s %s in %s: %s)", e.Op.Text(), e.Name, dom, e.Args[0])
	}
	return fmt.Sprintf("(%s %s %s)", e.Args[0], e.Op.Text(), e.Args[1])
}

// Vars calls fn for every variable e names. An array read at an index
// that depends on a bound variable (OpIndex) may read any of the array's
// cells; Model.Reads includes them.
func (e *Expr) Vars(fn func(int)) {
	if e == nil {
		return
	}
	if e.Op == OpVar {
		fn(e.Var)
	}
	for _, a := range e.Args {
		a.Vars(fn)
	}
}

// ---- lexer ----

type token struct {
	kind string // "id", "int", "op", "(", ")", "eof"
	text string
	off  int
}

func lex(src string) ([]token, int, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.ContainsRune("()[]{},:.", rune(c)):
			toks = append(toks, token{string(c), string(c), i})
			i++
		case isLetter(c):
			j := i
			for j < len(src) && (isLetter(src[j]) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{"id", src[i:j], i})
			i = j
		case isDigit(c):
			j := i
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			toks = append(toks, token{"int", src[i:j], i})
			i = j
		default:
			matched := false
			for _, op := range []string{"&&", "||", "=>", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-", "\\",
				"∈", "⊆", "∪", "∩", "∀", "∃", "≠", "⇒", "∧", "∨", "¬"} {
				if strings.HasPrefix(src[i:], op) {
					toks = append(toks, token{"op", unicodeOps[op], i})
					i += len(op)
					matched = true
					break
				}
			}
			if !matched {
				return nil, i, fmt.Errorf("unexpected character %q", c)
			}
		}
	}
	return append(toks, token{"eof", "", len(src)}), 0, nil
}

// unicodeOps maps the mathematical spelling of an operator to the ASCII
// one; ASCII operators map to themselves.
var unicodeOps = map[string]string{
	"&&": "&&", "||": "||", "=>": "=>", "==": "==", "!=": "!=", "<=": "<=", ">=": ">=", "<": "<", ">": ">",
	"!": "!", "+": "+", "-": "-", "\\": "\\",
	"∈": "in", "⊆": "subseteq", "∪": "union", "∩": "inter", "∀": "forall", "∃": "exists",
	"≠": "!=", "⇒": "=>", "∧": "&&", "∨": "||", "¬": "!",
}

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// ---- parser ----

// exprParser parses one expression string. pos maps a byte offset of the
// string to a file position.
type exprParser struct {
	toks  []token
	i     int
	pos   func(off int) Pos
	err   *Diagnostic
	depth int // nesting of unary (every operand, parenthesis, if, quantifier), bounded by MaxExprDepth
}

// enter counts one level of nesting; false (and an error) past
// MaxExprDepth, so that "((((...))))" or "!!!!...x" cannot exhaust the
// stack of the parser or of everything that walks the tree after it.
func (p *exprParser) enter() bool {
	p.depth++
	if p.depth > MaxExprDepth && p.err == nil {
		p.err = &Diagnostic{Pos: p.pos(p.peek().off), Code: "too-deep",
			Msg: fmt.Sprintf("the expression nests more than %d levels deep here", MaxExprDepth)}
	}
	return p.err == nil
}

func (p *exprParser) leave() { p.depth-- }

// ParseExpr parses src into an untyped AST. base is the position of src's
// first byte. Identifiers are left as OpVar nodes with Var -1; Resolve
// types them against a model.
func ParseExpr(src string, base Pos) (*Expr, *Diagnostic) {
	posOf := func(off int) Pos {
		p := base
		// Expression strings are single-line in practice; a newline moves
		// the position to the next line.
		// Columns count characters, as YAML's do: "∀" is one column.
		if nl := strings.LastIndexByte(src[:off], '\n'); nl >= 0 {
			p.Line += strings.Count(src[:off], "\n")
			p.Col = utf8.RuneCountInString(src[nl+1:off]) + 1
			return p
		}
		p.Col += utf8.RuneCountInString(src[:off])
		return p
	}
	if len(src) > MaxExprBytes {
		return nil, &Diagnostic{Pos: base, Code: "too-large", Msg: fmt.Sprintf("the expression is %d bytes; at most %d", len(src), MaxExprBytes)}
	}
	toks, off, err := lex(src)
	if err != nil {
		return nil, &Diagnostic{Pos: posOf(off), Code: "syntax", Msg: err.Error()}
	}
	p := &exprParser{toks: toks, pos: posOf}
	e := p.implies()
	if p.err == nil && p.peek().kind != "eof" {
		p.fail("unexpected %q after the expression", p.peek().text)
	}
	if p.err != nil {
		return nil, p.err
	}
	return e, nil
}

func (p *exprParser) peek() token { return p.toks[p.i] }
func (p *exprParser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *exprParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = &Diagnostic{Pos: p.pos(p.peek().off), Code: "syntax", Msg: fmt.Sprintf(format, args...)}
	}
}

func (p *exprParser) isOp(text string) bool {
	t := p.peek()
	return t.kind == "op" && t.text == text
}

// isWord reports whether the next token is the keyword operator text,
// spelt as a word (in) or as its symbol (∈).
func (p *exprParser) isWord(text string) bool {
	t := p.peek()
	return (t.kind == "op" || t.kind == "id") && t.text == text
}

func (p *exprParser) expect(kind string) bool {
	if p.peek().kind != kind {
		p.fail("expected %q", kind)
		return false
	}
	p.next()
	return true
}

func (p *exprParser) binary(op Op, l, r *Expr, off int) *Expr {
	return &Expr{Op: op, Args: []*Expr{l, r}, Pos: p.pos(off)}
}

func (p *exprParser) implies() *Expr {
	l := p.or()
	if p.isOp("=>") {
		t := p.next()
		return p.binary(OpImplies, l, p.implies(), t.off)
	}
	return l
}

func (p *exprParser) or() *Expr {
	l := p.and()
	for p.err == nil && p.isOp("||") {
		t := p.next()
		l = p.binary(OpOr, l, p.and(), t.off)
	}
	return l
}

func (p *exprParser) and() *Expr {
	l := p.cmp()
	for p.err == nil && p.isOp("&&") {
		t := p.next()
		l = p.binary(OpAnd, l, p.cmp(), t.off)
	}
	return l
}

var cmpOps = map[string]Op{"==": OpEq, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe}

func (p *exprParser) cmp() *Expr {
	l := p.sum()
	if t := p.peek(); t.kind == "op" {
		if op, ok := cmpOps[t.text]; ok {
			p.next()
			return p.binary(op, l, p.sum(), t.off)
		}
	}
	for word, op := range map[string]Op{"in": OpIn, "subseteq": OpSubset} {
		if p.isWord(word) {
			t := p.next()
			return p.binary(op, l, p.sum(), t.off)
		}
	}
	return l
}

var sumOps = map[string]Op{"+": OpAdd, "-": OpSub, "\\": OpDiff, "union": OpUnion, "inter": OpInter}

func (p *exprParser) sum() *Expr {
	l := p.unary()
	for p.err == nil {
		t := p.peek()
		op, ok := sumOps[t.text]
		if !ok || (t.kind != "op" && t.kind != "id") || (t.kind == "id" && op != OpUnion && op != OpInter) {
			return l
		}
		p.next()
		l = p.binary(op, l, p.unary(), t.off)
	}
	return l
}

// quantifier parses "x in D, y in D: body" after forall or exists; several
// binders nest, outermost first.
func (p *exprParser) quantifier(op Op, off int) *Expr {
	type binder struct {
		name, dom string
		off       int
	}
	var bs []binder
	for {
		t := p.peek()
		if t.kind != "id" {
			p.fail("expected the name of a bound variable")
			return nil
		}
		p.next()
		if !p.isWord("in") {
			p.fail("expected \"in\" after %q", t.text)
			return nil
		}
		p.next()
		d := p.peek()
		if d.kind != "id" {
			p.fail("expected the name of a domain")
			return nil
		}
		p.next()
		bs = append(bs, binder{t.text, d.text, t.off})
		if p.peek().kind != "," {
			break
		}
		p.next()
	}
	if !p.expect(":") {
		return nil
	}
	body := p.implies()
	for i := len(bs) - 1; i >= 0; i-- {
		body = &Expr{Op: op, Name: bs[i].name, Dom: &Domain{Name: bs[i].dom}, Args: []*Expr{body}, Pos: p.pos(off)}
		off = bs[i].off
	}
	return body
}

func (p *exprParser) unary() *Expr {
	defer p.leave()
	if !p.enter() {
		return nil
	}
	if p.isOp("!") || p.isOp("-") {
		t := p.next()
		op := OpNot
		if t.text == "-" {
			op = OpNeg
		}
		return &Expr{Op: op, Args: []*Expr{p.unary()}, Pos: p.pos(t.off)}
	}
	return p.primary()
}

func (p *exprParser) primary() *Expr {
	t := p.peek()
	switch t.kind {
	case "int":
		p.next()
		v, err := strconv.Atoi(t.text)
		if err != nil || v > 1<<20 {
			p.fail("integer %s is too large", t.text)
			return nil
		}
		return &Expr{Op: OpConst, Val: v, Type: Type{Kind: Int, Min: v, Max: v}, Pos: p.pos(t.off)}
	case "{":
		p.next()
		e := &Expr{Op: OpSetLit, Pos: p.pos(t.off)}
		for p.err == nil && p.peek().kind != "}" {
			e.Args = append(e.Args, p.sum())
			if p.peek().kind != "," {
				break
			}
			p.next()
		}
		if !p.expect("}") {
			return nil
		}
		return e
	case "op":
		if t.text == "forall" || t.text == "exists" {
			p.next()
			return p.quantifier(map[string]Op{"forall": OpForall, "exists": OpExists}[t.text], t.off)
		}
		p.fail("unexpected %q", t.text)
		return nil
	case "id":
		p.next()
		switch t.text {
		case "forall":
			return p.quantifier(OpForall, t.off)
		case "exists":
			return p.quantifier(OpExists, t.off)
		case "card":
			if p.peek().kind != "(" {
				break // a variable named card
			}
			p.next()
			a := p.implies()
			if !p.expect(")") {
				return nil
			}
			return &Expr{Op: OpCard, Args: []*Expr{a}, Pos: p.pos(t.off)}
		case "in", "subseteq", "union", "inter":
			p.fail("unexpected %q", t.text)
			return nil
		case "true", "false":
			v := 0
			if t.text == "true" {
				v = 1
			}
			return &Expr{Op: OpConst, Val: v, Type: Type{Kind: Bool}, Pos: p.pos(t.off)}
		case "if":
			c := p.implies()
			if !(p.peek().kind == "id" && p.peek().text == "then") {
				p.fail("expected \"then\"")
				return nil
			}
			p.next()
			a := p.implies()
			if !(p.peek().kind == "id" && p.peek().text == "else") {
				p.fail("expected \"else\"")
				return nil
			}
			p.next()
			b := p.implies()
			return &Expr{Op: OpIte, Args: []*Expr{c, a, b}, Pos: p.pos(t.off)}
		case "then", "else":
			p.fail("unexpected %q", t.text)
			return nil
		}
		e := &Expr{Op: OpVar, Name: t.text, Var: -1, Pos: p.pos(t.off)}
		if p.peek().kind == "[" {
			e.Op = OpIndex
			for p.err == nil && p.peek().kind == "[" {
				p.next()
				e.Args = append(e.Args, p.sum())
				if !p.expect("]") {
					return nil
				}
			}
		}
		if p.peek().kind == "." {
			// A record field: r.f, a[i].f.
			p.next()
			f := p.peek()
			if f.kind != "id" {
				p.fail("expected the name of a field after \".\"")
				return nil
			}
			p.next()
			e.Field = f.text
		}
		return e
	case "(":
		p.next()
		e := p.implies()
		if p.peek().kind != ")" {
			p.fail("expected \")\"")
			return nil
		}
		p.next()
		return e
	case "eof":
		p.fail("expression ends too early")
	default:
		p.fail("unexpected %q", t.text)
	}
	return nil
}

// Keywords are the words the expression language reserves.
// (card is a function only when "(" follows it, so a variable may be named
// card.)
var Keywords = []string{"true", "false", "if", "then", "else", "in", "subseteq", "union", "inter", "forall", "exists"}
