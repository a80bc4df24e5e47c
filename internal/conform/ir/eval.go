package ir

import (
	"fmt"
	"math/bits"
)

// Env binds quantified variables to encoded values, innermost last. The
// checker and the Promela printer expand a quantifier by evaluating its
// body once per value of its domain under such an environment.
type Env []Binding

// Binding is one bound variable's value.
type Binding struct {
	Name string
	Val  int
}

// Lookup returns the innermost value bound to name.
func (env Env) Lookup(name string) (int, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if env[i].Name == name {
			return env[i].Val, true
		}
	}
	return 0, false
}

// With returns env extended by name = val (env itself is not changed).
func (env Env) With(name string, val int) Env {
	out := make(Env, len(env), len(env)+1)
	copy(out, env)
	return append(out, Binding{name, val})
}

// EvalConst evaluates e, which must read no state variable, under env.
func EvalConst(e *Expr, env Env) (int, error) {
	return evalWith(e, env, func(x *Expr) (int, error) {
		return 0, fmt.Errorf("%s reads the state", x)
	})
}

// Cell returns the variable an array read e (OpIndex) reads once its bound
// variables have the values of env.
func (m *Model) Cell(e *Expr, env Env) (int, error) {
	a := &m.Arrays[e.Var]
	idx := make([]int, len(e.Args))
	for i, x := range e.Args {
		v, err := EvalConst(x, env)
		if err != nil {
			return 0, err
		}
		idx[i] = v
	}
	c, ok := a.Cell(idx)
	if !ok {
		return 0, fmt.Errorf("%s: an index is outside its domain", e)
	}
	return c, nil
}

// evalWith evaluates e under env; state reads (OpVar, OpIndex) go to read.
func evalWith(e *Expr, env Env, read func(*Expr) (int, error)) (int, error) {
	var ev func(*Expr) int
	var err error
	fail := func(e2 error) int {
		if err == nil {
			err = e2
		}
		return 0
	}
	ev = func(x *Expr) int {
		switch x.Op {
		case OpConst:
			return x.Val
		case OpVar, OpIndex:
			v, e2 := read(x)
			if e2 != nil {
				return fail(e2)
			}
			return v
		case OpBound:
			v, ok := env.Lookup(x.Name)
			if !ok {
				return fail(fmt.Errorf("%s is not bound", x.Name))
			}
			return v
		case OpNot:
			return 1 - ev(x.Args[0])
		case OpNeg:
			return -ev(x.Args[0])
		case OpIte:
			if ev(x.Args[0]) != 0 {
				return ev(x.Args[1])
			}
			return ev(x.Args[2])
		case OpSetLit:
			v := 0
			for _, a := range x.Args {
				v |= 1 << x.Type.Elem.Bit(ev(a))
			}
			return v
		case OpCard:
			return bits.OnesCount(uint(ev(x.Args[0])))
		case OpForall, OpExists:
			want := x.Op == OpExists
			saved := env
			defer func() { env = saved }()
			for _, v := range x.Dom.Type.Elems() {
				env = saved.With(x.Name, v)
				if (ev(x.Args[0]) != 0) == want {
					return b2i(want)
				}
			}
			return b2i(!want)
		case OpIn:
			el, set := ev(x.Args[0]), ev(x.Args[1])
			bit := x.Args[1].Type.Elem.Bit(el)
			if bit < 0 || bit >= 62 { // an integer outside the element domain is in no set
				return 0
			}
			return set >> bit & 1
		}
		a, b := ev(x.Args[0]), ev(x.Args[1])
		switch x.Op {
		case OpAnd:
			return b2i(a != 0 && b != 0)
		case OpOr:
			return b2i(a != 0 || b != 0)
		case OpImplies:
			return b2i(a == 0 || b != 0)
		case OpEq:
			return b2i(a == b)
		case OpNe:
			return b2i(a != b)
		case OpLt:
			return b2i(a < b)
		case OpLe:
			return b2i(a <= b)
		case OpGt:
			return b2i(a > b)
		case OpGe:
			return b2i(a >= b)
		case OpAdd:
			return a + b
		case OpSub:
			return a - b
		case OpSubset:
			return b2i(a&^b == 0)
		case OpUnion:
			return a | b
		case OpInter:
			return a & b
		case OpDiff:
			return a &^ b
		}
		return fail(fmt.Errorf("unknown operator %d", x.Op))
	}
	v := ev(e)
	return v, err
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
