package ir

import (
	"fmt"
	"strconv"
	"strings"
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
)

var opText = map[Op]string{
	OpNot: "!", OpNeg: "-", OpAnd: "&&", OpOr: "||", OpImplies: "=>", OpEq: "==", OpNe: "!=",
	OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=", OpAdd: "+", OpSub: "-",
}

// Text is the operator as written in a model.
func (o Op) Text() string { return opText[o] }

// Expr is a typed expression node. After Parse, every node of a model that
// has no diagnostics has its Type set, every OpVar its Var, and every enum
// literal is an OpConst holding the value's index.
type Expr struct {
	Op   Op
	Args []*Expr
	Name string // OpVar: the variable; OpConst of an enum: the value's name
	Var  int    // OpVar: index into Model.Vars
	Val  int    // OpConst: 0/1 for bool, the index for enum, the integer for int
	Type Type
	Pos  Pos
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
		return e.Name
	case OpNot, OpNeg:
		return e.Op.Text() + e.Args[0].String()
	case OpIte:
		return fmt.Sprintf("(if %s then %s else %s)", e.Args[0], e.Args[1], e.Args[2])
	}
	return fmt.Sprintf("(%s %s %s)", e.Args[0], e.Op.Text(), e.Args[1])
}

// Vars calls fn for every variable e reads.
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
		case c == '(' || c == ')':
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
			for _, op := range []string{"&&", "||", "=>", "==", "!=", "<=", ">=", "<", ">", "!", "+", "-"} {
				if strings.HasPrefix(src[i:], op) {
					toks = append(toks, token{"op", op, i})
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

func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// ---- parser ----

// exprParser parses one expression string. pos maps a byte offset of the
// string to a file position.
type exprParser struct {
	toks []token
	i    int
	pos  func(off int) Pos
	err  *Diagnostic
}

// ParseExpr parses src into an untyped AST. base is the position of src's
// first byte. Identifiers are left as OpVar nodes with Var -1; Resolve
// types them against a model.
func ParseExpr(src string, base Pos) (*Expr, *Diagnostic) {
	posOf := func(off int) Pos {
		p := base
		// Expression strings are single-line in practice; a newline moves
		// the position to the next line.
		if nl := strings.LastIndexByte(src[:off], '\n'); nl >= 0 {
			p.Line += strings.Count(src[:off], "\n")
			p.Col = off - nl
			return p
		}
		p.Col += off
		return p
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
	return l
}

func (p *exprParser) sum() *Expr {
	l := p.unary()
	for p.err == nil && (p.isOp("+") || p.isOp("-")) {
		t := p.next()
		op := OpAdd
		if t.text == "-" {
			op = OpSub
		}
		l = p.binary(op, l, p.unary(), t.off)
	}
	return l
}

func (p *exprParser) unary() *Expr {
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
	case "id":
		p.next()
		switch t.text {
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
		return &Expr{Op: OpVar, Name: t.text, Var: -1, Pos: p.pos(t.off)}
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
