package ir

// resolve types e against the model's variables, turning identifiers into
// variables or enum literals. hint is the type the context expects (the
// other side of a comparison, the variable written), which is how an enum
// literal such as `ready` gets its type. Problems go to d; the returned type
// has Kind 0 when e is invalid (and that has been reported).
func resolve(e *Expr, vars []Var, hint *Type, d *diags) Type {
	if e == nil {
		return Type{}
	}
	switch e.Op {
	case OpConst:
		return e.Type
	case OpVar:
		for i, v := range vars {
			if v.Name == e.Name {
				e.Var, e.Type = i, v.Type
				return e.Type
			}
		}
		if hint != nil && hint.Kind == Enum {
			for i, val := range hint.Values {
				if val == e.Name {
					e.Op, e.Val, e.Type, e.Var = OpConst, i, *hint, 0
					return e.Type
				}
			}
			d.add(e.Pos, "out-of-domain", "%q is neither a variable nor a value of %s", e.Name, hint)
			return Type{}
		}
		d.add(e.Pos, "unknown-variable", "unknown variable %q", e.Name)
		return Type{}
	case OpNot:
		t := resolve(e.Args[0], vars, nil, d)
		expectKind(e.Args[0], t, Bool, "operand of !", d)
		e.Type = Type{Kind: Bool}
	case OpNeg:
		t := resolve(e.Args[0], vars, nil, d)
		if expectKind(e.Args[0], t, Int, "operand of unary -", d) {
			e.Type = Type{Kind: Int, Min: -t.Max, Max: -t.Min}
		} else {
			e.Type = Type{Kind: Int}
		}
	case OpAnd, OpOr, OpImplies:
		for _, a := range e.Args {
			t := resolve(a, vars, nil, d)
			expectKind(a, t, Bool, "operand of "+e.Op.Text(), d)
		}
		e.Type = Type{Kind: Bool}
	case OpAdd, OpSub:
		l := resolve(e.Args[0], vars, nil, d)
		r := resolve(e.Args[1], vars, nil, d)
		okL := expectKind(e.Args[0], l, Int, "operand of "+e.Op.Text(), d)
		okR := expectKind(e.Args[1], r, Int, "operand of "+e.Op.Text(), d)
		e.Type = Type{Kind: Int}
		if okL && okR {
			if e.Op == OpAdd {
				e.Type.Min, e.Type.Max = l.Min+r.Min, l.Max+r.Max
			} else {
				e.Type.Min, e.Type.Max = l.Min-r.Max, l.Max-r.Min
			}
		}
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		l, r := e.Args[0], e.Args[1]
		var lt, rt Type
		if bareIdent(l, vars) && !bareIdent(r, vars) {
			rt = resolve(r, vars, nil, d)
			lt = resolve(l, vars, typeHint(rt), d)
		} else {
			lt = resolve(l, vars, nil, d)
			rt = resolve(r, vars, typeHint(lt), d)
		}
		e.Type = Type{Kind: Bool}
		if lt.Kind == 0 || rt.Kind == 0 {
			return e.Type
		}
		if !compatible(lt, rt) {
			d.add(e.Pos, "type-mismatch", "cannot compare %s with %s", lt, rt)
			return e.Type
		}
		if e.Op != OpEq && e.Op != OpNe && lt.Kind != Int {
			d.add(e.Pos, "type-mismatch", "%s needs integers, not %s", e.Op.Text(), lt)
			return e.Type
		}
		if lt.Kind == Int {
			checkIntConst(l, r, d)
			checkIntConst(r, l, d)
		}
	case OpIte:
		c := resolve(e.Args[0], vars, nil, d)
		expectKind(e.Args[0], c, Bool, "condition of if", d)
		a, b := e.Args[1], e.Args[2]
		var at, bt Type
		if bareIdent(a, vars) && !bareIdent(b, vars) {
			bt = resolve(b, vars, hint, d)
			at = resolve(a, vars, typeOr(typeHint(bt), hint), d)
		} else {
			at = resolve(a, vars, hint, d)
			bt = resolve(b, vars, typeOr(typeHint(at), hint), d)
		}
		if at.Kind == 0 || bt.Kind == 0 {
			return Type{}
		}
		if !compatible(at, bt) {
			d.add(e.Pos, "type-mismatch", "the branches of if have different types: %s and %s", at, bt)
			return Type{}
		}
		e.Type = at
		if at.Kind == Int {
			e.Type.Min, e.Type.Max = min(at.Min, bt.Min), max(at.Max, bt.Max)
		}
	}
	return e.Type
}

func typeHint(t Type) *Type {
	if t.Kind == 0 {
		return nil
	}
	return &t
}

func typeOr(a, b *Type) *Type {
	if a != nil {
		return a
	}
	return b
}

// bareIdent reports whether e is an identifier that is not a variable: an
// enum literal waiting for its type from the other operand.
func bareIdent(e *Expr, vars []Var) bool {
	if e == nil || e.Op != OpVar || e.Var >= 0 {
		return false
	}
	for _, v := range vars {
		if v.Name == e.Name {
			return false
		}
	}
	return true
}

func expectKind(e *Expr, t Type, k TypeKind, what string, d *diags) bool {
	if t.Kind == 0 {
		return false
	}
	if t.Kind != k {
		d.add(e.Pos, "type-mismatch", "%s must be %s, not %s", what, Type{Kind: k, Values: nil}.kindName(), t)
		return false
	}
	return true
}

func (t Type) kindName() string {
	switch t.Kind {
	case Bool:
		return "bool"
	case Enum:
		return "an enum"
	}
	return "int"
}

// checkIntConst reports an integer literal compared with a variable whose
// domain does not contain it: the comparison is constant, which is a bug.
func checkIntConst(c, v *Expr, d *diags) {
	if c.Op == OpConst && v.Op == OpVar && !v.Type.Contains(c.Val) {
		d.add(c.Pos, "out-of-domain", "constant %d is outside the domain of %s (%s)", c.Val, v.Name, v.Type)
	}
}
