package check

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/agentwarden/warden/internal/conform/ir"
)

// Trace is a counterexample: the states from the initial state to the
// first state that violates Property, and the action taken before each.
// For a leads-to property it is a lasso: Steps are a prefix and then a
// cycle that starts at Steps[Cycle.Start] and closes from the last step
// by Cycle.Action.
type Trace struct {
	Model    *ir.Model
	Property string
	Steps    []Step
	Cycle    *Cycle // nil for an invariant's trace
}

// Step is one state of a trace. Action is the index of the transition that
// led to it in Model.Transitions, or -1 for the initial state.
type Step struct {
	Action int
	Values []int // one per variable, encoded (see ir.Type.Format)
}

// Len is the number of actions in the trace.
func (t *Trace) Len() int { return len(t.Steps) - 1 }

// CycleActions lists the transition ids of a lasso's cycle, in order,
// ending with the one that closes it ("stutter" for a deadlocked state that
// repeats). It is nil for a trace that is not a lasso.
func (t *Trace) CycleActions() []string {
	if t.Cycle == nil {
		return nil
	}
	var ids []string
	for _, s := range t.Steps[t.Cycle.Start+1:] {
		ids = append(ids, t.Model.Transitions[s.Action].ID)
	}
	if t.Cycle.Action < 0 {
		return append(ids, "stutter")
	}
	return append(ids, t.Model.Transitions[t.Cycle.Action].ID)
}

// Actions lists the transition ids of the trace, in order.
func (t *Trace) Actions() []string {
	var ids []string
	for _, s := range t.Steps[1:] {
		ids = append(ids, t.Model.Transitions[s.Action].ID)
	}
	return ids
}

// UsesAdversary reports whether any action of the trace is an Adversary
// action.
func (t *Trace) UsesAdversary() bool {
	for _, s := range t.Steps[1:] {
		if t.Model.Transitions[s.Action].Kind == ir.Adversary {
			return true
		}
	}
	return false
}

// SourceRefs lists the clauses cited by the trace's actions and by the
// property, each once, in order of first appearance.
func (t *Trace) SourceRefs() []string {
	var refs []string
	addAll := func(ids []string) {
		for _, id := range ids {
			if !slices.Contains(refs, id) {
				refs = append(refs, id)
			}
		}
	}
	for _, s := range t.Steps[1:] {
		addAll(t.Model.Transitions[s.Action].SourceRefs)
	}
	if pr, ok := t.Model.Property(t.Property); ok {
		addAll(pr.SourceRefs)
	}
	return refs
}

// obj is a JSON object that keeps its members in order.
type obj []member

type member struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := marshal(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping: traces are read by people
// and tools, not embedded in HTML, and "=>" should stay readable.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// ITFFormat is the trace format's description, written into every trace.
const ITFFormat = "https://apalache-mc.org/docs/adr/015adr-trace.html"

// ITF renders the trace in the Informal Trace Format (Apalache ADR-015),
// indented. Each state's #meta carries, besides its index, the action that
// led to it: id, kind, adversary capability, actor, trigger, modality,
// source_refs, and the concrete message replay sends for it (a JSON-RPC
// request whose id is the step index, a notification, or a transport
// action).
func (t *Trace) ITF() ([]byte, error) {
	m := t.Model
	pr, _ := m.Property(t.Property)
	var vars []string
	for _, v := range m.Vars {
		if v.Index == nil {
			vars = append(vars, v.Name)
		} else if a := &m.Arrays[v.Array]; !slices.Contains(vars, a.Name) {
			vars = append(vars, a.Name)
		}
	}
	meta := obj{
		{"format", "ITF"},
		{"format-description", ITFFormat},
		{"source", m.File},
		{"description", "counterexample to " + t.Property + " in " + m.Name},
		{"model", m.Name},
		{"protocol", m.Protocol},
		{"property", t.Property},
	}
	if pr != nil {
		meta = append(meta, member{"principle", pr.Principle}, member{"class", pr.Class})
		if pr.Kind == ir.LeadsTo {
			meta = append(meta, member{"leads_to", pr.String()}, member{"fairness", string(pr.Fairness)})
		} else {
			meta = append(meta, member{"invariant", pr.Expr.String()})
		}
	}
	meta = append(meta, member{"warden", m.IsGuarded()}, member{"adversary", t.UsesAdversary()},
		member{"length", t.Len()}, member{"source_refs", nonNil(t.SourceRefs())})
	states := make([]obj, len(t.Steps))
	for i, s := range t.Steps {
		sm := obj{{"index", i}}
		if s.Action >= 0 {
			tr := &m.Transitions[s.Action]
			sm = append(sm, member{"action", tr.ID})
			if len(tr.Args) > 0 {
				args := obj{}
				for _, a := range tr.Args {
					args = append(args, member{a.Name, itfValue(a.Type, a.Val)})
				}
				sm = append(sm, member{"args", args})
			}
			sm = append(sm, member{"kind", string(tr.Kind)})
			if tr.Adversary != "" {
				sm = append(sm, member{"adversary", tr.Adversary})
			}
			if tr.Actor != "" {
				sm = append(sm, member{"actor", tr.Actor})
			}
			if tr.Trigger != "" {
				sm = append(sm, member{"trigger", tr.Trigger})
			}
			if tr.Modality != "" {
				sm = append(sm, member{"modality", tr.Modality})
			}
			sm = append(sm, member{"source_refs", nonNil(tr.SourceRefs)})
			if msg := Message(tr, i); msg != nil {
				sm = append(sm, member{"message", msg})
			}
		} else {
			sm = append(sm, member{"action", "init"})
		}
		st := obj{{"#meta", sm}}
		for vi, v := range m.Vars {
			switch {
			case v.Index == nil:
				st = append(st, member{v.Name, itfValue(v.Type, s.Values[vi])})
			case m.Arrays[v.Array].First == vi:
				a := &m.Arrays[v.Array]
				st = append(st, member{a.Name, itfArray(a, a.Index, s.Values[a.First:a.First+a.Cells()])})
			}
		}
		states[i] = st
	}
	doc := obj{{"#meta", meta}, {"vars", vars}, {"states", states}}
	if t.Cycle != nil {
		// ITF's loop: the last state is followed by states[loop]. The
		// action that closes the cycle is in #meta.
		closing := "stutter"
		if t.Cycle.Action >= 0 {
			closing = m.Transitions[t.Cycle.Action].ID
		}
		meta = append(meta, member{"loop_action", closing})
		doc = obj{{"#meta", meta}, {"vars", vars}, {"states", states}, {"loop", t.Cycle.Start}}
	}
	raw, err := marshal(doc)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func itfValue(t ir.Type, v int) any {
	switch t.Kind {
	case ir.Bool:
		return v != 0
	case ir.Enum:
		return t.Values[v]
	case ir.Set:
		elems := []any{}
		for _, e := range t.Elem.Elems() {
			if v>>t.Elem.Bit(e)&1 == 1 {
				elems = append(elems, itfValue(*t.Elem, e))
			}
		}
		return obj{{"#set", elems}}
	}
	return v
}

// itfArray renders an array's cells (row-major, dims the remaining index
// domains) as ITF maps from index to value, nested one per index.
func itfArray(a *ir.Array, dims []ir.Type, cells []int) any {
	if len(dims) == 0 {
		return itfValue(a.Elem, cells[0])
	}
	per := len(cells) / dims[0].Size()
	pairs := []any{}
	for i, x := range dims[0].Elems() {
		pairs = append(pairs, []any{itfValue(dims[0], x), itfArray(a, dims[1:], cells[i*per:(i+1)*per])})
	}
	return obj{{"#map", pairs}}
}

// Message is the concrete message for transition tr at step index id: a
// JSON-RPC request (id = step index), a notification, or a transport
// action. It is nil when the transition has no message (an internal step
// such as the model of an LLM reading a tool result).
func Message(tr *ir.Transition, id int) any {
	msg := tr.Message
	if msg == nil {
		return nil
	}
	if msg.Transport != "" {
		o := obj{{"transport", msg.Transport}}
		if msg.Params != nil {
			o = append(o, member{"params", jsonable(msg.Params)})
		}
		return o
	}
	o := obj{{"jsonrpc", "2.0"}}
	if !msg.Notify {
		o = append(o, member{"id", id})
	}
	o = append(o, member{"method", msg.Method})
	if msg.Params != nil {
		o = append(o, member{"params", jsonable(msg.Params)})
	}
	return o
}

// jsonable turns YAML-decoded values into values encoding/json accepts
// with sorted keys (map[string]any already sorts).
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = jsonable(vv)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			if ks, ok := k.(string); ok {
				out[ks] = jsonable(vv)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = jsonable(x[i])
		}
		return out
	}
	return v
}
