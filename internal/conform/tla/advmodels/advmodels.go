// Package advmodels generates IR models written to break the TLA+ and
// Promela printers: every name a word that TLA+, TLC, Promela, C, pan.c, the
// C library or the printers themselves reserve or define (ASSUME, WF_x,
// Cardinality, len, _pid, np_, asm, linux, errno, SYNC, uchar, Pmain,
// Symmetry, TypeOK, tmp_x, i1...), names that collide once escaped (len
// and w_len, r.len and r_len), names differing only in case, swaps and
// three-cycles of writes, negative domains, sets, records, arrays,
// nested quantifiers, constants set with -D, symmetric domains and
// leads-to properties, and seeded random models.
//
// The tests of both printers load every model and require that the
// TLA+ module parses and declares every name it uses and that SPIN
// compiles the Promela and agrees with warden's checker. The models are
// YAML text, so a failure can be reproduced with
// `warden conform emit --model FILE`.
package advmodels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Case is one generated model.
type Case struct {
	Name    string         // the model's name (its model: field)
	YAML    string         // the model file
	Defines map[string]int // -D overrides to load it with, or nil
}

// Reserved are the words the models use as names, grouped by who
// reserves them. None is a keyword of the IR's expressions.
var Reserved = map[string][]string{
	"TLA+": {"ACTION", "ASSUME", "ASSUMPTION", "AXIOM", "BOOLEAN", "BY", "CASE", "CHOOSE", "CONSTANT", "CONSTANTS",
		"COROLLARY", "DEF", "DEFINE", "DEFS", "DOMAIN", "ELSE", "ENABLED", "EXCEPT", "EXTENDS", "FALSE", "HAVE",
		"HIDE", "IF", "IN", "INSTANCE", "LAMBDA", "LEMMA", "LET", "LOCAL", "MODULE", "NEW", "OBVIOUS", "OMITTED",
		"ONLY", "OTHER", "PICK", "PROOF", "PROPOSITION", "PROVE", "QED", "RECURSIVE", "STATE", "STRING",
		"SUBSET", "SUFFICES", "TAKE", "TEMPORAL", "THEN", "THEOREM", "TRUE", "UNCHANGED", "UNION", "USE",
		"VARIABLE", "VARIABLES", "WITH", "WITNESS", "WF_", "SF_", "WF_x", "SF_x", "WF_vars", "SF_next"},
	// Standard modules: what the printed module extends, and what TLC's
	// configurations or a user's module may bring in.
	"TLA+ modules": {"Int", "Nat", "Real", "Integers", "Naturals", "Reals", "Sequences", "FiniteSets", "TLC", "Bags",
		"Cardinality", "IsFiniteSet", "Permutations", "Seq", "Len", "Head", "Tail", "Append", "SubSeq", "SelectSeq",
		"Print", "PrintT", "Assert", "ToString", "SortSeq", "RandomElement", "Any", "TLCGet", "TLCSet", "JavaTime"},
	"TLC": {"SPECIFICATION", "INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES", "INIT", "NEXT", "SYMMETRY",
		"VIEW", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT", "CHECK_DEADLOCK", "POSTCONDITION", "ALIAS"},
	"Promela": {"active", "assert", "atomic", "bit", "bool", "break", "byte", "c_code", "c_decl", "c_expr",
		"c_state", "c_track", "chan", "D_proctype", "d_step", "do", "empty", "enabled", "eval", "fi", "for",
		"full", "get_priority", "goto", "hidden", "init", "inline", "int", "len", "local", "ltl", "mtype",
		"nempty", "never", "nfull", "notrace", "od", "of", "pc_value", "pid", "printf", "printm", "priority",
		"proctype", "provided", "return", "run", "select", "set_priority", "short", "show", "skip", "timeout",
		"trace", "typedef", "unless", "unsigned", "xr", "xs", "STDIN", "np_", "np_x", "_pid", "_nr_pr", "_last",
		"_priority", "_", "accept", "progress", "end", "always", "eventually", "until", "stronguntil", "weakuntil",
		"implies", "equivalent", "release"},
	"C": {"auto", "case", "char", "const", "continue", "default", "double", "enum", "extern", "float", "long",
		"register", "restrict", "signed", "sizeof", "static", "struct", "switch", "union", "void", "volatile",
		"while", "asm", "typeof", "alignas", "alignof", "constexpr", "nullptr", "static_assert", "thread_local",
		"_Bool"},
	// pan.c's own names and macros, the C library's macros and gcc's
	// predefined ones (a Promela variable is a member of pan.c's State).
	"pan.c": {"now", "depth", "trpt", "State", "Trans", "main", "Pmain", "Pclaim", "wasnew", "Air0", "maxseq0",
		"uchar", "ushort", "uint", "ulong", "SYNC", "ASYNC", "BFS", "SAFETY", "NOREDUCE", "VECTORSZ", "NCORE",
		"MEMLIM", "HASH_NR", "linux", "unix", "errno", "stdin", "stdout", "NULL", "EOF", "BUFSIZ", "SIGINT",
		"st_atime", "sa_handler", "si_pid", "CLOCKS_PER_SEC", "P0", "Q0", "SpinVersion", "PanSource"},
	// What the printers make up: definitions, constants, binders,
	// macros and scratch variables.
	"printers": {"Init", "Next", "NextNoAdversary", "Spec", "SpecNoAdversary", "TypeOK", "vars", "Fairness",
		"FairSpec", "ProgressSpec", "Symmetry", "Perms_Agent", "Agent_1", "p", "x", "y", "p1", "i1", "i2",
		"check_invariants", "tmp_a", "inv_P", "CHECK_P", "act", "took", "en_1", "live_L", "LIVE_L", "M_x", "w_",
		"w_x", "w_len", "w_w_len"},
}

// irKeywords cannot name anything an expression reads.
var irKeywords = []string{"true", "false", "if", "then", "else", "in", "subseteq", "union", "inter", "forall",
	"exists", "card"}

// Words returns every word of Reserved once, in a fixed order, without
// the IR's own keywords.
func Words() []string {
	groups := make([]string, 0, len(Reserved))
	for g := range Reserved {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var out []string
	seen := map[string]bool{}
	for _, g := range groups {
		for _, w := range Reserved[g] {
			if !seen[w] && !slices.Contains(irKeywords, w) {
				seen[w] = true
				out = append(out, w)
			}
		}
	}
	return out
}

// wordsPerModel is how many names one word model takes.
const wordsPerModel = 15

// WordModels puts every reserved word in every role (variable, array,
// record, record field, enum value, transition, parameter, quantifier
// binder, property): the word list is cut into models of fifteen names,
// once per rotation, so that over the rotations each word takes each
// role. rotations < 1 means all fifteen.
func WordModels(rotations int) []Case {
	words := Words()
	if rotations < 1 || rotations > wordsPerModel {
		rotations = wordsPerModel
	}
	var out []Case
	for r := range rotations {
		rot := append(slices.Clone(words[r:]), words[:r]...)
		for k := 0; k < len(rot); k += wordsPerModel {
			w := make([]string, wordsPerModel)
			for i := range w {
				w[i] = rot[(k+i)%len(rot)]
			}
			out = append(out, wordModel(fmt.Sprintf("words-%02d-%02d", r, k/wordsPerModel), w))
		}
	}
	return out
}

// wordModel uses w[0..14] as names: w0 bool, w1 int in -2..2, w2 an enum
// of the domain w3 (values w6 w7 w8), w4 a set of w3, w5 a record with
// fields w6 and w7, w9 an array over Ix (-1..1), transitions w10
// (parameter w13) and w11 (whose writes swap w0 and w5.w6), properties
// w12 (binding w13) and w14.
func wordModel(name string, w []string) Case {
	if slices.Contains(typeWords, w[3]) { // a domain named bool would not be read as one
		w[0], w[3] = w[3], w[0]
	}
	// Every name is quoted where YAML reads it (NULL, TRUE and ~ are not
	// strings otherwise); expressions are quoted strings already.
	q := func(parts ...string) string { return strconv.Quote(strings.Join(parts, ".")) }
	y := fmt.Sprintf(`ir_version: 1
model: %[16]s
protocol: MCP
domains:
  - {name: %[4]s, type: enum, values: [%[7]s, %[8]s, %[9]s]}
  - {name: Ix, type: int, min: -1, max: 1}
variables:
  - {name: %[1]s, type: bool}
  - {name: %[2]s, type: int, min: -2, max: 2, init: -1}
  - {name: %[3]s, type: %[4]s, init: %[8]s}
  - {name: %[5]s, type: "set %[21]s", init: "{}"}
  - {name: %[6]s, type: "{%[22]s: bool, %[23]s: int [-1..1]}"}
  - {name: %[10]s, type: "Ix -> bool", init: "false"}
transitions:
  - id: %[11]s
    kind: Environment
    assumption: a cell is set
    params: {%[14]s: Ix}
    guard: "!%[24]s[%[25]s] && %[26]s < 2"
    writes: {"%[24]s[%[25]s]": "true", %[2]s: "%[26]s + 1", %[5]s: "%[27]s union {%[28]s}"}
  - id: %[12]s
    kind: Environment
    assumption: values rotate
    guard: "%[26]s > -2"
    writes:
      %[1]s: "%[29]s.%[22]s"
      %[17]s: "!%[30]s"
      %[2]s: "%[26]s - 1"
      %[3]s: "if %[28]s == %[22]s then %[23]s else if %[28]s == %[23]s then %[31]s else %[22]s"
      %[18]s: "if %[29]s.%[23]s < 1 then %[29]s.%[23]s + 1 else -1"
properties:
  - {id: %[13]s, principle: P3, class: AASM-HARDENING, expr: "forall %[25]s in Ix: %[24]s[%[25]s] => %[26]s >= -1 || %[29]s.%[23]s != 0"}
  - {id: %[15]s, principle: P3, class: AASM-HARDENING, expr: "card(%[27]s) <= 2 || %[30]s"}
`, q(w[0]), q(w[1]), q(w[2]), q(w[3]), q(w[4]), q(w[5]), q(w[6]), q(w[7]), q(w[8]), q(w[9]), q(w[10]), q(w[11]),
		q(w[12]), q(w[13]), q(w[14]), name, q(w[5], w[6]), q(w[5], w[7]), "", "",
		w[3], w[6], w[7], w[9], w[13], w[1], w[4], w[2], w[5], w[0], w[8])
	return Case{Name: name, YAML: y}
}

// typeWords are the IR's type names, which a domain cannot take.
var typeWords = []string{"bool", "int", "enum", "set"}

// Collisions are models whose names collide once escaped or with the
// names the printers make up, and whose names differ only in case.
func Collisions() []Case {
	return []Case{{Name: "escaped", YAML: `ir_version: 1
model: escaped
protocol: MCP
domains:
  - {name: K, type: enum, values: [skip, x, WF_]}
variables:
  - {name: len, type: bool}
  - {name: w_len, type: bool}
  - {name: w_w_len, type: bool}
  - {name: Len, type: bool}
  - {name: LEN, type: bool}
  - {name: w, type: "{len: bool, w_len: bool}"}
  - {name: a, type: "K -> bool", init: "false"}
  - {name: a_len, type: bool}
  - {name: a_WF_, type: bool}
  - {name: WF, type: "K -> bool", init: "false"}
  - {name: SF_x, type: bool}
  - {name: np, type: "K -> bool", init: "false"}
transitions:
  - {id: T, kind: Environment, assumption: a, params: {k: K}, guard: "!a[k]", writes: {"a[k]": "true", "WF[k]": "!WF[k]", "np[k]": "a[k]"}}
  - {id: T_x, kind: Environment, assumption: a, writes: {len: "w_len", w_len: "w_w_len", w_w_len: "len"}}
  - {id: WF_next, kind: Environment, assumption: a, writes: {Len: "!LEN", LEN: "Len", w.len: "w.w_len", w.w_len: "!w.len"}}
  - {id: SF, kind: Environment, assumption: a, params: {k: K}, guard: "a[k]", writes: {a_len: "!a_len", a_WF_: "a_len", SF_x: "np[k]"}}
  - {id: WF, kind: Environment, assumption: a, params: {k: K}, guard: "WF[k]", writes: {"WF[k]": "false"}}
properties:
  - {id: T_len, principle: P3, class: AASM-HARDENING, expr: "!(len && w_len && w_w_len && Len && LEN)"}
  - {id: WF_p, principle: P3, class: AASM-HARDENING, expr: "!(w.len && w.w_len) || a_len || a_WF_ || SF_x"}
  - {id: SF_x_, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "a[x]", to: "a[WF_]"}
`}, {Name: "printer-names", YAML: `ir_version: 1
model: printer-names
protocol: A2A
constants:
  - {name: AGENTS, value: 2}
domains:
  - {name: Agent, type: int, min: 1, max: AGENTS, symmetric: true}
  - {name: Role, type: enum, values: [rx, ry, rp]}
  - {name: Peer, type: enum, values: [Agent_2, Perms_Peer, Symmetry_1], symmetric: true}
variables:
  - {name: Symmetry, type: "Agent -> bool", init: "false"}
  - {name: Agent_1, type: bool}
  - {name: Agent_, type: bool}
  - {name: Role_x, type: bool}
  - {name: Perms_Agent, type: bool}
  - {name: p, type: "Agent -> Role", init: rx}
  - {name: peer, type: "Agent -> Peer -> bool", init: "false"}
  - {name: x, type: "set Agent", init: "{}"}
  - {name: y, type: int, min: 0, max: 2}
  - {name: p1, type: bool}
  - {name: p2, type: bool}
  - {name: i1, type: bool}
  - {name: i2, type: bool}
  - {name: tmp_a, type: bool}
  - {name: a, type: bool}
  - {name: b, type: bool}
  - {name: inv_Q, type: bool}
  - {name: CHECK_Q, type: bool}
  - {name: act, type: bool}
  - {name: took, type: bool}
  - {name: en_1, type: bool}
  - {name: live_L, type: bool}
  - {name: LIVE_L, type: bool}
  - {name: Cardinality, type: bool}
  - {name: IsFiniteSet, type: bool}
  - {name: Pmain, type: bool}
  - {name: Plive_L, type: bool}
  - {name: vars_, type: bool}
  - {name: M_x, type: bool}
  - {name: wait, type: bool}
  - {name: meet_1, type: bool}
  - {name: accept_all, type: bool}
transitions:
  - {id: Go, kind: Environment, assumption: a, params: {g: Agent}, guard: "!Symmetry[g]", writes: {"Symmetry[g]": "true", x: "x union {g}", "p[g]": "if y == 0 then rx else rp"}}
  - {id: Meet, kind: Environment, assumption: a, params: {g: Agent, h: Peer}, guard: "Symmetry[g]", writes: {"peer[g][h]": "!peer[g][h]"}}
  - {id: Swap, kind: Environment, assumption: a, writes: {a: b, b: a, tmp_a: "!tmp_a"}}
  - {id: Flip, kind: Environment, assumption: a, guard: "y < 2", writes: {y: "y + 1", Agent_1: "!Agent_1", Agent_: Agent_1, Role_x: "!Role_x", Perms_Agent: Role_x, p1: "!p2", p2: p1, i1: "!i2", i2: i1}}
  - {id: Mark, kind: Environment, assumption: a, writes: {inv_Q: "!inv_Q", CHECK_Q: "inv_Q", act: "!act", took: act, en_1: "!en_1", live_L: en_1, LIVE_L: "!LIVE_L", Cardinality: "!Cardinality", IsFiniteSet: Cardinality, Pmain: "!Pmain", Plive_L: Pmain, vars_: "!vars_", M_x: vars_, wait: "!wait", meet_1: wait, accept_all: meet_1}}
  - {id: Adv, kind: Adversary, adversary: ADV-1, params: {g: Agent}, guard: "p[g] == ry", writes: {"p[g]": rp}}
properties:
  - {id: Q, principle: P3, class: AASM-HARDENING, expr: "card(x) <= 1 || (exists k in Agent: p[k] == ry) || (forall g in Agent, h in Peer: !peer[g][h])"}
  - {id: L, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "exists g in Agent: Symmetry[g]", to: "card(x) == AGENTS"}
  - {id: Ok, principle: P3, class: AASM-HARDENING, expr: "!(a && b && tmp_a && inv_Q && CHECK_Q && act && took && en_1 && live_L && LIVE_L && Cardinality && IsFiniteSet && Pmain && Plive_L && vars_ && M_x && Agent_ && Perms_Agent && p1 && p2 && i1 && i2 && wait && meet_1 && accept_all)"}
`}, {Name: "comments", YAML: `ir_version: 1
model: comments
protocol: "MCP\nVARIABLES injected */ (* \\* -----"
variables:
  - {name: x, type: bool, doc: "a doc */ that\nspans lines (* and ends a comment *)"}
transitions:
  - id: T
    kind: Environment
    assumption: "*/ x = 1 /*"
    trigger: "a trigger\n==== *) */"
    source_refs: ["MCP 1.2\nNext == FALSE", "*/ #define x 1"]
    writes: {x: "!x"}
properties:
  - {id: P, principle: P3, class: AASM-HARDENING, expr: "x || !x", source_refs: ["A2A\n====", "(* open"]}
`}, {Name: "bound-names", YAML: `ir_version: 1
model: bound-names
protocol: MCP
domains:
  - {name: D, type: int, min: -2, max: 1}
variables:
  - {name: s, type: "D -> D -> bool", init: "false"}
  - {name: t, type: "set D", init: "{-2, 1}"}
transitions:
  - {id: Put, kind: Environment, assumption: a, params: {i: D, j: D}, guard: "!s[i][j]", writes: {"s[i][j]": "true", t: "t union {i}"}}
  - {id: Cut, kind: Environment, assumption: a, params: {i: D}, guard: "i in t", writes: {t: "t \\ {i}"}}
properties:
  - {id: Put_0, principle: P3, class: AASM-HARDENING, expr: "forall Put in D: exists Cut in D: s[Put][Cut] => Cut in t || Put == -2"}
  - {id: i1, principle: P3, class: AASM-HARDENING, expr: "forall Put_0 in D, i1 in D: s[Put_0][i1] => card(t) >= 1"}
  - {id: Cardinality, principle: P3, class: AASM-HARDENING, expr: "forall TypeOK in D: forall vars in D: TypeOK == vars || !s[TypeOK][vars] || card(t) != 4"}
`}}
}

// Semantics are models whose meaning a printer can get wrong: writes that
// read each other (a swap, a three-cycle), negative domains and set
// elements, nested quantifiers, records, constants set with -D, leads-to
// properties with and without fairness, an enum too wide for a byte, and
// names longer than SPIN takes.
func Semantics() []Case {
	cycle := `ir_version: 1
model: cycles
protocol: MCP
constants:
  - {name: LO, value: -3}
  - {name: HI, value: 1}
domains:
  - {name: N, type: int, min: LO, max: HI}
variables:
  - {name: a, type: int, min: LO, max: HI, init: LO}
  - {name: b, type: int, min: LO, max: HI, init: -1}
  - {name: c, type: int, min: LO, max: HI, init: HI}
  - {name: s, type: "set N", init: "{LO}"}
  - {name: m, type: "N -> N", init: "LO"}
  - {name: r, type: "{lo: int [-2..0], on: bool}", init: {lo: "-2"}}
transitions:
  - {id: Rot, kind: Environment, assumption: three values rotate, writes: {a: b, b: c, c: a}}
  - {id: Swap, kind: Environment, assumption: two values swap, guard: "a != b", writes: {a: b, b: a}}
  - {id: Trade, kind: Environment, assumption: two cells swap, guard: "m[0] != m[1]", writes: {"m[0]": "m[1]", "m[1]": "m[0]"}}
  - {id: Neg, kind: Environment, assumption: a value is negated, guard: "c <= 0", writes: {c: "-c", s: "s union {a}", r.on: "!r.on"}}
  - {id: Down, kind: Environment, assumption: a counter falls, params: {n: N}, guard: "n in s && m[n] > LO", writes: {"m[n]": "m[n] - 1", s: "s \\ {b}"}}
  - {id: Lo, kind: Environment, assumption: the record moves, guard: "r.on", writes: {r.lo: "r.lo + 1", r.on: "r.lo > -2"}}
properties:
  - {id: Sum, principle: P3, class: AASM-HARDENING, expr: "a + b + c <= HI + HI + HI"}
  - {id: NoZero, principle: P3, class: AASM-HARDENING, expr: "!(a == 0 && b == 0)"}
  - {id: Nested, principle: P3, class: AASM-HARDENING, expr: "forall x in N: x in s => exists y in N: m[y] <= x || y - x == -1 - 0"}
  - {id: InSet, principle: P3, class: AASM-HARDENING, expr: "(c - 1) in s || card(s) != 2 || r.lo == -1"}
  - {id: RecLow, principle: P3, class: AASM-HARDENING, expr: "r.lo < 0 || !r.on"}
  - {id: EventuallyPos, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "c < 0", to: "c > 0"}
  - {id: EventuallyPosUnfair, kind: leads-to, fairness: none, principle: SL, class: AASM-HARDENING, from: "c < 0", to: "c >= 0"}
`
	var wide []string
	for i := range 300 {
		wide = append(wide, fmt.Sprintf("v%d", i))
	}
	// An enum of 300 values does not fit a byte.
	wideEnum := fmt.Sprintf(`ir_version: 1
model: wide-enum
protocol: MCP
variables:
  - {name: e, type: enum, values: [%s], init: v0}
transitions:
  - {id: T, kind: Environment, assumption: a, guard: "e == v0", writes: {e: v299}}
  - {id: U, kind: Environment, assumption: a, guard: "e == v299", writes: {e: v256}}
properties:
  - {id: Never299, principle: P3, class: AASM-HARDENING, expr: "e != v299"}
  - {id: Never43, principle: P3, class: AASM-HARDENING, expr: "e != v43"}
`, strings.Join(wide, ", "))
	// Names of 600 characters (SPIN aborts on about 520), and a record
	// and a field of 300 each, whose cells are longer still.
	long := func(c string) string { return strings.Repeat(c, 600) }
	half := func(c string) string { return strings.Repeat(c, 300) }
	longNames := fmt.Sprintf(`ir_version: 1
model: long-names
protocol: MCP
variables:
  - {name: %[1]s, type: bool}
  - {name: %[2]s, type: enum, values: [%[3]s, b], init: b}
  - {name: %[4]s, type: "{%[5]s: bool, f: bool}"}
transitions:
  - {id: %[6]s, kind: Environment, assumption: a, writes: {%[1]s: "%[4]s.%[5]s", "%[4]s.%[5]s": "!%[1]s"}}
  - {id: T, kind: Environment, assumption: a, guard: "%[2]s == b", writes: {%[2]s: %[3]s}}
properties:
  - {id: %[7]s, principle: P3, class: AASM-HARDENING, expr: "!(%[1]s && %[2]s == %[3]s)"}
  - {id: %[8]s, kind: leads-to, principle: SL, class: AASM-HARDENING, from: "%[1]s", to: "!%[1]s"}
`, long("a"), long("b"), long("c"), half("d"), half("e"), long("T"), long("P"), long("L"))
	return []Case{
		{Name: "long-names", YAML: longNames},
		{Name: "wide-enum", YAML: wideEnum},
		{Name: "cycles", YAML: cycle},
		{Name: "cycles", YAML: cycle, Defines: map[string]int{"LO": -2, "HI": 2}},
	}
}

// Random returns n seeded random models: a few booleans, integers over
// domains that reach below zero, an enum, a set, an array and a record,
// named with reserved words; random guards and writes (which may swap or
// rotate values); two random invariants and, in every other model, a
// leads-to property.
func Random(seed uint64, n int) []Case {
	out := make([]Case, n)
	for i := range out {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		name := fmt.Sprintf("random-%d-%02d", seed, i)
		out[i] = Case{Name: name, YAML: (&randomModel{r: r}).yaml(name, i%2 == 1)}
	}
	return out
}

type randomModel struct {
	r     *rand.Rand
	names []string
	bools []string // boolean variables and record fields (r.f), and array cells a[v]
	ints  []string // integer variables
	lo    []int    // [ints]: domain bounds
	hi    []int
	enum  string
	vals  []string
	set   string
	arr   string
}

func (g *randomModel) name() string {
	w := g.names[0]
	g.names = g.names[1:]
	return w
}

func (g *randomModel) yaml(model string, leadsTo bool) string {
	g.names = Words()
	g.r.Shuffle(len(g.names), func(i, j int) { g.names[i], g.names[j] = g.names[j], g.names[i] })
	var b strings.Builder
	fmt.Fprintf(&b, "ir_version: 1\nmodel: %s\nprotocol: MCP\n", model)
	dom := g.name()
	g.vals = []string{g.name(), g.name(), g.name()}
	lo := -1 - g.r.IntN(2)
	fmt.Fprintf(&b, "domains:\n  - {name: %q, type: enum, values: [%s]}\n  - {name: Ix, type: int, min: %d, max: %d}\n",
		dom, strings.Join(quoted(g.vals), ", "), lo, lo+2)
	b.WriteString("variables:\n")
	for range 2 + g.r.IntN(2) {
		v := g.name()
		g.bools = append(g.bools, v)
		fmt.Fprintf(&b, "  - {name: %q, type: bool, init: %v}\n", v, g.r.IntN(2) == 1)
	}
	for range 2 {
		v := g.name()
		l := -g.r.IntN(3)
		h := l + 1 + g.r.IntN(3)
		g.ints, g.lo, g.hi = append(g.ints, v), append(g.lo, l), append(g.hi, h)
		fmt.Fprintf(&b, "  - {name: %q, type: int, min: %d, max: %d, init: %d}\n", v, l, h, l+g.r.IntN(h-l+1))
	}
	g.enum = g.name()
	fmt.Fprintf(&b, "  - {name: %q, type: %q, init: %q}\n", g.enum, dom, g.vals[g.r.IntN(3)])
	g.set = g.name()
	fmt.Fprintf(&b, "  - {name: %q, type: \"set Ix\", init: \"{%d}\"}\n", g.set, lo+g.r.IntN(3))
	g.arr = g.name()
	fmt.Fprintf(&b, "  - {name: %q, type: \"Ix -> bool\", init: \"false\"}\n", g.arr)
	rec, f1, f2 := g.name(), g.name(), g.name()
	fmt.Fprintf(&b, "  - {name: %q, type: \"{%s: bool, %s: bool}\"}\n", rec, f1, f2)
	g.bools = append(g.bools, rec+"."+f1, rec+"."+f2)
	b.WriteString("transitions:\n")
	for range 3 + g.r.IntN(3) {
		fmt.Fprintf(&b, "  - id: %q\n    kind: Environment\n    assumption: random\n", g.name())
		param := ""
		if g.r.IntN(3) == 0 {
			param = g.name()
			fmt.Fprintf(&b, "    params: {%q: Ix}\n", param)
		}
		if g.r.IntN(4) != 0 {
			fmt.Fprintf(&b, "    guard: %q\n", g.boolExpr(2, param))
		}
		b.WriteString("    writes:\n")
		targets := g.targets(param)
		for _, t := range targets[:1+g.r.IntN(3)] {
			fmt.Fprintf(&b, "      %q: %q\n", t, g.value(t, param))
		}
	}
	b.WriteString("properties:\n")
	for range 2 {
		fmt.Fprintf(&b, "  - {id: %q, principle: P3, class: AASM-HARDENING, expr: %q}\n", g.name(), g.boolExpr(3, ""))
	}
	if leadsTo {
		fmt.Fprintf(&b, "  - {id: %q, kind: leads-to, principle: SL, class: AASM-HARDENING, from: %q, to: %q}\n",
			g.name(), g.boolExpr(1, ""), g.boolExpr(1, ""))
	}
	return b.String()
}

// targets lists the variables a transition may write, shuffled.
func (g *randomModel) targets(param string) []string {
	ts := append(slices.Clone(g.bools), g.ints...)
	ts = append(ts, g.enum, g.set)
	if param != "" {
		ts = append(ts, g.arr+"["+param+"]")
	} else {
		ts = append(ts, g.arr+"[0]")
	}
	g.r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts
}

// value is a random expression of t's type.
func (g *randomModel) value(t, param string) string {
	switch {
	case t == g.enum:
		return fmt.Sprintf("if %s then %s else %s", g.boolExpr(1, param), g.vals[g.r.IntN(3)], g.enum)
	case t == g.set:
		op := []string{"union", "\\"}[g.r.IntN(2)]
		return fmt.Sprintf("%s %s {%s}", g.set, op, g.ixExpr(param))
	case slices.Contains(g.ints, t):
		return g.intExpr(1, param)
	}
	return g.boolExpr(1, param)
}

// ixExpr is an element of Ix: a constant, or the parameter.
func (g *randomModel) ixExpr(param string) string {
	if param != "" && g.r.IntN(2) == 0 {
		return param
	}
	return []string{"-1", "0"}[g.r.IntN(2)]
}

func (g *randomModel) intExpr(depth int, bound string) string {
	i := g.r.IntN(len(g.ints))
	switch k := g.r.IntN(5); {
	case depth == 0 || k == 0:
		return g.ints[i]
	case k == 1:
		return fmt.Sprintf("%s + %d", g.ints[i], 1+g.r.IntN(2))
	case k == 2:
		return fmt.Sprintf("%s - %s", g.ints[i], g.ints[1-i])
	case k == 3:
		return fmt.Sprintf("(if %s then %s else %d)", g.boolExpr(depth-1, bound), g.ints[1-i], g.lo[i])
	}
	return fmt.Sprintf("card(%s) - 1", g.set)
}

func (g *randomModel) boolExpr(depth int, bound string) string {
	leaf := func() string {
		switch g.r.IntN(5) {
		case 0:
			return g.bools[g.r.IntN(len(g.bools))]
		case 1:
			return fmt.Sprintf("%s <= %s", g.intExpr(1, bound), g.intExpr(0, bound))
		case 2:
			return fmt.Sprintf("%s != %s", g.enum, g.vals[g.r.IntN(3)])
		case 3:
			return fmt.Sprintf("%s in %s", g.ixExpr(bound), g.set)
		}
		return fmt.Sprintf("%s[%s]", g.arr, g.ixExpr(bound))
	}
	if depth == 0 {
		return leaf()
	}
	switch g.r.IntN(6) {
	case 0:
		return "!(" + g.boolExpr(depth-1, bound) + ")"
	case 1:
		return "(" + g.boolExpr(depth-1, bound) + ") && (" + g.boolExpr(depth-1, bound) + ")"
	case 2:
		return "(" + g.boolExpr(depth-1, bound) + ") || (" + g.boolExpr(depth-1, bound) + ")"
	case 3:
		return "(" + g.boolExpr(depth-1, bound) + ") => (" + g.boolExpr(depth-1, bound) + ")"
	case 4:
		if bound == "" {
			q := []string{"forall", "exists"}[g.r.IntN(2)]
			x := g.name()
			return fmt.Sprintf("(%s %s in Ix: %s)", q, x, g.boolExpr(depth-1, x))
		}
	}
	return leaf()
}

// All is every generated model: each word in each role (rotations of the
// word list), the collisions, the semantic cases and n random models.
func All(rotations, random int) []Case {
	out := WordModels(rotations)
	out = append(out, NameModels(60)...)
	out = append(out, Collisions()...)
	out = append(out, Semantics()...)
	return append(out, Random(1, random)...)
}

func quoted(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = strconv.Quote(w)
	}
	return out
}

// NameModels put size reserved words at once in each place where Promela
// prints a name (a variable and its scratch copy, a record field, an enum
// value's constant, an array cell): every word is a boolean variable,
// which one transition rotates (the writes read each other, so every
// value goes through a scratch variable), a field of the record r, and
// the next model's words are the values of an enum domain that indexes
// the array cells and types the variable e.
func NameModels(size int) []Case {
	words := Words()
	var out []Case
	for k := 0; k < len(words); k += size {
		vars := words[k:min(k+size, len(words))]
		var vals []string
		for _, w := range words[(k+size)%len(words):] {
			if len(vals) < 8 && !slices.Contains(vars, w) && w != "r" && w != "e" && w != "a" {
				vals = append(vals, w)
			}
		}
		name := fmt.Sprintf("names-%02d", k/size)
		var b strings.Builder
		fmt.Fprintf(&b, "ir_version: 1\nmodel: %s\nprotocol: MCP\ndomains:\n  - {name: D, type: enum, values: [%s]}\nvariables:\n",
			name, strings.Join(quoted(vals), ", "))
		for i, v := range vars {
			fmt.Fprintf(&b, "  - {name: %q, type: bool, init: %v}\n", v, i == 0)
		}
		fields := make([]string, len(vars))
		for i, v := range vars {
			fields[i] = v + ": bool"
		}
		fmt.Fprintf(&b, "  - {name: r, type: %q}\n  - {name: e, type: D}\n  - {name: a, type: \"D -> bool\", init: \"false\"}\n",
			"{"+strings.Join(fields, ", ")+"}")
		b.WriteString("transitions:\n  - id: Rotate\n    kind: Environment\n    assumption: the flags rotate\n    writes:\n")
		for i, v := range vars {
			fmt.Fprintf(&b, "      %q: %q\n", v, vars[(i+1)%len(vars)])
		}
		b.WriteString("  - id: Fields\n    kind: Environment\n    assumption: the fields follow\n    writes:\n")
		for _, v := range vars {
			fmt.Fprintf(&b, "      %q: %q\n", "r."+v, "!r."+v)
		}
		fmt.Fprintf(&b, "  - {id: Next_value, kind: Environment, assumption: e moves, guard: %q, writes: {e: %q}}\n",
			"e == "+vals[0], vals[1])
		fmt.Fprintf(&b, "  - {id: Mark, kind: Environment, assumption: a cell is set, params: {d: D}, guard: %q, writes: {\"a[d]\": \"true\"}}\n",
			"e != d && "+vars[len(vars)-1])
		fmt.Fprintf(&b, "properties:\n  - {id: Apart, principle: P3, class: AASM-HARDENING, expr: %q}\n",
			fmt.Sprintf("!(%s && a[%s] && r.%s)", vars[1], vals[0], vars[0]))
		out = append(out, Case{Name: name, YAML: b.String()})
	}
	return out
}
