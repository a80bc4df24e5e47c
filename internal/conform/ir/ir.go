// Package ir is AgentConform's protocol intermediate representation: a
// finite-domain transition system written in YAML, in which every variable,
// transition and property traces to a normative clause, an environment
// assumption, an attacker capability or an AASM principle.
//
// A model is parsed with positions (Parse), then checked (Lint). Expressions
// are a typed AST (Expr), built once at parse time: the Go checker
// (package check), the Promela printer and the TLA+ printer all read the
// same tree, and no string is evaluated at run time.
//
//	YAML ──Parse──► *Model (AST + positions) ──Lint──► Diagnostics
//	                   │
//	                   ├──► check.Compile ──► BFS, ITF counterexamples
//	                   ├──► promela.Emit
//	                   └──► tla.Emit
//
// A Model is immutable after Parse and safe to share between goroutines.
// Guarded returns the variant of a model in which the protocol runs behind
// the warden gateway: each transition's `warden:` block adds a guard and
// writes that stand for what the gateway enforces.
package ir

import "fmt"

// Version is the version of the IR format this package reads; models say
// `ir_version: 1`. schema.json describes it.
const Version = 1

// Kind separates what the specification licenses from what the world and
// the attacker do (AgentRFC §2.4, §5.2).
type Kind string

const (
	Protocol    Kind = "Protocol"    // licensed by the specification's clauses
	Environment Kind = "Environment" // nondeterministic, non-malicious: expiry, transport errors
	Adversary   Kind = "Adversary"   // an attacker capability: ADV-1..3 or the Dolev-Yao network
)

// Kinds lists the transition kinds in order.
var Kinds = []Kind{Protocol, Environment, Adversary}

// Adversary capabilities of the threat model.
var AdversaryCaps = []string{"ADV-1", "ADV-2", "ADV-3", "DY"}

// Modalities of a clause or transition (RFC 2119 plus NOT_SPECIFIED).
var Modalities = []string{"MUST", "MUST_NOT", "SHOULD", "SHOULD_NOT", "MAY", "NOT_SPECIFIED"}

// Principles of the Agent-Agnostic Security Model.
var Principles = []string{"P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "WF", "SL", "CS"}

// Classes of the property taxonomy.
var Classes = []string{"SPEC-MANDATED", "SPEC-RECOMMENDED", "AASM-HARDENING", "APS-COMPLETENESS"}

// TypeKind is the kind of a finite domain.
type TypeKind int

const (
	Bool TypeKind = iota + 1
	Enum
	Int
)

// Type is a finite domain: bool, an enumeration, or a bounded integer.
// Expression types may be int ranges wider than any variable's (a sum).
type Type struct {
	Kind     TypeKind
	Values   []string // Enum: the values, in order; a value's index is its encoding
	Min, Max int      // Int: the inclusive range
}

// Size is the number of values in the domain.
func (t Type) Size() int {
	switch t.Kind {
	case Bool:
		return 2
	case Enum:
		return len(t.Values)
	case Int:
		return t.Max - t.Min + 1
	}
	return 0
}

// Contains reports whether v (an encoded value: 0/1, enum index, integer)
// is in the domain.
func (t Type) Contains(v int) bool {
	switch t.Kind {
	case Bool:
		return v == 0 || v == 1
	case Enum:
		return v >= 0 && v < len(t.Values)
	case Int:
		return v >= t.Min && v <= t.Max
	}
	return false
}

// Format renders an encoded value for people: true, ready, 3.
func (t Type) Format(v int) string {
	switch t.Kind {
	case Bool:
		return fmt.Sprint(v != 0)
	case Enum:
		if v >= 0 && v < len(t.Values) {
			return t.Values[v]
		}
	}
	return fmt.Sprint(v)
}

func (t Type) String() string {
	switch t.Kind {
	case Bool:
		return "bool"
	case Enum:
		return fmt.Sprintf("enum%v", t.Values)
	case Int:
		return fmt.Sprintf("int[%d..%d]", t.Min, t.Max)
	}
	return "invalid"
}

// compatible reports whether values of a and b may be compared or assigned.
func compatible(a, b Type) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.Kind != Enum {
		return true
	}
	if len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if a.Values[i] != b.Values[i] {
			return false
		}
	}
	return true
}

// Var is a state variable.
type Var struct {
	Name string
	Type Type
	Init int // encoded initial value
	Doc  string
	Pos  Pos
}

// Assign is one state write: Var := Expr, evaluated in the old state
// (all writes of a transition happen simultaneously).
type Assign struct {
	Var  int // index into Model.Vars
	Expr *Expr
	Pos  Pos
}

// Message is the concrete protocol message an action stands for, the
// template replay sends.
type Message struct {
	Method    string // JSON-RPC method, HTTP operation, or transport action
	Transport string // set for a transport action (close stdin, HTTP DELETE) instead of a method
	Notify    bool   // a JSON-RPC notification (no id)
	Params    any    // JSON value, from YAML
}

// Warden is what the gateway adds to a transition when the protocol runs
// behind it: a guard conjoined with the transition's, and writes that
// replace or extend the transition's writes.
type Warden struct {
	Guard  *Expr
	Writes []Assign
	Rule   string // the gateway stage and rule that enforces it
	Pos    Pos
}

// Transition is one action of the model.
type Transition struct {
	ID          string
	Kind        Kind
	Adversary   string // ADV-1..3 or DY, for Kind == Adversary
	Actor       string
	Trigger     string
	Guard       *Expr // nil: always enabled
	Writes      []Assign
	Modality    string
	SourceRefs  []string
	Assumption  string // for Environment actions: the environment assumption
	Description string
	Message     *Message
	Warden      *Warden
	Pos         Pos
}

// Property is an invariant: a state predicate that must hold in every
// reachable state.
type Property struct {
	ID          string
	Principle   string
	Class       string
	Expr        *Expr
	SourceRefs  []string
	Description string
	Pos         Pos
}

// Constant is a named integer parameter of a model (the number of agents,
// a bound): usable in variable bounds and initial values, and in
// expressions, where it stands for its value. ParseOptions.Defines (the
// CLI's -D NAME=N) overrides its value.
type Constant struct {
	Name  string
	Value int
	Doc   string
	Pos   Pos
}

// Model is a parsed protocol model.
type Model struct {
	IRVersion   int
	Name        string
	Protocol    string   // MCP, A2A, ANP, ACP-Cap, ACP-Client, or COMPOSITION
	Protocols   []string // for a composition: the composed protocols
	Pattern     int      // for a composition: the §6.3 pattern number, 1..5
	SpecVersion string
	Title       string
	Description string
	Constants   []Constant // their values after any override
	Vars        []Var
	Transitions []Transition
	Properties  []Property
	File        string
	guarded     bool
}

// IsGuarded reports whether m is the variant behind the warden gateway.
func (m *Model) IsGuarded() bool { return m.guarded }

// IsComposition reports whether m composes protocols through a bridge.
func (m *Model) IsComposition() bool { return m.Pattern > 0 }

// VarIndex returns the index of the variable named name, or -1.
func (m *Model) VarIndex(name string) int {
	for i, v := range m.Vars {
		if v.Name == name {
			return i
		}
	}
	return -1
}

// Property returns the property with the given id.
func (m *Model) Property(id string) (*Property, bool) {
	for i := range m.Properties {
		if m.Properties[i].ID == id {
			return &m.Properties[i], true
		}
	}
	return nil, false
}

// Guarded returns the variant of m behind the warden gateway: every
// transition with a `warden:` block gets its guard conjoined and its writes
// applied (a warden write to a variable replaces the transition's write to
// it). m itself is not changed. Guarded of a guarded model is itself.
func (m *Model) Guarded() *Model {
	if m.guarded {
		return m
	}
	g := *m
	g.guarded = true
	g.Name = m.Name + "+warden"
	g.Transitions = make([]Transition, len(m.Transitions))
	for i, t := range m.Transitions {
		if t.Warden != nil {
			if t.Warden.Guard != nil {
				if t.Guard == nil {
					t.Guard = t.Warden.Guard
				} else {
					t.Guard = &Expr{Op: OpAnd, Args: []*Expr{t.Guard, t.Warden.Guard}, Type: Type{Kind: Bool}, Pos: t.Guard.Pos}
				}
			}
			writes := make([]Assign, 0, len(t.Writes)+len(t.Warden.Writes))
			for _, w := range t.Writes {
				replaced := false
				for _, ww := range t.Warden.Writes {
					replaced = replaced || ww.Var == w.Var
				}
				if !replaced {
					writes = append(writes, w)
				}
			}
			t.Writes = append(writes, t.Warden.Writes...)
		}
		g.Transitions[i] = t
	}
	return &g
}
