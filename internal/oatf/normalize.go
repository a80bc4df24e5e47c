package oatf

import (
	"fmt"
	"strings"
)

// Normalize returns the canonical form of a valid document (SDK §3.3,
// N-001..N-008): defaults written, scalar severity expanded, indicator ids
// generated, pattern shorthand expanded and targets copied down, single- and
// multi-phase executions turned into actors, and tags normalized. It is
// idempotent and leaves doc untouched.
func Normalize(doc *Document) *Document {
	root := doc.Root.Clone()
	out := &Document{File: doc.File, Source: doc.Source, Root: root}
	a := root.Get("attack")
	if a == nil || a.Kind != Map {
		return out
	}
	setDefault(a, "name", NewString("Untitled"))
	setDefault(a, "version", NewInt(1))
	setDefault(a, "status", NewString("draft"))
	if s := a.Get("severity"); present(s) {
		a.Set("severity", normalizeSeverity(s))
	}
	if c := a.Get("classification"); present(c) {
		for _, m := range c.Get("mappings").itemsOrNil() {
			setDefault(m, "relationship", NewString("primary"))
		}
		for _, t := range c.Get("tags").itemsOrNil() {
			if t.Kind == String {
				t.Str = normalizeTag(t.Str)
			}
		}
	}
	execMode := ""
	if e := a.Get("execution"); present(e) {
		execMode = e.Get("mode").StringOr("")
		a.Set("execution", normalizeExecution(e))
	}
	if inds := a.Get("indicators"); present(inds) {
		prefix := a.Get("id").StringOr("")
		protocol := ExtractProtocol(execMode)
		if protocol == "" {
			protocol = soleProtocol(a.Get("execution"))
		}
		for i, ind := range inds.Items {
			normalizeIndicator(ind, i, prefix, protocol)
			inds.Items[i] = reorder(ind, objIndicator)
		}
		c := a.Get("correlation")
		if !present(c) {
			c = NewMap()
			a.Set("correlation", c)
		}
		setDefault(c, "logic", NewString("any"))
	}
	root.Set("attack", reorder(a, objAttack))
	return out
}

func setDefault(m *Value, key string, v *Value) {
	if m.Kind == Map && !present(m.Get(key)) {
		m.Set(key, v)
	}
}

func normalizeSeverity(s *Value) *Value {
	if s.Kind == String {
		n := NewMap()
		n.Pos = s.Pos
		n.Set("level", s)
		n.Set("confidence", NewInt(50))
		return n
	}
	setDefault(s, "confidence", NewInt(50))
	return s
}

func normalizeTag(t string) string {
	t = strings.ToLower(t)
	return strings.NewReplacer("_", "-", " ", "-").Replace(t)
}

// normalizeExecution turns every execution form into actors (N-006, N-007)
// and writes phase names and trigger counts (N-001).
func normalizeExecution(e *Value) *Value {
	mode := e.Get("mode")
	out := NewMap()
	out.Pos = e.Pos
	var actors *Value
	switch {
	case present(e.Get("actors")):
		actors = e.Get("actors")
	case present(e.Get("phases")):
		phases := e.Get("phases")
		actorMode := mode
		if !present(actorMode) && len(phases.Items) > 0 {
			actorMode = phases.Items[0].Get("mode")
		}
		actor := NewMap()
		actor.Set("name", NewString("default"))
		if present(actorMode) {
			actor.Set("mode", actorMode.Clone())
		}
		actor.Set("phases", phases)
		actors = NewSeq(actor)
	case present(e.Get("state")):
		phase := NewMap()
		phase.Set("name", NewString("phase-1"))
		phase.Set("state", e.Get("state"))
		actor := NewMap()
		actor.Set("name", NewString("default"))
		if present(mode) {
			actor.Set("mode", mode.Clone())
		}
		actor.Set("phases", NewSeq(phase))
		actors = NewSeq(actor)
	default:
		return e
	}
	for i, actor := range actors.Items {
		for j, ph := range actor.Get("phases").itemsOrNil() {
			setDefault(ph, "name", NewString(fmt.Sprintf("phase-%d", j+1)))
			if t := ph.Get("trigger"); present(t) && present(t.Get("event")) {
				setDefault(t, "count", NewInt(1))
				ph.Set("trigger", reorder(t, objTrigger))
			}
			actor.Get("phases").Items[j] = reorder(ph, objPhase)
		}
		actors.Items[i] = reorder(actor, objActor)
	}
	out.Set("actors", actors)
	// Extensions on execution survive the change of form.
	for _, m := range e.Pairs {
		if strings.HasPrefix(m.Key, "x-") {
			out.Pairs = append(out.Pairs, m)
		}
	}
	return out
}

// soleProtocol is the protocol of a normalized execution's actors when they
// all share one, else "".
func soleProtocol(e *Value) string {
	p := ""
	for _, a := range e.Get("actors").itemsOrNil() {
		ap := ExtractProtocol(a.Get("mode").StringOr(""))
		if p != "" && ap != p {
			return ""
		}
		p = ap
	}
	return p
}

func normalizeIndicator(ind *Value, i int, prefix, protocol string) {
	if !present(ind.Get("id")) {
		if prefix == "" {
			prefix = "indicator"
		}
		ind.Set("id", NewString(fmt.Sprintf("%s-%02d", prefix, i+1)))
	}
	if protocol != "" {
		setDefault(ind, "protocol", NewString(protocol))
	}
	target := ind.Get("target")
	if pat := ind.Get("pattern"); present(pat) {
		if !present(pat.Get("condition")) {
			cond := NewMap()
			rest := pat.Pairs[:0:0]
			for _, m := range pat.Pairs {
				if isConditionOp(m.Key) {
					cond.Pairs = append(cond.Pairs, m)
				} else {
					rest = append(rest, m)
				}
			}
			if len(cond.Pairs) > 0 {
				pat.Pairs = rest
				pat.Set("condition", cond)
			}
		}
		if present(target) {
			setDefault(pat, "target", target.Clone())
		}
		ind.Set("pattern", reorder(pat, objPattern))
	}
	if sem := ind.Get("semantic"); present(sem) && present(target) {
		setDefault(sem, "target", target.Clone())
	}
}

// reorder puts the known keys of an object in canonical order, followed by
// the others (x- extensions included) in their original order.
func reorder(v *Value, object string) *Value {
	spec, ok := objects[object]
	if !ok || v.Kind != Map {
		return v
	}
	out := &Value{Kind: Map, Pos: v.Pos, Pairs: make([]*Member, 0, len(v.Pairs))}
	for _, k := range spec.order {
		if m := v.member(k); m != nil {
			out.Pairs = append(out.Pairs, m)
		}
	}
	for _, m := range v.Pairs {
		if _, known := spec.fields[m.Key]; !known {
			out.Pairs = append(out.Pairs, m)
		}
	}
	return out
}
