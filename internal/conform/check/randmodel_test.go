package check_test

// A seeded generator of random IR models for the differential tests
// (random_test.go). Each model is YAML text, read by the same parser as a
// user's file, and draws on every feature of the IR: constants overridden
// with -D, an integer and an enum domain (symmetric in about a third of
// the models) and one with negative elements, bool, enum, negative-ranged
// int and domain-valued
// variables, sets, one- and two-dimensional arrays, a record and an array
// of records, quantifiers, parameterised transitions, adversary
// transitions, an array wide enough to push the state vector past 128
// bits, invariants and leads-to properties with and without fairness.
// Guards, writes and properties are drawn at random over small domains.
//
// In a symmetric model the generator writes only what the typecheck
// admits there: no literal or constant of the domain, no order or
// arithmetic on its values, no variable holding one element.

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
)

// randModel is one generated model: its source and the -D values to load
// it with.
type randModel struct {
	seed      int64
	src       string
	defines   map[string]int
	symmetric bool // Agent (and Color, when present) are declared symmetric
}

// gen draws one model.
type gen struct {
	r      *rand.Rand
	sym    bool
	colors bool // the Color domain and its variables are present
	levels bool // the Lvl domain (-1..1) and its variables are present
	n      int  // |Agent| after -D
	xmin   int  // x's range
	xmax   int
	has    map[string]bool // optional variables present
}

// optional variables: each is present in a model with probability 1/2
// (x, flag and s always are).
var optionalVars = []string{"ph", "who", "f", "cnt", "st", "g", "own", "rec", "calls", "pad", "u"}

func (g *gen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

func (g *gen) chance(n int) bool { return g.r.Intn(n) == 0 }

// genModel draws the model of the given seed.
func genModel(seed int64) randModel {
	r := rand.New(rand.NewSource(seed))
	g := &gen{r: r, sym: r.Intn(3) == 0, has: map[string]bool{}}
	g.colors = r.Intn(3) == 0
	declared := 2 + r.Intn(2)
	g.n = declared
	defines := map[string]int{}
	if r.Intn(2) == 0 { // -D AGENTS=… overrides the declared value
		g.n = 5 - declared
		defines["AGENTS"] = g.n
	}
	kdecl := 1 + r.Intn(2)
	g.xmin, g.xmax = -r.Intn(2), kdecl
	if r.Intn(3) == 0 {
		g.xmax = 3 - kdecl
		defines["TOP"] = g.xmax
	}
	for _, v := range optionalVars {
		g.has[v] = r.Intn(2) == 0
	}
	if g.sym {
		g.has["who"] = false // one element: not symmetric
	}
	// Drawn apart, so that adding them left the other models as they were:
	// four agents, and a pad of 48 cells (more than 512 bits of state).
	extra := rand.New(rand.NewSource(^seed))
	if extra.Intn(6) == 0 {
		g.n = 4
		defines["AGENTS"] = 4
	}
	slots := 8
	if extra.Intn(3) == 0 {
		slots = 48
	}
	g.levels = extra.Intn(2) == 0 // a domain with negative elements

	var b strings.Builder
	fmt.Fprintf(&b, "ir_version: 1\nmodel: random-%d\nprotocol: MCP\n", seed)
	fmt.Fprintf(&b, "constants:\n  - {name: AGENTS, value: %d}\n  - {name: TOP, value: %d}\n", declared, kdecl)
	b.WriteString("domains:\n")
	fmt.Fprintf(&b, "  - {name: Agent, type: int, min: 1, max: AGENTS, symmetric: %v}\n", g.sym)
	b.WriteString("  - {name: Phase, type: enum, values: [idle, busy, done]}\n")
	fmt.Fprintf(&b, "  - {name: Slot, type: int, min: 1, max: %d}\n", slots)
	if g.colors {
		fmt.Fprintf(&b, "  - {name: Color, type: enum, values: [red, blue, green], symmetric: %v}\n", g.sym)
	}
	if g.levels {
		b.WriteString("  - {name: Lvl, type: int, min: -1, max: 1}\n")
	}
	b.WriteString("variables:\n")
	fmt.Fprintf(&b, "  - {name: x, type: int, min: %d, max: TOP, init: %d}\n", g.xmin, g.xmin+r.Intn(g.xmax-g.xmin+1))
	fmt.Fprintf(&b, "  - {name: flag, type: bool, init: %v}\n", r.Intn(2) == 0)
	b.WriteString("  - {name: s, type: \"set Agent\", init: \"{}\"}\n")
	if g.has["u"] {
		b.WriteString("  - {name: u, type: \"set Agent\", init: \"{}\"}\n")
	}
	if g.has["ph"] {
		fmt.Fprintf(&b, "  - {name: ph, type: enum, values: [p0, p1, p2], init: %s}\n", g.pick("p0", "p1"))
	}
	if g.has["who"] {
		b.WriteString("  - {name: who, type: Agent, init: 1}\n")
	}
	if g.has["f"] {
		init := "false"
		if !g.sym && g.chance(2) {
			init = q("i == 1")
		}
		fmt.Fprintf(&b, "  - {name: f, type: \"i: Agent -> bool\", init: %s}\n", init)
	}
	if g.has["cnt"] {
		b.WriteString("  - {name: cnt, type: \"Agent -> int\", min: 0, max: 2, init: 0}\n")
	}
	if g.has["st"] {
		b.WriteString("  - {name: st, type: \"Agent -> Phase\", init: idle}\n")
	}
	if g.has["g"] {
		b.WriteString("  - {name: g, type: \"Agent -> Agent -> bool\", init: \"false\"}\n")
	}
	if g.has["own"] {
		b.WriteString("  - {name: own, type: \"i: Agent -> Agent\", init: i}\n")
	}
	if g.has["rec"] {
		b.WriteString("  - {name: rec, type: \"{on: bool, k: int [0..2]}\", init: {on: \"false\"}}\n")
	}
	if g.has["calls"] {
		b.WriteString("  - {name: calls, type: \"i: Agent -> {state: enum [none, held], by: Agent}\", init: {by: i}}\n")
	}
	if g.has["pad"] {
		// 8 or 48 cells of 12 bits: with the rest, more than 128 (or 512)
		// bits of state.
		fmt.Fprintf(&b, "  - {name: pad, type: \"Slot -> int\", min: 0, max: 4095, init: %d}\n", 1000+r.Intn(3000))
	}
	if g.colors {
		b.WriteString("  - {name: cols, type: \"set Color\", init: \"{}\"}\n")
		b.WriteString("  - {name: paint, type: \"Color -> bool\", init: \"false\"}\n")
	}

	if g.levels {
		b.WriteString("  - {name: lv, type: \"set Lvl\", init: \"{}\"}\n")
		b.WriteString("  - {name: lm, type: \"l: Lvl -> int\", min: -2, max: 2, init: l}\n")
	}
	b.WriteString("transitions:\n")
	nt := 3 + r.Intn(4)
	for i := range nt {
		g.transition(&b, i)
	}
	if g.has["pad"] {
		b.WriteString("  - {id: Pad, kind: Environment, assumption: padding changes, guard: " + q("flag") +
			", writes: {\"pad[3]\": " + q("if pad[3] == 7 then 8 else 7") + "}}\n")
	}

	b.WriteString("properties:\n")
	for i := range 2 + r.Intn(2) {
		fmt.Fprintf(&b, "  - {id: Inv%d, principle: P3, class: AASM-HARDENING, expr: %s}\n", i, q(g.boolExpr(2, nil)))
	}
	for i := range 1 + r.Intn(2) {
		fair := ""
		if g.chance(3) {
			fair = ", fairness: none"
		}
		fmt.Fprintf(&b, "  - {id: Live%d, kind: leads-to%s, principle: SL, class: AASM-HARDENING, from: %s, to: %s}\n",
			i, fair, q(g.boolExpr(1, nil)), q(g.boolExpr(1, nil)))
	}
	if len(defines) == 0 {
		defines = nil
	}
	return randModel{seed: seed, src: b.String(), defines: defines, symmetric: g.sym}
}

// q quotes s as a YAML double-quoted string.
func q(s string) string { return strconv.Quote(s) }

// binder is a bound variable in scope: a transition parameter or a
// quantified variable, of domain Agent or Color.
type binder struct{ name, dom string }

func (g *gen) bound(env []binder, dom string) []string {
	var out []string
	for _, b := range env {
		if b.dom == dom {
			out = append(out, b.name)
		}
	}
	return out
}

// agent is a value of Agent: a bound variable, or (unreduced models only)
// a literal or the constant.
func (g *gen) agent(env []binder) (string, bool) {
	as := g.bound(env, "Agent")
	if !g.sym && (len(as) == 0 || g.chance(4)) {
		return g.pick("1", "2", "AGENTS"), true
	}
	if len(as) == 0 {
		return "", false
	}
	return as[g.r.Intn(len(as))], true
}

// level is a value of Lvl: a bound variable or a literal.
func (g *gen) level(env []binder) string {
	ls := g.bound(env, "Lvl")
	if len(ls) == 0 || g.chance(3) {
		return g.pick("-1", "0", "1")
	}
	return ls[g.r.Intn(len(ls))]
}

func (g *gen) color(env []binder) (string, bool) {
	cs := g.bound(env, "Color")
	if !g.sym && (len(cs) == 0 || g.chance(4)) {
		return g.pick("red", "blue", "green"), true
	}
	if len(cs) == 0 {
		return "", false
	}
	return cs[g.r.Intn(len(cs))], true
}

// atom is a bool expression without connectives (a quantifier counts as
// one, its body drawn at depth-1).
func (g *gen) atom(depth int, env []binder) string {
	for {
		switch g.r.Intn(24) {
		case 0:
			return g.pick("flag", "!flag")
		case 22:
			if g.levels {
				return g.level(env) + " in lv"
			}
		case 23:
			if g.levels {
				l := g.level(env)
				if g.chance(3) {
					return "lm[" + l + "] " + g.pick("==", "!=", "<") + " " + l
				}
				return fmt.Sprintf("lm[%s] %s %d", l, g.pick("<", "==", ">="), g.r.Intn(5)-2)
			}
		case 1, 2:
			return fmt.Sprintf("x %s %d", g.pick("<", "<=", "==", "!=", ">", ">="), g.xmin+g.r.Intn(g.xmax-g.xmin+1))
		case 3:
			if g.has["ph"] {
				return "ph " + g.pick("==", "!=") + " " + g.pick("p0", "p1", "p2")
			}
		case 4:
			if a, ok := g.agent(env); ok {
				if g.has["u"] && g.chance(3) {
					return a + " in u"
				}
				return a + " in s"
			}
		case 5:
			return fmt.Sprintf("card(s) %s %d", g.pick("<=", "==", ">="), g.r.Intn(3))
		case 6:
			if g.has["u"] {
				return g.pick("s subseteq u", "u subseteq s", "card(s inter u) == 0", "card(s union u) >= 2", "card(s \\ u) == 1")
			}
			return g.pick("s == {}", "s != {}")
		case 7:
			if a, ok := g.agent(env); ok && g.has["f"] {
				return g.pick("", "!") + "f[" + a + "]"
			}
		case 8:
			if a, ok := g.agent(env); ok && g.has["cnt"] {
				return fmt.Sprintf("cnt[%s] %s %d", a, g.pick("<", "==", ">="), g.r.Intn(3))
			}
		case 9:
			if a, ok := g.agent(env); ok && g.has["st"] {
				return "st[" + a + "] " + g.pick("==", "!=") + " " + g.pick("idle", "busy", "done")
			}
		case 10:
			a, ok1 := g.agent(env)
			b, ok2 := g.agent(env)
			if ok1 && ok2 && g.has["g"] {
				return "g[" + a + "][" + b + "]"
			}
		case 11:
			a, ok1 := g.agent(env)
			b, ok2 := g.agent(env)
			if ok1 && ok2 && g.has["own"] {
				return "own[" + a + "] " + g.pick("==", "!=") + " " + b
			}
		case 12:
			a, ok1 := g.agent(env)
			b, ok2 := g.agent(env)
			if ok1 && ok2 && a != b {
				return a + " " + g.pick("==", "!=") + " " + b
			}
		case 13:
			if g.has["who"] {
				a, _ := g.agent(env)
				return "who " + g.pick("==", "!=") + " " + a
			}
		case 14:
			if g.has["rec"] {
				return g.pick("rec.on", "!rec.on", "rec.k < 2", "rec.k == 0", "rec.k >= x")
			}
		case 15:
			if a, ok := g.agent(env); ok && g.has["calls"] {
				if g.chance(2) {
					return "calls[" + a + "].state == " + g.pick("none", "held")
				}
				if b, ok := g.agent(env); ok {
					return "calls[" + a + "].by " + g.pick("==", "!=") + " " + b
				}
			}
		case 16:
			if g.has["pad"] {
				return "pad[3] " + g.pick("==", "!=") + " 7"
			}
		case 17:
			if c, ok := g.color(env); ok && g.colors {
				return "(" + g.pick("", "!") + "paint[" + c + "] || " + c + " in cols)"
			}
		case 18:
			if g.colors {
				return fmt.Sprintf("card(cols) %s %d", g.pick("<=", ">="), g.r.Intn(3))
			}
		case 19, 20, 21:
			if depth > 0 {
				v := fmt.Sprintf("q%d", len(env))
				dom := "Agent"
				if g.colors && g.chance(3) {
					dom = "Color"
				} else if g.levels && g.chance(3) {
					dom = "Lvl"
				}
				body := g.boolExpr(depth-1, append(env[:len(env):len(env)], binder{v, dom}))
				return fmt.Sprintf("(%s %s in %s: %s)", g.pick("forall", "exists"), v, dom, body)
			}
		}
	}
}

// boolExpr is a bool expression of up to about depth levels of
// connectives and quantifiers.
func (g *gen) boolExpr(depth int, env []binder) string {
	if depth <= 0 || g.chance(3) {
		return g.atom(depth, env)
	}
	a, b := g.boolExpr(depth-1, env), g.boolExpr(depth-1, env)
	switch g.r.Intn(5) {
	case 0:
		return "(" + a + " && " + b + ")"
	case 1:
		return "(" + a + " || " + b + ")"
	case 2:
		return "(" + a + " => " + b + ")"
	case 3:
		return "!(" + a + ")"
	default:
		return "(if " + a + " then " + b + " else " + g.atom(0, env) + ")"
	}
}

// intExpr is an int expression for x, cnt or rec.k: it may leave the
// variable's domain, which disables the transition.
func (g *gen) intExpr(self string, env []binder) string {
	switch g.r.Intn(6) {
	case 0:
		return self + " + 1"
	case 1:
		return self + " - 1"
	case 2:
		return strconv.Itoa(g.r.Intn(2)) // in every such domain
	case 3:
		return fmt.Sprintf("if %s then %s + 1 else %d", g.atom(0, env), self, g.r.Intn(2))
	case 4:
		return "card(s)"
	default:
		return self + " + x"
	}
}

// write draws one write key and value for a transition with parameters
// env; ok is false when the drawn target is absent.
func (g *gen) write(env []binder) (key, val string, ok bool) {
	a, hasA := g.agent(env)
	switch g.r.Intn(16) {
	case 14:
		if g.levels {
			l := g.level(env)
			return "lv", g.pick("lv union {"+l+"}", "lv \\ {"+l+"}", "lv inter {"+l+", 0}"), true
		}
	case 15:
		if g.levels {
			if ls := g.bound(env, "Lvl"); len(ls) > 0 {
				l := ls[0]
				return "lm[" + l + "]", g.pick("lm["+l+"] + 1", l, "0 - lm["+l+"]", "lm["+l+"] - "+l), true
			}
			// A write key's index is a literal or a parameter; "lm[-1]"
			// is refused as not constant (-1 is a negation), so the
			// generator reads that cell but never writes it by name.
			return "lm[1]", g.pick("lm[1] + 1", "lm[-1]", "0 - lm[0]"), true
		}
	case 0:
		return "x", g.intExpr("x", env), true
	case 1:
		return "flag", g.boolExpr(1, env), true
	case 2:
		if hasA {
			return "s", g.pick("s union {"+a+"}", "s \\ {"+a+"}", "s inter {"+a+"}", "{}"), true
		}
		if g.has["u"] {
			return "s", g.pick("{}", "s inter u", "s union u"), true
		}
		return "s", "{}", true
	case 3:
		if g.has["u"] && hasA {
			return "u", g.pick("u union {"+a+"}", "u \\ {"+a+"}", "s"), true
		}
	case 4:
		if g.has["ph"] {
			return "ph", g.pick("p0", "p1", "p2", "if flag then p1 else p2"), true
		}
	case 5:
		if g.has["who"] {
			return "who", a, true
		}
	case 6:
		if g.has["f"] && hasA {
			return "f[" + a + "]", g.pick("!f["+a+"]", "true", g.boolExpr(1, env)), true
		}
	case 7:
		if g.has["cnt"] && hasA {
			return "cnt[" + a + "]", g.intExpr("cnt["+a+"]", env), true
		}
	case 8:
		if g.has["st"] && hasA {
			return "st[" + a + "]", g.pick("idle", "busy", "done", "if st["+a+"] == idle then busy else done"), true
		}
	case 9:
		if b, ok := g.agent(env); ok && g.has["g"] && hasA {
			return "g[" + a + "][" + b + "]", g.pick("true", "!g["+a+"]["+b+"]", g.atom(0, env)), true
		}
	case 10:
		if b, ok := g.agent(env); ok && g.has["own"] && hasA {
			return "own[" + a + "]", b, true
		}
	case 11:
		if g.has["rec"] {
			if g.chance(2) {
				return "rec.on", g.pick("!rec.on", g.atom(0, env)), true
			}
			return "rec.k", g.intExpr("rec.k", env), true
		}
	case 12:
		if g.has["calls"] && hasA {
			if b, ok := g.agent(env); ok && g.chance(2) {
				return "calls[" + a + "].by", b, true
			}
			return "calls[" + a + "].state", g.pick("held", "none", "if calls["+a+"].state == none then held else none"), true
		}
	case 13:
		if c, ok := g.color(env); ok && g.colors {
			if g.chance(2) {
				return "paint[" + c + "]", g.pick("!paint["+c+"]", "true", g.atom(0, env)), true
			}
			return "cols", g.pick("cols union {"+c+"}", "cols \\ {"+c+"}"), true
		}
	}
	return "", "", false
}

// transition writes transition i: its parameters, guard and one to three
// writes to distinct variables or cells.
func (g *gen) transition(b *strings.Builder, i int) {
	var env []binder
	params := ""
	switch g.r.Intn(5) {
	case 1, 2:
		env, params = []binder{{"a", "Agent"}}, "{a: Agent}"
	case 3:
		env, params = []binder{{"a", "Agent"}, {"b", "Agent"}}, "{a: Agent, b: Agent}"
	case 4:
		if g.colors && g.chance(2) {
			env, params = []binder{{"a", "Agent"}, {"c", "Color"}}, "{a: Agent, c: Color}"
		} else if g.levels {
			env, params = []binder{{"l", "Lvl"}}, "{l: Lvl}"
		}
	}
	kind := "kind: Environment, assumption: the environment acts"
	if g.chance(4) {
		kind = "kind: Adversary, adversary: ADV-1"
	}
	fmt.Fprintf(b, "  - {id: T%d, %s", i, kind)
	if params != "" {
		fmt.Fprintf(b, ", params: %s", params)
	}
	if !g.chance(5) {
		fmt.Fprintf(b, ", guard: %s", q(g.boolExpr(2, env)))
	}
	writes := map[string]string{}
	var order []string
	for range 1 + g.r.Intn(3) {
		k, v, ok := g.write(env)
		if !ok || writes[k] != "" || conflicts(order, k) {
			continue
		}
		writes[k] = v
		order = append(order, k)
	}
	if len(order) == 0 {
		writes["flag"], order = "!flag", []string{"flag"}
	}
	var ws []string
	for _, k := range order {
		ws = append(ws, q(k)+": "+q(writes[k]))
	}
	fmt.Fprintf(b, ", writes: {%s}}\n", strings.Join(ws, ", "))
}

// conflicts reports whether key k may name the same cell as a key already
// written (f[a] and f[b] may be one cell when a == b): the generator keeps
// one write per array, field or variable.
func conflicts(keys []string, k string) bool {
	base := func(s string) string {
		if i := strings.IndexByte(s, '['); i >= 0 {
			rest := s[i:]
			if j := strings.IndexByte(rest, '.'); j >= 0 {
				return s[:i] + rest[j:]
			}
			return s[:i]
		}
		return s
	}
	for _, o := range keys {
		if base(o) == base(k) {
			return true
		}
	}
	return false
}
