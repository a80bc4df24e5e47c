package oatf

import (
	"fmt"
	"strings"
)

// Validation of execution profiles: forms, actors, phases, triggers,
// extractors, entry actions, protocol state and templates.

func (v *validator) addActor(name, mode string) *actorInfo {
	a := &actorInfo{name: name, mode: mode, extractors: map[string]bool{}}
	v.actors = append(v.actors, a)
	if v.actorIndex[name] == nil {
		v.actorIndex[name] = a
	}
	return a
}

func (v *validator) execution(e *Value, p string) {
	mode, state, phases, actors := e.Get("mode"), e.Get("state"), e.Get("phases"), e.Get("actors")
	forms := 0
	for _, f := range []*Value{state, phases, actors} {
		if present(f) {
			forms++
		}
	}
	if forms != 1 {
		v.errf("V-030", p, e, "execution needs exactly one of state, phases, actors; it has %d", forms)
	}
	if present(mode) {
		v.mode(mode, p+".mode")
		v.execMode = mode.Str
	}
	switch {
	case present(actors):
		if len(actors.Items) == 0 {
			v.errf("V-007", p+".actors", actors, "actors must not be empty")
		}
		for i, a := range actors.Items {
			v.actor(a, fmt.Sprintf("%s.actors[%d]", p, i))
		}
	case present(phases):
		actorMode := mode.StringOr("")
		if !present(mode) {
			v.modelessPhases(phases, p+".phases")
			if len(phases.Items) > 0 {
				actorMode = phases.Items[0].Get("mode").StringOr("")
			}
		}
		v.phases(phases, p+".phases", v.addActor("default", actorMode), false)
	case present(state):
		if !present(mode) {
			v.errf("V-030", p, e, "single-phase execution (state) needs execution.mode")
		}
		actor := v.addActor("default", mode.StringOr(""))
		v.state(state, p+".state", actor)
	}
}

// modelessPhases applies V-028: without execution.mode every phase declares
// the same mode.
func (v *validator) modelessPhases(phases *Value, p string) {
	modes := map[string]bool{}
	for i, ph := range phases.Items {
		m := ph.Get("mode")
		if !present(m) {
			v.errf("V-028", fmt.Sprintf("%s[%d].mode", p, i), ph, "without execution.mode every phase must declare its mode")
			continue
		}
		modes[m.Str] = true
	}
	if len(modes) > 1 {
		v.errf("V-028", p, phases, "without execution.mode all phases must use the same mode")
	}
}

func (v *validator) mode(m *Value, p string) {
	switch {
	case !modeRe.MatchString(m.Str):
		v.errf("V-034", p, m, "mode %q must match %s", m.Str, modeRe)
	case !isKnownMode(m.Str):
		v.warnf("W-002", p, m, "mode %q is not one OATF 0.1 defines (%s)", m.Str, strings.Join(knownModes, ", "))
	}
}

func (v *validator) actor(a *Value, p string) {
	name := a.Get("name")
	switch {
	case !present(name):
		v.errf("V-031", p+".name", a, "every actor needs a name")
	case !actorNameRe.MatchString(name.Str):
		v.errf("V-031", p+".name", name, "actor name %q must match %s", name.Str, actorNameRe)
	case v.actorIndex[name.Str] != nil:
		v.errf("V-031", p+".name", name, "actor name %q is used twice", name.Str)
	}
	mode := a.Get("mode")
	if !present(mode) {
		v.errf("V-031", p+".mode", a, "every actor needs a mode")
	} else {
		v.mode(mode, p+".mode")
	}
	info := v.addActor(name.StringOr(""), mode.StringOr(""))
	phases := a.Get("phases")
	if !present(phases) || (phases.Kind == Seq && len(phases.Items) == 0) {
		// Both rules say it: V-007 (each actor's phases has an entry)
		// and V-031 (each actor has at least one phase).
		at := orValue(phases, a)
		v.errf("V-007", p+".phases", at, "every actor needs at least one phase")
		v.errf("V-031", p+".phases", at, "every actor needs at least one phase")
		return
	}
	v.phases(phases, p+".phases", info, true)
}

func (v *validator) phases(list *Value, p string, actor *actorInfo, inActor bool) {
	if len(list.Items) == 0 {
		v.errf("V-007", p, list, "phases must not be empty")
		return
	}
	var terminal []int
	names := map[string]bool{}
	for i, ph := range list.Items {
		pp := fmt.Sprintf("%s[%d]", p, i)
		if !present(ph.Get("trigger")) {
			terminal = append(terminal, i)
		}
		// Only explicit names must be unique: omitted ones are
		// generated from the position.
		if name := ph.Get("name"); present(name) {
			if names[name.Str] {
				v.errf("V-011", pp+".name", name, "phase name %q is used twice in this actor", name.Str)
				if inActor {
					v.errf("V-031", pp+".name", name, "phase name %q is used twice in this actor", name.Str)
				}
			}
			names[name.Str] = true
		}
		// V-044 holds in the multi-actor form only.
		v.phase(ph, pp, actor, inActor)
	}
	switch {
	case len(terminal) > 1:
		v.errf("V-008", p, list, "only one phase may lack a trigger (the terminal phase); %d do", len(terminal))
	case len(terminal) == 1 && terminal[0] != len(list.Items)-1:
		i := terminal[0]
		v.errf("V-008", fmt.Sprintf("%s[%d]", p, i), list.Items[i], "the terminal phase (no trigger) must be the last")
	}
	if !present(list.Items[0].Get("state")) {
		v.errf("V-009", p+"[0]", list.Items[0], "the first phase must declare state")
	}
}

func (v *validator) phase(ph *Value, p string, actor *actorInfo, checkMode bool) {
	if m := ph.Get("mode"); present(m) {
		v.mode(m, p+".mode")
		if checkMode && actor.mode != "" && m.Str != actor.mode {
			v.errf("V-044", p+".mode", m, "phase mode %q differs from the actor's mode %q", m.Str, actor.mode)
		}
	}
	if ex := ph.Get("extractors"); present(ex) {
		if len(ex.Items) == 0 {
			v.errf("V-038", p+".extractors", ex, "extractors, when present, must not be empty")
		}
		for i, x := range ex.Items {
			v.extractor(x, fmt.Sprintf("%s.extractors[%d]", p, i), actor)
		}
	}
	if st := ph.Get("state"); present(st) {
		v.state(st, p+".state", actor)
	}
	if oe := ph.Get("on_enter"); present(oe) {
		if len(oe.Items) == 0 {
			v.errf("V-043", p+".on_enter", oe, "on_enter, when present, must not be empty")
		}
		for i, act := range oe.Items {
			v.action(act, fmt.Sprintf("%s.on_enter[%d]", p, i), actor)
		}
	}
	if t := ph.Get("trigger"); present(t) {
		v.trigger(t, p+".trigger", actor.mode)
	}
}

func (v *validator) extractor(x *Value, p string, actor *actorInfo) {
	name := x.Get("name")
	if !present(name) || !extractorRe.MatchString(name.Str) {
		v.errf("V-037", p+".name", orValue(name, x), "extractor name must match %s", extractorRe)
	} else {
		actor.extractors[name.Str] = true
	}
	v.enum(x.Get("source"), p+".source", enumSource)
	v.enum(x.Get("type"), p+".type", enumExtractType)
	sel := x.Get("selector")
	if !present(sel) {
		v.errf("V-015", p+".selector", x, "extractor.selector is required")
		return
	}
	switch x.Get("type").StringOr("") {
	case "json_path":
		if _, err := compileJSONPath(sel.Str); err != nil {
			v.errf("V-015", p+".selector", sel, "invalid JSONPath: %v", err)
		}
	case "regex":
		re, err := compileRegex(sel.Str)
		if err != nil {
			v.errf("V-013", p+".selector", sel, "invalid RE2 regular expression: %v", err)
		} else if re.NumSubexp() == 0 {
			v.errf("V-042", p+".selector", sel, "a regex extractor needs a capture group; its first group is the value")
		}
	}
}

func (v *validator) action(act *Value, p string, actor *actorInfo) {
	var keys []string
	for _, k := range act.Keys() {
		if !strings.HasPrefix(k, "x-") {
			keys = append(keys, k)
		}
	}
	if len(keys) != 1 {
		v.errf("V-041", p, act, "an entry action needs exactly one action key (send, log, ...); it has %d", len(keys))
		return
	}
	body := act.Get(keys[0])
	switch keys[0] {
	case "send", "send_push_notification":
	case "log":
		v.enum(body.Get("level"), p+".log.level", enumLogLevel)
	default:
		v.warnf(RuleUnknownField, p+"."+keys[0], body, "unknown action %q is kept and skipped at run time", keys[0])
	}
	v.templates = append(v.templates, templateUse{actor: actor, path: p, val: act})
}

func (v *validator) trigger(t *Value, p, mode string) {
	event, after := t.Get("event"), t.Get("after")
	if !present(event) && !present(after) {
		v.errf("V-040", p, t, "a trigger needs event or after")
	}
	if !present(event) && (present(t.Get("count")) || present(t.Get("match"))) {
		v.errf("V-019", p, t, "count and match need event")
	}
	if c := t.Get("count"); present(c) && c.Kind == Int && c.Int < 1 {
		v.errf("V-019", p+".count", c, "count must be at least 1")
	}
	if present(after) {
		if _, err := ParseDuration(after.Str); err != nil {
			v.errf("V-036", p+".after", after, "after %q: %v", after.Str, err)
		}
	}
	if present(event) {
		if events, known := modeEvents[mode]; known && !contains(events, event.Str) {
			v.warnf("V-029", p+".event", event, "event %q is not one mode %s observes", event.Str, mode)
		}
	}
	v.predicate(t.Get("match"), p+".match")
}

// dispatchLists are the response-dispatch lists a state may hold, directly
// or under each tool and prompt.
var dispatchLists = []string{"sampling_responses", "elicitation_responses", "task_responses", "tool_responses"}

func (v *validator) state(st *Value, p string, actor *actorInfo) {
	v.templates = append(v.templates, templateUse{actor: actor, path: p, val: st})
	if st.Kind != Map {
		return
	}
	for _, list := range []string{"tools", "prompts"} {
		for i, it := range st.Get(list).itemsOrNil() {
			if r := it.Get("responses"); present(r) {
				v.responses(r, fmt.Sprintf("%s.%s[%d].responses", p, list, i))
			}
		}
	}
	for _, name := range dispatchLists {
		if r := st.Get(name); present(r) {
			v.responses(r, p+"."+name)
		}
	}
	for i, e := range st.Get("elicitation_responses").itemsOrNil() {
		v.enum(e.Get("action"), fmt.Sprintf("%s.elicitation_responses[%d].action", p, i), enumElicitAction)
	}
	for i, e := range st.Get("elicitations").itemsOrNil() {
		v.enum(e.Get("mode"), fmt.Sprintf("%s.elicitations[%d].mode", p, i), enumElicitMode)
		v.predicate(e.Get("when"), fmt.Sprintf("%s.elicitations[%d].when", p, i))
	}
	if rai := st.Get("run_agent_input"); present(rai) && rai.Has("synthesize") {
		v.warnf("W-006", p+".run_agent_input.synthesize", rai.Get("synthesize"), "synthesize is reserved; static content is used")
	}
}

func (v *validator) responses(list *Value, p string) {
	if list.Kind != Seq {
		v.errf(RuleTypeMismatch, p, list, "%s must be a list", p)
		return
	}
	var fallbacks []int
	for i, e := range list.Items {
		ep := fmt.Sprintf("%s[%d]", p, i)
		if when := e.Get("when"); present(when) {
			v.predicate(when, ep+".when")
		} else {
			fallbacks = append(fallbacks, i)
		}
		if e.Has("synthesize") {
			v.warnf("W-006", ep+".synthesize", e.Get("synthesize"), "synthesize is reserved; static content is used")
		}
	}
	// V-033: a second entry without when is an error; that the one entry
	// without when comes last is only a SHOULD (it is tried after every
	// when entry wherever it stands).
	if len(fallbacks) > 1 {
		v.errf("V-033", p, list, "at most one entry may omit when (entries %d and %d do)", fallbacks[0], fallbacks[1])
	}
}

// checkTemplates checks every string of states and entry actions: syntax
// (V-016), cross-actor references (V-032) and references to extractors that
// no phase declares (W-004).
func (v *validator) checkTemplates() {
	for _, use := range v.templates {
		walkStrings(use.val, use.path, func(s *Value, path string) {
			refs, err := templateRefs(s.Str)
			if err != nil {
				v.errf("V-016", path, s, "%v", err)
				return
			}
			for _, ref := range refs {
				v.templateRef(ref, path, s, use.actor)
			}
		})
	}
}

func (v *validator) templateRef(ref, path string, at *Value, actor *actorInfo) {
	head, rest, qualified := strings.Cut(ref, ".")
	switch {
	case qualified && (head == "request" || head == "response"):
	case qualified:
		other := v.actorIndex[head]
		if other == nil {
			v.errf("V-032", path, at, "template {{%s}} names actor %q, which does not exist", ref, head)
		} else if !other.extractors[rest] {
			v.warnf("W-004", path, at, "template {{%s}}: actor %s declares no extractor %q; it renders as \"\"", ref, head, rest)
		}
	case !actor.extractors[ref]:
		v.warnf("W-004", path, at, "template {{%s}}: no extractor of this actor is named %q; it renders as \"\"", ref, ref)
	}
}

// walkStrings calls f for every string containing "{{" in v.
func walkStrings(v *Value, path string, f func(*Value, string)) {
	switch v.Kind {
	case String:
		if strings.Contains(v.Str, "{{") {
			f(v, path)
		}
	case Seq:
		for i, it := range v.Items {
			walkStrings(it, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case Map:
		for _, m := range v.Pairs {
			walkStrings(m.Value, path+"."+m.Key, f)
		}
	}
}
