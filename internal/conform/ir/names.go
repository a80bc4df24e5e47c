package ir

import "strings"

// Names are the identifiers the printers (TLA+, Promela) use for a model's
// variables, transitions and properties. One mapping serves both
// languages, so a variable has the same name in the .tla and the .pml file.
//
// A model name is kept as it is unless the target languages would read it
// as something else: a TLA+ or Promela keyword (CASE, len, skip), a name
// with a reserved prefix (TLA+'s WF_ and SF_ fairness operators, names
// beginning with "_", which Promela and pan.c keep for themselves), a C
// keyword (pan.c stores each Promela variable in a C struct), a TLC
// configuration keyword, or a name the printers define themselves (Init,
// Next, Spec, main, now). Such a name, and any name that already begins
// with the escape prefix "w_", is printed with "w_" in front: "len" →
// "w_len", "WF_wire" → "w_WF_wire", "w_x" → "w_w_x". Escaping every name
// that starts with the prefix keeps the mapping injective: two different
// model names never print as the same identifier.
//
// An array is printed under its own name in TLA+ (one function-valued
// variable); in Promela each cell is a variable of its own, named after the
// array and its indices ("delegation_1_2"), made unique against every
// other printed name. Instances of a transition with parameters are named
// after the transition and their arguments ("A_amplify_2_1_exec"). A
// record's fields are variables of their own: r.state prints as r_state,
// the field state of an array of records calls as the array calls_state
// (cells calls_state_1 in Promela).
type Names struct {
	Vars        []string // indexed like Model.Vars; for a cell, its Promela variable
	Arrays      []string // indexed like Model.Arrays
	Transitions []string // indexed like Model.Transitions
	Properties  []string // indexed like Model.Properties
}

// EscapePrefix is what Ident puts in front of a name it must change.
const EscapePrefix = "w_"

// Ident returns the name under which the printers emit a model identifier.
func Ident(name string) string {
	if reservedIdent[name] || strings.HasPrefix(name, EscapePrefix) || strings.HasPrefix(name, "_") ||
		strings.HasPrefix(name, "WF_") || strings.HasPrefix(name, "SF_") || strings.HasPrefix(name, "np_") {
		return EscapePrefix + name
	}
	return name
}

// PrintNames returns the printed names of m's identifiers.
func (m *Model) PrintNames() Names {
	n := Names{
		Vars:        make([]string, len(m.Vars)),
		Arrays:      make([]string, len(m.Arrays)),
		Transitions: make([]string, len(m.Transitions)),
		Properties:  make([]string, len(m.Properties)),
	}
	used := map[string]bool{}
	for i, v := range m.Vars {
		if v.Index == nil && !strings.Contains(v.Name, ".") {
			n.Vars[i] = Ident(v.Name)
			used[n.Vars[i]] = true
		}
	}
	for i, a := range m.Arrays {
		if a.Record == "" {
			n.Arrays[i] = Ident(a.Name)
			used[n.Arrays[i]] = true
		}
	}
	for _, t := range m.Transitions {
		if len(t.Args) == 0 {
			used[Ident(t.ID)] = true
		}
	}
	for _, p := range m.Properties {
		used[Ident(p.ID)] = true
	}
	unique := func(s string) string {
		for used[s] {
			s += "_"
		}
		used[s] = true
		return s
	}
	// A record's field "r.f" (a scalar, or an array of one field of an
	// array of records) prints as r_f, made unique against every other
	// printed name.
	for i, v := range m.Vars {
		if v.Index == nil && strings.Contains(v.Name, ".") {
			n.Vars[i] = unique(Ident(strings.ReplaceAll(v.Name, ".", "_")))
		}
	}
	for i, a := range m.Arrays {
		if a.Record != "" {
			n.Arrays[i] = unique(Ident(a.Record + "_" + a.Field))
		}
	}
	for i, v := range m.Vars {
		if v.Index != nil {
			a := &m.Arrays[v.Array]
			name := n.Arrays[v.Array]
			for d, x := range v.Index {
				name += "_" + identPart(a.Index[d].Format(x))
			}
			n.Vars[i] = unique(name)
		}
	}
	for i, t := range m.Transitions {
		if len(t.Args) == 0 {
			n.Transitions[i] = Ident(t.ID)
			continue
		}
		name := Ident(t.ID)
		for _, a := range t.Args {
			name += "_" + identPart(a.Type.Format(a.Val))
		}
		n.Transitions[i] = unique(name)
	}
	for i, p := range m.Properties {
		n.Properties[i] = Ident(p.ID)
	}
	return n
}

// identPart makes a value printable inside an identifier: -1 → m1.
func identPart(s string) string { return strings.ReplaceAll(s, "-", "m") }

// reservedIdent are the words Ident escapes: keywords and built-in names
// of TLA+ (with the operators of its Integers module), of TLC's
// configuration files, of Promela, and of C; and the names the TLA+ and
// Promela printers define.
var reservedIdent = func() map[string]bool {
	words := []string{
		// TLA+ keywords, including the proof language's.
		"ACTION", "ASSUME", "ASSUMPTION", "AXIOM", "BOOLEAN", "BY", "CASE", "CHOOSE", "CONSTANT", "CONSTANTS",
		"COROLLARY", "DEF", "DEFINE", "DEFS", "DOMAIN", "ELSE", "ENABLED", "EXCEPT", "EXTENDS", "FALSE", "HAVE",
		"HIDE", "IF", "IN", "INSTANCE", "LAMBDA", "LEMMA", "LET", "LOCAL", "MODULE", "NEW", "OBVIOUS", "OMITTED",
		"ONLY", "OTHER", "PICK", "PROOF", "PROPOSITION", "PROVE", "QED", "RECURSIVE", "STATE", "STRING",
		"SUBSET", "SUFFICES", "TAKE", "TEMPORAL", "THEN", "THEOREM", "TRUE", "UNCHANGED", "UNION", "USE",
		"VARIABLE", "VARIABLES", "WITH", "WITNESS",
		// The standard modules the printer extends, and their usual companions.
		"Int", "Nat", "Integers", "Naturals", "Sequences", "FiniteSets", "TLC",
		// TLC configuration keywords.
		"SPECIFICATION", "INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES", "INIT", "NEXT", "SYMMETRY",
		"VIEW", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "CHECK_DEADLOCK",
		"POSTCONDITION", "ALIAS",
		// What the TLA+ printer defines.
		"Init", "Next", "NextNoAdversary", "Spec", "SpecNoAdversary", "TypeOK", "vars",
		"Fairness", "FairnessNoAdversary", "FairSpec", "FairSpecNoAdversary", "ProgressSpec", "ProgressSpecNoAdversary",
		// Promela keywords and predefined names.
		"active", "assert", "atomic", "bit", "bool", "break", "byte", "c_code", "c_decl", "c_expr", "c_state",
		"c_track", "chan", "d_proctype", "d_step", "do", "else", "empty", "enabled", "eval", "false", "fi",
		"for", "full", "get_priority", "goto", "hidden", "if", "in", "init", "inline", "int", "len", "local",
		"ltl", "mtype", "nempty", "never", "nfull", "notrace", "od", "of", "pc_value", "pid", "printf",
		"printm", "priority", "proctype", "provided", "run", "select", "set_priority", "short", "show", "skip",
		"timeout", "trace", "true", "typedef", "unless", "unsigned", "xr", "xs", "STDIN",
		"always", "eventually", "until", "weakuntil", "stronguntil", "implies", "equivalent", "release",
		// C keywords and the names pan.c uses for the state.
		"auto", "case", "char", "const", "continue", "default", "double", "enum", "extern", "float", "long",
		"register", "restrict", "return", "signed", "sizeof", "static", "struct", "switch", "union", "void",
		"volatile", "while", "now", "main", "State", "Trans",
		// What the Promela printer defines.
		"check_invariants",
	}
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}()
