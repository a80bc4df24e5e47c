package ir

// Symmetric domains.
//
// A domain declared `symmetric: true` promises that the model treats its
// elements alike, so that renaming them (any permutation) maps every
// reachable state to a reachable state, every transition instance to a
// transition instance and every property to itself. The checker relies on
// that promise to store one state per orbit; the typecheck below is what
// makes it safe. A value of a symmetric domain may come from a variable of
// the domain, a bound variable (quantifier, transition parameter, named
// array index) or an array index over the domain, and be compared with
// == and != against another such value, tested with in, and used as an
// index. Everything that tells one element from another is an error with
// code "symmetry":
//
//   - a literal or constant where a value of the domain is expected:
//     `ag == 1`, `owner: 2`, `delegation[1][2]`, `1 in s`, `{1}`;
//   - ordering or arithmetic: `a < b`, `ag + 1`;
//   - a value of the domain meeting a value of another type (a plain int,
//     another domain), which would carry an element out of the renaming.
//
// The empty set literal {} names no element and is allowed.

// symTag is the symmetric domain whose elements t's values are, or whose
// elements a set of type t holds; "" for none.
func symTag(t Type) string {
	if t.Kind == Set && t.Elem != nil {
		return t.Elem.Sym
	}
	return t.Sym
}

// symMeet checks x, of type xt, where a value tagged tag is expected (the
// other side of a comparison, the variable written, the index's domain).
// The branches of an if are checked one by one, so the message points at
// the literal.
func symMeet(x *Expr, xt Type, tag string, d *diags) {
	if x == nil || xt.Kind == 0 {
		return
	}
	if x.Op == OpIte {
		symMeet(x.Args[1], x.Args[1].Type, tag, d)
		symMeet(x.Args[2], x.Args[2].Type, tag, d)
		return
	}
	own := symTag(xt)
	if x.Op == OpAdd || x.Op == OpSub || x.Op == OpNeg {
		for _, a := range x.Args {
			if symTag(a.Type) != "" {
				return // symNoArith has reported the arithmetic itself
			}
		}
	}
	switch {
	case tag != "" && x.Op == OpConst && x.Fixed == "" && xt.Kind != Set:
		d.add(x.Pos, "symmetry", "%s names one element of the symmetric domain %s; a symmetric domain's elements are told apart only by bound variables (forall, exists, transition parameters)", x, tag)
	// The messages below do not print x: in a transition with parameters
	// it differs from instance to instance (self[1], self[2]), and one
	// mistake should be one diagnostic.
	case own != tag && own != "" && tag != "":
		d.add(x.Pos, "symmetry", "a value of the symmetric domain %s is used where one of %s is expected", own, tag)
	case own != tag && own != "":
		d.add(x.Pos, "symmetry", "a value of the symmetric domain %s is used where a value of another type is expected; it would carry an element out of the symmetry", own)
	case own != tag:
		d.add(x.Pos, "symmetry", "a value that is not of the symmetric domain %s is used where one of %s is expected; values of %s meet only values of %s", tag, tag, tag, tag)
	}
}

// symPair checks the two operands of a comparison or a set operation:
// when either is of a symmetric domain, both must be of it.
func symPair(l, r *Expr, lt, rt Type, d *diags) {
	tag := symTag(lt)
	if tag == "" {
		tag = symTag(rt)
	}
	if tag == "" || lt.Kind == 0 || rt.Kind == 0 {
		return
	}
	symMeet(l, lt, tag, d)
	symMeet(r, rt, tag, d)
}

// symNoArith reports an ordering or arithmetic operator applied to a value
// of a symmetric domain.
func symNoArith(e *Expr, operands []Type, d *diags) {
	for _, t := range operands {
		if tag := symTag(t); tag != "" {
			d.add(e.Pos, "symmetry", "%s orders or computes with values of the symmetric domain %s; only == and != compare them", e.Op.Text(), tag)
			return
		}
	}
}
