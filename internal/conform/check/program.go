package check

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// slot is where one variable lives in a packed state (see store.go).
type slot struct {
	word  int
	shift uint
	mask  uint64
	min   int
	typ   ir.Type
}

func (s slot) get(k []uint64) int { return int((k[s.word]>>s.shift)&s.mask) + s.min }

func (s slot) set(k []uint64, v int) {
	k[s.word] = k[s.word]&^(s.mask<<s.shift) | (uint64(v-s.min)&s.mask)<<s.shift
}

type evalFn func(k []uint64) int

type cwrite struct {
	slot   slot
	eval   evalFn
	lo, hi int // the variable's domain: a write outside it disables the transition
}

type ctrans struct {
	t      *ir.Transition
	guard  evalFn // nil: always enabled
	writes []cwrite
	sym    *symmetry // set in a reduced program: successors are canonical
}

// Program is a compiled model: the state layout and every guard, write and
// property as closures over packed states. It is immutable and safe for
// concurrent use by any number of checks.
type Program struct {
	model *ir.Model
	slots []slot
	init  []uint64
	trans []ctrans
	props map[string]evalFn
	live  map[string][2]evalFn // a leads-to property's from and to
	words int                  // how many 64-bit words a packed state has (at least 1)
	// sym is set in a program that stores one state per orbit of the
	// model's symmetric domains (Reduced); full is then the program it
	// was reduced from.
	sym  *symmetry
	full *Program
}

// Model returns the model p was compiled from.
func (p *Program) Model() *ir.Model { return p.model }

// Compile packs m's variables and compiles its expressions. m must have no
// Lint errors. The state vector has no width limit: a model of more than
// 128 bits packs into as many words as it needs. An expression that names
// no cell (an index outside its domain that the typecheck let through)
// is an error, with its position and the bound variables' values.
func Compile(m *ir.Model) (p *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			ce, ok := r.(compileError)
			if !ok {
				panic(r)
			}
			p, err = nil, fmt.Errorf("model %s: %w", m.Name, ce.err)
		}
	}()
	p = &Program{model: m, props: map[string]evalFn{}, live: map[string][2]evalFn{}, words: 1}
	bit := 0
	for _, v := range m.Vars {
		w := v.Type.Bits()
		if w > 64 {
			return nil, fmt.Errorf("model %s: variable %s needs %d bits; a value is at most 64", m.Name, v.Name, w)
		}
		word := bit / 64
		if bit%64+w > 64 { // a field never straddles two words
			bit = (word + 1) * 64
			word++
		}
		p.words = max(p.words, word+1)
		s := slot{word: word, shift: uint(bit % 64), mask: uint64(1)<<w - 1, min: 0, typ: v.Type}
		if v.Type.Kind == ir.Int {
			s.min = v.Type.Min
		}
		p.slots = append(p.slots, s)
		bit += w
	}
	p.init = make([]uint64, p.words)
	for i, v := range m.Vars {
		p.slots[i].set(p.init, v.Init)
	}
	for i := range m.Transitions {
		t := &m.Transitions[i]
		ct := ctrans{t: t}
		if t.Guard != nil {
			ct.guard = p.compile(t.Guard)
		}
		for _, w := range t.Writes {
			s := p.slots[w.Var]
			lo, hi := domain(s.typ)
			ct.writes = append(ct.writes, cwrite{slot: s, eval: p.compile(w.Expr), lo: lo, hi: hi})
		}
		p.trans = append(p.trans, ct)
	}
	for _, pr := range m.Properties {
		if pr.Expr != nil {
			p.props[pr.ID] = p.compile(pr.Expr)
		}
		if pr.From != nil && pr.To != nil {
			p.live[pr.ID] = [2]evalFn{p.compile(pr.From), p.compile(pr.To)}
		}
	}
	return p, nil
}

// compileError carries an expression that cannot be compiled out of
// compileIn's recursion to Compile, which returns it.
type compileError struct{ err error }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *Program) compile(e *ir.Expr) evalFn { return p.compileIn(e, nil) }

// compileIn compiles e with the bound variables of env fixed: a
// quantifier is expanded into one closure per value of its domain, and an
// array read becomes a read of the cell its indices name.
func (p *Program) compileIn(e *ir.Expr, env ir.Env) evalFn {
	switch e.Op {
	case ir.OpBound:
		v, _ := env.Lookup(e.Name)
		return func([]uint64) int { return v }
	case ir.OpIndex:
		cell, err := p.model.Cell(e, env)
		if err != nil {
			var with []string
			for _, b := range env {
				with = append(with, fmt.Sprintf("%s = %d", b.Name, b.Val))
			}
			if with != nil {
				err = fmt.Errorf("%w (with %s)", err, strings.Join(with, ", "))
			}
			panic(compileError{fmt.Errorf("%s: %w", e.Pos, err)})
		}
		return p.compileIn(&ir.Expr{Op: ir.OpVar, Var: cell, Type: e.Type}, env)
	case ir.OpForall, ir.OpExists:
		var body []evalFn
		for _, v := range e.Dom.Type.Elems() {
			body = append(body, p.compileIn(e.Args[0], env.With(e.Name, v)))
		}
		if e.Op == ir.OpForall {
			return func(k []uint64) int {
				for _, b := range body {
					if b(k) == 0 {
						return 0
					}
				}
				return 1
			}
		}
		return func(k []uint64) int {
			for _, b := range body {
				if b(k) != 0 {
					return 1
				}
			}
			return 0
		}
	case ir.OpSetLit:
		elem := *e.Type.Elem
		var parts []evalFn
		for _, a := range e.Args {
			parts = append(parts, p.compileIn(a, env))
		}
		return func(k []uint64) int {
			v := 0
			for _, f := range parts {
				v |= 1 << elem.Bit(f(k))
			}
			return v
		}
	case ir.OpCard:
		a := p.compileIn(e.Args[0], env)
		return func(k []uint64) int { return bits.OnesCount(uint(a(k))) }
	case ir.OpIn:
		el, set := p.compileIn(e.Args[0], env), p.compileIn(e.Args[1], env)
		elem := *e.Args[1].Type.Elem
		return func(k []uint64) int {
			b := elem.Bit(el(k))
			if b < 0 || b >= 62 { // an integer outside the element domain is in no set
				return 0
			}
			return set(k) >> b & 1
		}
	case ir.OpConst:
		v := e.Val
		return func([]uint64) int { return v }
	case ir.OpVar:
		s := p.slots[e.Var]
		if s.min == 0 {
			word, shift, mask := s.word, s.shift, s.mask
			return func(k []uint64) int { return int((k[word] >> shift) & mask) }
		}
		return s.get
	case ir.OpNot:
		a := p.compileIn(e.Args[0], env)
		return func(k []uint64) int { return 1 - a(k) }
	case ir.OpNeg:
		a := p.compileIn(e.Args[0], env)
		return func(k []uint64) int { return -a(k) }
	case ir.OpIte:
		c, a, b := p.compileIn(e.Args[0], env), p.compileIn(e.Args[1], env), p.compileIn(e.Args[2], env)
		return func(k []uint64) int {
			if c(k) != 0 {
				return a(k)
			}
			return b(k)
		}
	}
	a, b := p.compileIn(e.Args[0], env), p.compileIn(e.Args[1], env)
	if e.Args[1].Op == ir.OpConst {
		if f := withConst(e.Op, a, e.Args[1].Val); f != nil {
			return f
		}
	}
	switch e.Op {
	case ir.OpSubset:
		return func(k []uint64) int { return b2i(a(k)&^b(k) == 0) }
	case ir.OpUnion:
		return func(k []uint64) int { return a(k) | b(k) }
	case ir.OpInter:
		return func(k []uint64) int { return a(k) & b(k) }
	case ir.OpDiff:
		return func(k []uint64) int { return a(k) &^ b(k) }
	case ir.OpAnd:
		return func(k []uint64) int { return b2i(a(k) != 0 && b(k) != 0) }
	case ir.OpOr:
		return func(k []uint64) int { return b2i(a(k) != 0 || b(k) != 0) }
	case ir.OpImplies:
		return func(k []uint64) int { return b2i(a(k) == 0 || b(k) != 0) }
	case ir.OpEq:
		return func(k []uint64) int { return b2i(a(k) == b(k)) }
	case ir.OpNe:
		return func(k []uint64) int { return b2i(a(k) != b(k)) }
	case ir.OpLt:
		return func(k []uint64) int { return b2i(a(k) < b(k)) }
	case ir.OpLe:
		return func(k []uint64) int { return b2i(a(k) <= b(k)) }
	case ir.OpGt:
		return func(k []uint64) int { return b2i(a(k) > b(k)) }
	case ir.OpGe:
		return func(k []uint64) int { return b2i(a(k) >= b(k)) }
	case ir.OpAdd:
		return func(k []uint64) int { return a(k) + b(k) }
	case ir.OpSub:
		return func(k []uint64) int { return a(k) - b(k) }
	}
	panic(fmt.Sprintf("check: unknown operator %d", e.Op))
}

// withConst compiles "a op c" for a constant c, the commonest shape of a
// guard or a write (n < 4, n + 1), with one closure call fewer; nil for
// other operators.
func withConst(op ir.Op, a evalFn, c int) evalFn {
	switch op {
	case ir.OpEq:
		return func(k []uint64) int { return b2i(a(k) == c) }
	case ir.OpNe:
		return func(k []uint64) int { return b2i(a(k) != c) }
	case ir.OpLt:
		return func(k []uint64) int { return b2i(a(k) < c) }
	case ir.OpLe:
		return func(k []uint64) int { return b2i(a(k) <= c) }
	case ir.OpGt:
		return func(k []uint64) int { return b2i(a(k) > c) }
	case ir.OpGe:
		return func(k []uint64) int { return b2i(a(k) >= c) }
	case ir.OpAdd:
		return func(k []uint64) int { return a(k) + c }
	case ir.OpSub:
		return func(k []uint64) int { return a(k) - c }
	}
	return nil
}

// domain is the range of values a variable of type t can hold
// (ir.Type.Contains as bounds).
func domain(t ir.Type) (lo, hi int) {
	switch t.Kind {
	case ir.Bool:
		return 0, 1
	case ir.Enum:
		return 0, len(t.Values) - 1
	case ir.Int:
		return t.Min, t.Max
	case ir.Set:
		return 0, 1<<t.Elem.Size() - 1
	}
	return 1, 0 // nothing
}

// fire computes the successor of k by transition t. It reports false when
// t is disabled: its guard is false, or a write would leave its variable's
// domain (a bounded counter at its bound). All writes read the old state.
func (ct *ctrans) fire(k, out []uint64) bool {
	if ct.guard != nil && ct.guard(k) == 0 {
		return false
	}
	return ct.apply(k, out)
}

// apply computes the successor of k by t's writes whatever its guard says;
// false when a write would leave its variable's domain.
func (ct *ctrans) apply(k, out []uint64) bool {
	copy(out, k)
	for i := range ct.writes {
		w := &ct.writes[i]
		v := w.eval(k)
		if v < w.lo || v > w.hi {
			return false
		}
		w.slot.set(out, v)
	}
	if ct.sym != nil {
		ct.sym.canon(out)
	}
	return true
}

// values decodes k into one value per variable.
func (p *Program) values(k []uint64) []int {
	vs := make([]int, len(p.slots))
	for i, s := range p.slots {
		vs[i] = s.get(k)
	}
	return vs
}
