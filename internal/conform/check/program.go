package check

import (
	"fmt"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// key is a packed state: every variable's value, offset by its minimum,
// in a fixed bit field of one of two 64-bit words. Two states are equal
// exactly when their keys are.
type key [2]uint64

// slot is where one variable lives in a key.
type slot struct {
	word  int
	shift uint
	mask  uint64
	min   int
	typ   ir.Type
}

func (s slot) get(k *key) int { return int((k[s.word]>>s.shift)&s.mask) + s.min }

func (s slot) set(k *key, v int) {
	k[s.word] = k[s.word]&^(s.mask<<s.shift) | (uint64(v-s.min)&s.mask)<<s.shift
}

type evalFn func(k *key) int

type cwrite struct {
	slot slot
	eval evalFn
}

type ctrans struct {
	t      *ir.Transition
	guard  evalFn // nil: always enabled
	writes []cwrite
}

// Program is a compiled model: the state layout and every guard, write and
// property as closures over packed states. It is immutable and safe for
// concurrent use by any number of checks.
type Program struct {
	model *ir.Model
	slots []slot
	init  key
	trans []ctrans
	props map[string]evalFn
	words int // 1 or 2: how many words of the key the model uses
}

// Model returns the model p was compiled from.
func (p *Program) Model() *ir.Model { return p.model }

// Compile packs m's variables and compiles its expressions. m must have no
// Lint errors.
func Compile(m *ir.Model) (*Program, error) {
	p := &Program{model: m, props: map[string]evalFn{}, words: 1}
	bit := 0
	for _, v := range m.Vars {
		w := v.Type.Bits()
		word := bit / 64
		if bit%64+w > 64 { // a field never straddles two words
			bit = (word + 1) * 64
			word++
		}
		if word > 1 {
			return nil, fmt.Errorf("model %s: the state vector does not fit in %d bits", m.Name, ir.MaxStateBits)
		}
		p.words = max(p.words, word+1)
		s := slot{word: word, shift: uint(bit % 64), mask: uint64(1)<<w - 1, min: 0, typ: v.Type}
		if v.Type.Kind == ir.Int {
			s.min = v.Type.Min
		}
		p.slots = append(p.slots, s)
		s.set(&p.init, v.Init)
		bit += w
	}
	for i := range m.Transitions {
		t := &m.Transitions[i]
		ct := ctrans{t: t}
		if t.Guard != nil {
			ct.guard = p.compile(t.Guard)
		}
		for _, w := range t.Writes {
			ct.writes = append(ct.writes, cwrite{slot: p.slots[w.Var], eval: p.compile(w.Expr)})
		}
		p.trans = append(p.trans, ct)
	}
	for _, pr := range m.Properties {
		if pr.Expr != nil {
			p.props[pr.ID] = p.compile(pr.Expr)
		}
	}
	return p, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *Program) compile(e *ir.Expr) evalFn {
	switch e.Op {
	case ir.OpConst:
		v := e.Val
		return func(*key) int { return v }
	case ir.OpVar:
		s := p.slots[e.Var]
		if s.min == 0 {
			word, shift, mask := s.word, s.shift, s.mask
			return func(k *key) int { return int((k[word] >> shift) & mask) }
		}
		return s.get
	case ir.OpNot:
		a := p.compile(e.Args[0])
		return func(k *key) int { return 1 - a(k) }
	case ir.OpNeg:
		a := p.compile(e.Args[0])
		return func(k *key) int { return -a(k) }
	case ir.OpIte:
		c, a, b := p.compile(e.Args[0]), p.compile(e.Args[1]), p.compile(e.Args[2])
		return func(k *key) int {
			if c(k) != 0 {
				return a(k)
			}
			return b(k)
		}
	}
	a, b := p.compile(e.Args[0]), p.compile(e.Args[1])
	switch e.Op {
	case ir.OpAnd:
		return func(k *key) int { return b2i(a(k) != 0 && b(k) != 0) }
	case ir.OpOr:
		return func(k *key) int { return b2i(a(k) != 0 || b(k) != 0) }
	case ir.OpImplies:
		return func(k *key) int { return b2i(a(k) == 0 || b(k) != 0) }
	case ir.OpEq:
		return func(k *key) int { return b2i(a(k) == b(k)) }
	case ir.OpNe:
		return func(k *key) int { return b2i(a(k) != b(k)) }
	case ir.OpLt:
		return func(k *key) int { return b2i(a(k) < b(k)) }
	case ir.OpLe:
		return func(k *key) int { return b2i(a(k) <= b(k)) }
	case ir.OpGt:
		return func(k *key) int { return b2i(a(k) > b(k)) }
	case ir.OpGe:
		return func(k *key) int { return b2i(a(k) >= b(k)) }
	case ir.OpAdd:
		return func(k *key) int { return a(k) + b(k) }
	case ir.OpSub:
		return func(k *key) int { return a(k) - b(k) }
	}
	panic(fmt.Sprintf("check: unknown operator %d", e.Op))
}

// fire computes the successor of k by transition t. It reports false when
// t is disabled: its guard is false, or a write would leave its variable's
// domain (a bounded counter at its bound). All writes read the old state.
func (ct *ctrans) fire(k *key, out *key) bool {
	if ct.guard != nil && ct.guard(k) == 0 {
		return false
	}
	*out = *k
	for i := range ct.writes {
		w := &ct.writes[i]
		v := w.eval(k)
		if !w.slot.typ.Contains(v) {
			return false
		}
		w.slot.set(out, v)
	}
	return true
}

// values decodes k into one value per variable.
func (p *Program) values(k key) []int {
	vs := make([]int, len(p.slots))
	for i, s := range p.slots {
		vs[i] = s.get(&k)
	}
	return vs
}
