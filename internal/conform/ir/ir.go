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

import (
	"fmt"
	"slices"
	"strings"
)

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
	Set // a subset of a finite element domain (Elem), encoded as a bit-vector
)

// MaxSetElems is the largest element domain of a set: a set value is a
// bit-vector that fits a 32-bit signed integer (Promela's int).
const MaxSetElems = 30

// Type is a finite domain: bool, an enumeration, a bounded integer, or the
// subsets of an enumeration or bounded integer. Expression types may be int
// ranges wider than any variable's (a sum).
type Type struct {
	Kind     TypeKind
	Values   []string // Enum: the values, in order; a value's index is its encoding
	Min, Max int      // Int: the inclusive range
	// Elem is a Set's element domain, an Enum or an Int. Element i of the
	// domain (enum index i, integer Min+i) is bit i of the set's encoding.
	Elem *Type
	// Sym names the symmetric domain (Domain.Symmetric) whose elements the
	// values are; "" for any other type. A set's element type carries it.
	Sym string
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
	case Set:
		return 1 << t.Elem.Size()
	}
	return 0
}

// Contains reports whether v (an encoded value: 0/1, enum index, integer,
// bit-vector) is in the domain.
func (t Type) Contains(v int) bool {
	switch t.Kind {
	case Bool:
		return v == 0 || v == 1
	case Enum:
		return v >= 0 && v < len(t.Values)
	case Int:
		return v >= t.Min && v <= t.Max
	case Set:
		return v >= 0 && v < 1<<t.Elem.Size()
	}
	return false
}

// Bit is the position in a set's bit-vector of element v (encoded) of the
// element domain t.
func (t Type) Bit(v int) int {
	if t.Kind == Int {
		return v - t.Min
	}
	return v
}

// Elems lists the encoded values of an Enum or Int domain, in order.
func (t Type) Elems() []int {
	out := make([]int, 0, t.Size())
	for i := range t.Size() {
		if t.Kind == Int {
			out = append(out, t.Min+i)
		} else {
			out = append(out, i)
		}
	}
	return out
}

// Format renders an encoded value for people: true, ready, 3, {read, exec}.
func (t Type) Format(v int) string {
	switch t.Kind {
	case Bool:
		return fmt.Sprint(v != 0)
	case Enum:
		if v >= 0 && v < len(t.Values) {
			return t.Values[v]
		}
	case Set:
		var parts []string
		for _, e := range t.Elem.Elems() {
			if v>>t.Elem.Bit(e)&1 == 1 {
				parts = append(parts, t.Elem.Format(e))
			}
		}
		return "{" + strings.Join(parts, ", ") + "}"
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
	case Set:
		return "set of " + t.Elem.String()
	}
	return "invalid"
}

// compatible reports whether values of a and b may be compared or assigned.
func compatible(a, b Type) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case Set:
		return compatible(*a.Elem, *b.Elem) && (a.Elem.Kind != Int || a.Elem.Min == b.Elem.Min && a.Elem.Max == b.Elem.Max)
	case Enum:
		return slices.Equal(a.Values, b.Values)
	}
	return true
}

// Domain is a named finite domain (`domains:`): an enumeration or an
// integer range whose bounds may be constants. Quantifiers, transition
// parameters, set elements and array indices range over domains.
type Domain struct {
	Name string
	Type Type // Enum or Int
	Doc  string
	Pos  Pos
	// Symmetric (`symmetric: true`) declares that the model treats the
	// domain's elements alike: no expression names one of them, orders
	// them or computes with them (code symmetry), so every permutation of
	// the elements maps behaviours to behaviours and the checker may store
	// one state per orbit (see package check).
	Symmetric bool
}

// Array is a function from one or more finite domains to a scalar type
// (`type: "Agent -> Agent -> set Cap"`). Its cells are ordinary variables
// of the model, Model.Vars[First : First+Cells()], in row-major order, so
// the checker and the Promela printer see scalars; the TLA+ printer prints
// the array as one function-valued variable.
type Array struct {
	Name  string
	Index []Type // the domains of the indices, outermost first
	Elem  Type
	First int // index in Model.Vars of the first cell
	Doc   string
	Pos   Pos
	// Record and Field are set for one field of an array of records: the
	// array "calls.state" holds field state of every record of calls, and
	// its cells are named calls[1].state.
	Record, Field string
}

// Cells is the number of cells of a.
// It saturates at 1<<31, far above any array a model may declare, so that
// four indices over large domains cannot overflow to a small number.
func (a *Array) Cells() int {
	n := 1
	for _, t := range a.Index {
		n = min(n*t.Size(), 1<<31)
	}
	return n
}

// Cell returns the index in Model.Vars of the cell at the given encoded
// indices, and false when an index is outside its domain.
func (a *Array) Cell(idx []int) (int, bool) {
	off := 0
	for i, t := range a.Index {
		if !t.Contains(idx[i]) {
			return 0, false
		}
		off = off*t.Size() + t.Bit(idx[i])
	}
	return a.First + off, true
}

// Record is a variable whose type is a record, {f1: T1, f2: T2, ...}, or
// an array of records (Index not nil). It is flattened when parsed: each
// field of a record is a scalar variable of the model named "r.f", each
// field of an array of records an array named "calls.f" whose cells are
// named calls[1].f. The checker and the Promela printer see scalars; the
// TLA+ printer one variable (a function, for an array) per field.
type Record struct {
	Name   string
	Index  []Type // the index domains of an array of records; nil for one record
	Fields []Field
	Doc    string
	Pos    Pos
}

// Field is one field of a record variable.
type Field struct {
	Name string
	Type Type
	// Var is the field's scalar variable (index into Model.Vars) for a
	// record, or its array (index into Model.Arrays) for an array of
	// records.
	Var int
}

// FieldIndex returns the position of the field named name, or -1.
func (r *Record) FieldIndex(name string) int {
	for i, f := range r.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// FieldNames lists the names of r's fields, in order.
func (r *Record) FieldNames() []string {
	out := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		out[i] = f.Name
	}
	return out
}

// Var is a state variable: a scalar, or one cell of an array (Index is not
// nil; its Name is then the array's name with the indices, "caps[a1]").
type Var struct {
	Name  string
	Type  Type
	Init  int // encoded initial value
	Doc   string
	Pos   Pos
	Array int   // a cell's array: index into Model.Arrays
	Index []int // a cell's encoded indices; nil for a scalar
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

// Transition is one action of the model. A transition with parameters
// (`params:`) is expanded when parsed into one Transition per binding, all
// with the same ID; Args says which binding each is.
type Transition struct {
	ID          string
	Args        []Arg
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

// Arg is the value of one parameter of a transition instance.
type Arg struct {
	Name string
	Val  int // encoded
	Type Type
}

// Label is the transition's id with its arguments, "A_amplify(ag=2, c=exec)".
func (t *Transition) Label() string {
	if len(t.Args) == 0 {
		return t.ID
	}
	parts := make([]string, len(t.Args))
	for i, a := range t.Args {
		parts[i] = a.Name + "=" + a.Type.Format(a.Val)
	}
	return t.ID + "(" + strings.Join(parts, ", ") + ")"
}

// PropertyKind says what a property claims about the model's behaviours.
type PropertyKind string

const (
	// Invariant: Expr holds in every reachable state.
	Invariant PropertyKind = "invariant"
	// LeadsTo: From ~> To. Whenever From holds, To holds then or later, on
	// every behaviour that Fairness admits.
	LeadsTo PropertyKind = "leads-to"
)

// PropertyKinds lists the property kinds, as the model file spells them.
var PropertyKinds = []string{string(Invariant), string(LeadsTo)}

// Fairness is the set of infinite behaviours a leads-to property is
// checked over. A behaviour is an infinite path of transitions; a state
// where no transition is enabled repeats forever (it stutters).
type Fairness string

const (
	// WeakFairness (the default) admits a behaviour only if every
	// transition (every instance of a parameterised one) that is enabled
	// in every state from some point on is taken infinitely often. On a
	// lasso: each transition is disabled in some state of the cycle, or
	// labels some step of the cycle.
	WeakFairness Fairness = "weak"
	// NoFairness admits every behaviour: a transition may stay enabled
	// forever and never be taken, as long as some transition is taken.
	NoFairness Fairness = "none"
)

// Fairnesses lists the fairness notions, as the model file spells them.
var Fairnesses = []string{string(WeakFairness), string(NoFairness)}

// Property is an invariant, a state predicate that must hold in every
// reachable state, or a leads-to property (Kind == LeadsTo) From ~> To.
type Property struct {
	ID          string
	Kind        PropertyKind // Invariant or LeadsTo
	Principle   string
	Class       string
	Expr        *Expr    // Invariant: the predicate
	From, To    *Expr    // LeadsTo: P and Q of P ~> Q
	Fairness    Fairness // LeadsTo: WeakFairness or NoFairness
	SourceRefs  []string
	Description string
	Pos         Pos
}

// Exprs lists the property's expressions that are set: Expr for an
// invariant, From and To for a leads-to property.
func (p *Property) Exprs() []*Expr {
	var out []*Expr
	for _, x := range []*Expr{p.Expr, p.From, p.To} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// String renders the property's claim: the invariant, or "P ~> Q".
func (p *Property) String() string {
	if p.Kind == LeadsTo && p.From != nil && p.To != nil {
		return p.From.String() + " ~> " + p.To.String()
	}
	if p.Expr != nil {
		return p.Expr.String()
	}
	return ""
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
	Domains     []Domain
	Arrays      []Array
	Records     []Record // flattened into Vars and Arrays
	Vars        []Var
	Transitions []Transition
	Properties  []Property
	File        string
	guarded     bool
	// declared is how many transitions the file lists, read or not: a
	// model whose transitions all had errors is not also told it has none.
	declared int
}

// IsGuarded reports whether m is the variant behind the warden gateway.
func (m *Model) IsGuarded() bool { return m.guarded }

// IsComposition reports whether m composes protocols through a bridge.
func (m *Model) IsComposition() bool { return m.Pattern > 0 }

// VarIndex returns the index of the scalar variable named name, or -1.
func (m *Model) VarIndex(name string) int {
	for i, v := range m.Vars {
		if v.Name == name && v.Index == nil {
			return i
		}
	}
	return -1
}

// ArrayIndex returns the index of the array named name, or -1.
func (m *Model) ArrayIndex(name string) int {
	for i, a := range m.Arrays {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// RecordIndex returns the index of the record variable named name, or -1.
func (m *Model) RecordIndex(name string) int {
	for i, r := range m.Records {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// SymmetricDomains lists the domains declared symmetric, in order.
func (m *Model) SymmetricDomains() []*Domain {
	var out []*Domain
	for i := range m.Domains {
		if m.Domains[i].Symmetric {
			out = append(out, &m.Domains[i])
		}
	}
	return out
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
