package ir

import "strings"

// scope is what a name in an expression may stand for: a state variable,
// an array, a domain (after forall/exists), or a bound variable. A bound
// variable is fixed (a transition parameter, whose value is known when the
// transition is expanded) or quantified.
type scope struct {
	vars    []Var
	arrays  []Array
	records []Record
	domains []Domain
	bound   []boundVar // innermost last
	// broken names the domains and variables whose declarations had
	// errors (already reported): a use of one is not reported again.
	broken map[string]bool
	// scalars indexes vars by name (when not nil): a model with thousands
	// of array cells and transition instances is not read in quadratic time.
	scalars map[string]int
}

type boundVar struct {
	name  string
	typ   Type
	fixed bool
	val   int
}

func (sc *scope) lookupBound(name string) (boundVar, bool) {
	for i := len(sc.bound) - 1; i >= 0; i-- {
		if sc.bound[i].name == name {
			return sc.bound[i], true
		}
	}
	return boundVar{}, false
}

func (sc *scope) scalar(name string) int {
	if sc.scalars != nil {
		if i, ok := sc.scalars[name]; ok {
			return i
		}
		return -1
	}
	for i, v := range sc.vars {
		if v.Name == name && v.Index == nil {
			return i
		}
	}
	return -1
}

func (sc *scope) array(name string) int {
	for i, a := range sc.arrays {
		if a.Name == name {
			return i
		}
	}
	return -1
}

func (sc *scope) domain(name string) *Domain {
	for i := range sc.domains {
		if sc.domains[i].Name == name {
			return &sc.domains[i]
		}
	}
	return nil
}

func (sc *scope) record(name string) *Record {
	for i := range sc.records {
		if sc.records[i].Name == name {
			return &sc.records[i]
		}
	}
	return nil
}

// taken reports whether name already means something in sc.
func (sc *scope) taken(name string) bool {
	_, b := sc.lookupBound(name)
	return b || sc.scalar(name) >= 0 || sc.array(name) >= 0 || sc.record(name) != nil
}

// field finds the field e.Field of the record e.Name; problems are
// reported and give -1. indexed says whether the read has indices.
func (sc *scope) field(e *Expr, indexed bool, d *diags) (*Record, int) {
	r := sc.record(e.Name)
	switch {
	case r == nil && sc.taken(e.Name):
		d.add(e.Pos, "record", "%q is not a record; only a record has fields (%s.%s)", e.Name, e.Name, e.Field)
		return nil, -1
	case r == nil && sc.broken[e.Name]:
		return nil, -1
	case r == nil:
		d.add(e.Pos, "unknown-variable", "unknown record %q", e.Name)
		return nil, -1
	case indexed && r.Index == nil:
		d.add(e.Pos, "type-mismatch", "record %q is not an array: read its field as %s.%s", e.Name, e.Name, e.Field)
		return nil, -1
	case !indexed && r.Index != nil:
		d.add(e.Pos, "type-mismatch", "%q is an array of records, read one cell at a time: %s[...].%s", e.Name, e.Name, e.Field)
		return nil, -1
	}
	fi := r.FieldIndex(e.Field)
	if fi < 0 {
		d.add(e.Pos, "unknown-field", "record %q has no field %q (its fields: %s)", e.Name, e.Field, strings.Join(r.FieldNames(), ", "))
		return nil, -1
	}
	return r, fi
}

// resolve types e in sc, turning identifiers into variables, bound
// variables or enum literals, and array reads with constant indices into
// the cell variable they read. hint is the type the context expects (the
// other side of a comparison, the variable written), which is how an enum
// literal such as `ready` or a set literal such as `{}` gets its type.
// Problems go to d; the returned type has Kind 0 when e is invalid (and
// that has been reported).
func resolve(e *Expr, sc *scope, hint *Type, d *diags) Type {
	if e == nil {
		return Type{}
	}
	switch e.Op {
	case OpConst:
		return e.Type
	case OpVar:
		if e.Field != "" {
			r, fi := sc.field(e, false, d)
			if r == nil {
				return Type{}
			}
			e.Var, e.Type = r.Fields[fi].Var, r.Fields[fi].Type
			e.Name, e.Field = e.Name+"."+e.Field, ""
			return e.Type
		}
		if r := sc.record(e.Name); r != nil {
			read := e.Name + "[...]." + r.Fields[0].Name
			if r.Index == nil {
				read = e.Name + "." + r.Fields[0].Name
			}
			d.add(e.Pos, "record", "record %q is read one field at a time: %s", e.Name, read)
			return Type{}
		}
		if b, ok := sc.lookupBound(e.Name); ok {
			if b.fixed {
				*e = Expr{Op: OpConst, Val: b.val, Type: b.typ, Pos: e.Pos, Fixed: b.name}
				if b.typ.Kind == Enum {
					e.Name = b.typ.Values[b.val]
				}
			} else {
				e.Op, e.Type = OpBound, b.typ
			}
			return e.Type
		}
		if i := sc.scalar(e.Name); i >= 0 {
			e.Var, e.Type = i, sc.vars[i].Type
			return e.Type
		}
		if sc.array(e.Name) >= 0 {
			d.add(e.Pos, "type-mismatch", "array %q is read one cell at a time: %s[...]", e.Name, e.Name)
			return Type{}
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
		if !sc.broken[e.Name] {
			d.add(e.Pos, "unknown-variable", "unknown variable %q", e.Name)
		}
		return Type{}
	case OpIndex:
		return resolveIndex(e, sc, d)
	case OpSetLit:
		return resolveSetLit(e, sc, hint, d)
	case OpIn:
		el, set := e.Args[0], e.Args[1]
		var et, st Type
		if needsHint(set, sc) && !needsHint(el, sc) {
			et = resolve(el, sc, nil, d)
			if et.Kind == Enum || et.Kind == Int {
				st = resolve(set, sc, &Type{Kind: Set, Elem: &et}, d)
			} else {
				st = resolve(set, sc, nil, d)
			}
		} else {
			st = resolve(set, sc, nil, d)
			var eh *Type
			if st.Kind == Set {
				eh = st.Elem
			}
			et = resolve(el, sc, eh, d)
		}
		e.Type = Type{Kind: Bool}
		if expectKind(set, st, Set, "right side of in", d) && et.Kind != 0 {
			if !compatible(et, *st.Elem) {
				d.add(e.Pos, "type-mismatch", "%s is not an element type of %s", et, st)
			} else if symTag(st) != "" || symTag(et) != "" {
				symMeet(el, et, symTag(st), d)
			}
		}
	case OpSubset, OpUnion, OpInter, OpDiff:
		l, r := e.Args[0], e.Args[1]
		var lt, rt Type
		if needsHint(l, sc) && !needsHint(r, sc) {
			rt = resolve(r, sc, hint, d)
			lt = resolve(l, sc, typeOr(typeHint(rt), hint), d)
		} else {
			lt = resolve(l, sc, hint, d)
			rt = resolve(r, sc, typeOr(typeHint(lt), hint), d)
		}
		okL := expectKind(l, lt, Set, "operand of "+e.Op.Text(), d)
		okR := expectKind(r, rt, Set, "operand of "+e.Op.Text(), d)
		if okL && okR && !compatible(lt, rt) {
			d.add(e.Pos, "type-mismatch", "%s needs sets of one type, not %s and %s", e.Op.Text(), lt, rt)
			return Type{}
		}
		if okL && okR {
			symPair(l, r, lt, rt, d)
		}
		if e.Op == OpSubset {
			e.Type = Type{Kind: Bool}
		} else if okL && okR {
			e.Type = lt
		} else {
			return Type{}
		}
	case OpCard:
		t := resolve(e.Args[0], sc, nil, d)
		e.Type = Type{Kind: Int}
		if expectKind(e.Args[0], t, Set, "operand of card", d) {
			e.Type.Max = t.Elem.Size()
		}
	case OpForall, OpExists:
		dom := sc.domain(e.Dom.Name)
		if dom == nil {
			if !sc.broken[e.Dom.Name] {
				d.add(e.Pos, "unknown-domain", "unknown domain %q (declare it under domains:)", e.Dom.Name)
			}
			return Type{}
		}
		if sc.taken(e.Name) {
			d.add(e.Pos, "name", "bound variable %q hides a variable, an array or another bound variable", e.Name)
			return Type{}
		}
		e.Dom = dom
		bindings := dom.Type.Size()
		for _, b := range sc.bound {
			if !b.fixed {
				bindings *= b.typ.Size()
			}
		}
		if bindings > MaxQuantified {
			d.add(e.Pos, "domain", "the quantifiers nested here range over %d bindings; at most %d", bindings, MaxQuantified)
			return Type{}
		}
		sc.bound = append(sc.bound, boundVar{name: e.Name, typ: dom.Type})
		t := resolve(e.Args[0], sc, nil, d)
		sc.bound = sc.bound[:len(sc.bound)-1]
		expectKind(e.Args[0], t, Bool, "body of "+e.Op.Text(), d)
		e.Type = Type{Kind: Bool}
	case OpNot:
		t := resolve(e.Args[0], sc, nil, d)
		expectKind(e.Args[0], t, Bool, "operand of !", d)
		e.Type = Type{Kind: Bool}
	case OpNeg:
		t := resolve(e.Args[0], sc, nil, d)
		if !expectKind(e.Args[0], t, Int, "operand of unary -", d) {
			return Type{} // reported: the context does not report it again
		}
		symNoArith(e, []Type{t}, d)
		e.Type = Type{Kind: Int, Min: -t.Max, Max: -t.Min}
	case OpAnd, OpOr, OpImplies:
		for _, a := range e.Args {
			t := resolve(a, sc, nil, d)
			expectKind(a, t, Bool, "operand of "+e.Op.Text(), d)
		}
		e.Type = Type{Kind: Bool}
	case OpAdd, OpSub:
		l := resolve(e.Args[0], sc, nil, d)
		r := resolve(e.Args[1], sc, nil, d)
		okL := expectKind(e.Args[0], l, Int, "operand of "+e.Op.Text(), d)
		okR := expectKind(e.Args[1], r, Int, "operand of "+e.Op.Text(), d)
		if !okL || !okR {
			return Type{} // reported: the context does not report it again
		}
		e.Type = Type{Kind: Int}
		symNoArith(e, []Type{l, r}, d)
		if e.Op == OpAdd {
			e.Type.Min, e.Type.Max = l.Min+r.Min, l.Max+r.Max
		} else {
			e.Type.Min, e.Type.Max = l.Min-r.Max, l.Max-r.Min
		}
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		l, r := e.Args[0], e.Args[1]
		var lt, rt Type
		if needsHint(l, sc) && !needsHint(r, sc) {
			rt = resolve(r, sc, nil, d)
			lt = resolve(l, sc, typeHint(rt), d)
		} else {
			lt = resolve(l, sc, nil, d)
			rt = resolve(r, sc, typeHint(lt), d)
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
		if e.Op == OpEq || e.Op == OpNe {
			symPair(l, r, lt, rt, d)
		} else {
			symNoArith(e, []Type{lt, rt}, d)
		}
		if lt.Kind == Int {
			checkIntConst(l, r, d)
			checkIntConst(r, l, d)
		}
	case OpIte:
		c := resolve(e.Args[0], sc, nil, d)
		expectKind(e.Args[0], c, Bool, "condition of if", d)
		a, b := e.Args[1], e.Args[2]
		var at, bt Type
		if needsHint(a, sc) && !needsHint(b, sc) {
			bt = resolve(b, sc, hint, d)
			at = resolve(a, sc, typeOr(typeHint(bt), hint), d)
		} else {
			at = resolve(a, sc, hint, d)
			bt = resolve(b, sc, typeOr(typeHint(at), hint), d)
		}
		if at.Kind == 0 || bt.Kind == 0 {
			return Type{}
		}
		if !compatible(at, bt) {
			d.add(e.Pos, "type-mismatch", "the branches of if have different types: %s and %s", at, bt)
			return Type{}
		}
		symPair(a, b, at, bt, d)
		e.Type = at
		if at.Kind == Int {
			e.Type.Min, e.Type.Max = min(at.Min, bt.Min), max(at.Max, bt.Max)
		}
	}
	return e.Type
}

// resolveIndex types an array read. Indices may use constants, literals
// and bound variables, never state variables: a read is then always a
// fixed cell once the bound variables have values. With constant indices
// the node becomes the cell variable itself.
func resolveIndex(e *Expr, sc *scope, d *diags) Type {
	ai := sc.array(e.Name)
	if e.Field != "" {
		r, fi := sc.field(e, true, d)
		if r == nil {
			return Type{}
		}
		ai = r.Fields[fi].Var
	} else if r := sc.record(e.Name); r != nil {
		d.add(e.Pos, "record", "%q is an array of records, read one field at a time: %s[...].%s", e.Name, e.Name, r.Fields[0].Name)
		return Type{}
	}
	if ai < 0 {
		if sc.scalar(e.Name) >= 0 {
			d.add(e.Pos, "type-mismatch", "%q is not an array", e.Name)
		} else if !sc.broken[e.Name] {
			d.add(e.Pos, "unknown-variable", "unknown array %q", e.Name)
		}
		return Type{}
	}
	a := &sc.arrays[ai]
	if len(e.Args) != len(a.Index) {
		d.add(e.Pos, "type-mismatch", "array %q has %d indices, not %d", e.Name, len(a.Index), len(e.Args))
		return Type{}
	}
	ok, allConst := true, true
	consts := make([]int, len(e.Args))
	for i, x := range e.Args {
		want := a.Index[i]
		t := resolve(x, sc, &want, d)
		if t.Kind == 0 {
			ok = false
			continue
		}
		if !compatible(t, want) {
			d.add(x.Pos, "type-mismatch", "index %d of %s must be %s, not %s", i+1, a.Name, want, t)
			ok = false
			continue
		}
		if want.Sym != "" || symTag(t) != "" {
			symMeet(x, t, want.Sym, d)
		}
		reads := false
		x.Vars(func(int) { reads = true })
		if reads {
			d.add(x.Pos, "index", "an index of %s reads a state variable; indices use constants and bound variables only", e.Name)
			ok = false
			continue
		}
		if x.Op != OpConst && x.Op != OpBound {
			// An index of constants alone (AGENTS - 1, -1) is folded, so
			// that it names one cell when the model is read: a write key
			// may use it, and one outside the domain is found here.
			if v, err := EvalConst(x, nil); err == nil {
				*x = Expr{Op: OpConst, Val: v, Type: t, Pos: x.Pos}
			}
		}
		if x.Op == OpConst {
			consts[i] = x.Val
			if !want.Contains(x.Val) {
				d.add(x.Pos, "out-of-domain", "index %d is outside %s", x.Val, want)
				ok = false
			}
		} else {
			allConst = false
		}
	}
	if !ok {
		return Type{}
	}
	e.Var, e.Type = ai, a.Elem
	if allConst {
		cell, _ := a.Cell(consts)
		*e = Expr{Op: OpVar, Name: sc.vars[cell].Name, Var: cell, Type: a.Elem, Pos: e.Pos}
	}
	return e.Type
}

// resolveSetLit types {a, b, ...}; an all-constant literal becomes a
// constant bit-vector.
func resolveSetLit(e *Expr, sc *scope, hint *Type, d *diags) Type {
	var elem *Type
	if hint != nil && hint.Kind == Set {
		elem = hint.Elem
	}
	for _, x := range e.Args {
		t := resolve(x, sc, elem, d)
		if t.Kind == 0 {
			return Type{}
		}
		if elem == nil {
			if t.Kind != Enum && t.Kind != Int {
				d.add(x.Pos, "type-mismatch", "a set's elements are enum values or integers, not %s", t)
				return Type{}
			}
			tt := t
			elem = &tt
		} else if !compatible(t, *elem) || t.Kind == Int && x.Op != OpConst && (t.Min < elem.Min || t.Max > elem.Max) {
			// (A constant outside the domain is out-of-domain, below.)
			d.add(x.Pos, "type-mismatch", "element %s (%s) is not always in %s", x, t, elem)
			return Type{}
		}
		if elem.Sym != "" || symTag(t) != "" {
			symMeet(x, t, elem.Sym, d)
		}
	}
	if elem == nil {
		d.add(e.Pos, "type-mismatch", "cannot tell the element type of %s here; compare it with a set variable", e)
		return Type{}
	}
	e.Type = Type{Kind: Set, Elem: elem}
	bitsv := 0
	for _, x := range e.Args {
		if x.Op != OpConst {
			return e.Type
		}
		if !elem.Contains(x.Val) {
			d.add(x.Pos, "out-of-domain", "set element %s is not in %s", x, elem)
			return Type{}
		}
		bitsv |= 1 << elem.Bit(x.Val)
	}
	*e = Expr{Op: OpConst, Val: bitsv, Type: e.Type, Pos: e.Pos}
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

// needsHint reports whether e takes its type from its context: an
// identifier that is not a variable (an enum literal) or a set literal.
func needsHint(e *Expr, sc *scope) bool {
	if e == nil {
		return false
	}
	if e.Op == OpSetLit {
		return true
	}
	if e.Op != OpVar || e.Var >= 0 {
		return false
	}
	return !sc.taken(e.Name)
}

func expectKind(e *Expr, t Type, k TypeKind, what string, d *diags) bool {
	if t.Kind == 0 {
		return false
	}
	if t.Kind != k {
		d.add(e.Pos, "type-mismatch", "%s must be %s, not %s", what, Type{Kind: k}.kindName(), t)
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
	case Set:
		return "a set"
	}
	return "int"
}

// checkIntConst reports an integer literal compared with a variable whose
// domain does not contain it: the comparison is constant, which is a bug.
func checkIntConst(c, v *Expr, d *diags) {
	if c.Op == OpConst && v.Op == OpVar && v.Type.Kind == Int && !v.Type.Contains(c.Val) {
		d.add(c.Pos, "out-of-domain", "constant %d is outside the domain of %s (%s)", c.Val, v.Name, v.Type)
	}
}
