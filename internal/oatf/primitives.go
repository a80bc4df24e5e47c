package oatf

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// isOperatorObject reports whether a condition is an operator object (every
// key an operator) rather than a bare value compared by equality.
func isOperatorObject(cond *Value) bool {
	if cond == nil || cond.Kind != Map || len(cond.Pairs) == 0 {
		return false
	}
	for _, m := range cond.Pairs {
		if !isConditionOp(m.Key) {
			return false
		}
	}
	return true
}

func isConditionOp(k string) bool {
	for _, op := range conditionOps {
		if op == k {
			return true
		}
	}
	return false
}

// EvaluateCondition applies a match condition to a value (SDK §5.3). A nil
// value means "the path did not resolve": only {exists: false} holds for it.
// Several operators in one object must all hold.
func EvaluateCondition(cond, v *Value) bool {
	if !isOperatorObject(cond) {
		return v != nil && Equal(cond, v)
	}
	for _, m := range cond.Pairs {
		if !evalOp(m.Key, m.Value, v) {
			return false
		}
	}
	return true
}

func evalOp(op string, arg, v *Value) bool {
	if op == "exists" {
		return arg != nil && arg.Kind == Bool && arg.Bool == (v != nil)
	}
	if v == nil || arg == nil {
		return false
	}
	switch op {
	case "contains", "starts_with", "ends_with", "regex":
		if arg.Kind != String {
			return false
		}
		text := scalarText(v)
		switch op {
		case "contains":
			return strings.Contains(text, arg.Str)
		case "starts_with":
			return strings.HasPrefix(text, arg.Str)
		case "ends_with":
			return strings.HasSuffix(text, arg.Str)
		}
		re, err := compileRegex(arg.Str)
		return err == nil && re.MatchString(text)
	case "any_of":
		if arg.Kind != Seq {
			return false
		}
		for _, it := range arg.Items {
			if Equal(it, v) {
				return true
			}
		}
		return false
	case "gt", "lt", "gte", "lte":
		if !arg.IsNumber() || !v.IsNumber() {
			return false
		}
		a, b := v.Number(), arg.Number()
		switch op {
		case "gt":
			return a > b
		case "lt":
			return a < b
		case "gte":
			return a >= b
		}
		return a <= b
	}
	return false
}

// regexCache holds compiled regular expressions; documents reuse a few
// patterns many times. It is cleared when it grows past regexCacheMax.
var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp
}

const regexCacheMax = 4096

// compileRegex compiles an RE2 expression, with caching.
func compileRegex(expr string) (*regexp.Regexp, error) {
	regexCache.Lock()
	re, ok := regexCache.m[expr]
	regexCache.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	regexCache.Lock()
	if regexCache.m == nil || len(regexCache.m) >= regexCacheMax {
		regexCache.m = make(map[string]*regexp.Regexp)
	}
	regexCache.m[expr] = re
	regexCache.Unlock()
	return re, nil
}

// EvaluatePredicate evaluates a match predicate (SDK §5.4): every entry
// "simple.path: condition" must hold against v.
func EvaluatePredicate(pred, v *Value) bool {
	if pred == nil || pred.Kind != Map {
		return false
	}
	for _, m := range pred.Pairs {
		got, found := ResolveSimplePath(m.Key, v)
		if !found {
			got = nil
		}
		if !EvaluateCondition(m.Value, got) {
			return false
		}
	}
	return true
}

// Extractor captures a value from a message into a named variable.
type Extractor struct {
	Name     string
	Source   string // request | response
	Type     string // json_path | regex
	Selector string
}

// ExtractorFromValue reads an extractor object.
func ExtractorFromValue(v *Value) Extractor {
	return Extractor{
		Name:     v.Get("name").StringOr(""),
		Source:   v.Get("source").StringOr(""),
		Type:     v.Get("type").StringOr(""),
		Selector: v.Get("selector").StringOr(""),
	}
}

// EvaluateExtractor applies ex to a message seen in direction (SDK §5.6).
// ok is false when the direction differs from ex.Source or nothing
// matches; a captured "" is ok. JSONPath returns the first node, non-scalars
// as compact JSON in source key order; regex returns the first capture group.
func EvaluateExtractor(ex Extractor, message *Value, direction string) (value string, ok bool) {
	if ex.Source != direction || message == nil {
		return "", false
	}
	switch ex.Type {
	case "json_path":
		p, err := compileJSONPath(ex.Selector)
		if err != nil {
			return "", false
		}
		nodes := p.query(message, 1)
		if len(nodes) == 0 {
			return "", false
		}
		if nodes[0].Kind == String {
			return nodes[0].Str, true
		}
		return CompactJSON(nodes[0]), true
	case "regex":
		re, err := compileRegex(ex.Selector)
		if err != nil {
			return "", false
		}
		text := scalarTextSource(message)
		idx := re.FindStringSubmatchIndex(text)
		if len(idx) < 4 || idx[2] < 0 {
			return "", false
		}
		return text[idx[2]:idx[3]], true
	}
	return "", false
}

func scalarTextSource(v *Value) string {
	if v.Kind == String {
		return v.Str
	}
	return CompactJSON(v)
}

// SelectResponse picks the response entry for a request (SDK §5.7): the first
// entry whose `when` predicate matches, else the entry without `when`, else
// nil. The returned entry is a copy without its `when` key.
func SelectResponse(entries []*Value, request *Value) *Value {
	var fallback *Value
	for _, e := range entries {
		when := e.Get("when")
		if !present(when) {
			if fallback == nil {
				fallback = e
			}
			continue
		}
		if EvaluatePredicate(when, request) {
			return withoutKey(e, "when")
		}
	}
	if fallback == nil {
		return nil
	}
	return withoutKey(fallback, "when")
}

func withoutKey(v *Value, key string) *Value {
	c := v.Clone()
	c.Delete(key)
	return c
}

// Trigger is a phase's advancement condition.
type Trigger struct {
	Event string
	Count int    // at least 1
	Match *Value // predicate on the event content, or nil
	After time.Duration
	// HasAfter says After was given ("0s" is a valid timeout).
	HasAfter bool
}

// TriggerFromValue reads a trigger object.
func TriggerFromValue(v *Value) (Trigger, error) {
	t := Trigger{Event: v.Get("event").StringOr(""), Count: 1}
	if c := v.Get("count"); present(c) {
		if c.Kind != Int || c.Int < 1 {
			return t, errors.New("trigger.count must be a positive integer")
		}
		t.Count = int(min(c.Int, 1<<31-1))
	}
	if m := v.Get("match"); present(m) {
		t.Match = m
	}
	if a := v.Get("after"); present(a) {
		d, err := ParseDuration(a.StringOr(""))
		if err != nil {
			return t, fmt.Errorf("trigger.after: %w", err)
		}
		t.After, t.HasAfter = d, true
	}
	return t, nil
}

// ProtocolEvent is one event an actor observed: its OATF event type
// ("tools/call", "tool_call_start") and the content a trigger sees.
type ProtocolEvent struct {
	Type    string
	Content *Value
}

// TriggerState is the per-phase state of a trigger.
type TriggerState struct{ EventCount int }

// Reasons for advancing.
const (
	ReasonTimeout      = "timeout"
	ReasonEventMatched = "event_matched"
)

// TriggerResult is the outcome of EvaluateTrigger.
type TriggerResult struct {
	Advanced bool
	Reason   string // ReasonTimeout or ReasonEventMatched when Advanced
	State    TriggerState
}

// EvaluateTrigger decides whether a phase advances (SDK §5.8): a timeout
// first, then the event type, then the match predicate; only a matching
// event is counted.
func EvaluateTrigger(t Trigger, ev *ProtocolEvent, elapsed time.Duration, st TriggerState) TriggerResult {
	if t.HasAfter && elapsed >= t.After {
		return TriggerResult{Advanced: true, Reason: ReasonTimeout, State: st}
	}
	if ev == nil || t.Event == "" || ev.Type != t.Event {
		return TriggerResult{State: st}
	}
	if t.Match != nil && !EvaluatePredicate(t.Match, ev.Content) {
		return TriggerResult{State: st}
	}
	st.EventCount++
	if st.EventCount >= max(t.Count, 1) {
		return TriggerResult{Advanced: true, Reason: ReasonEventMatched, State: st}
	}
	return TriggerResult{State: st}
}

// ExtractProtocol returns the protocol of a mode: the mode without its
// "_server" or "_client" suffix (SDK §5.9).
func ExtractProtocol(mode string) string {
	if p, ok := strings.CutSuffix(mode, "_server"); ok {
		return p
	}
	p, _ := strings.CutSuffix(mode, "_client")
	return p
}

// ComputeEffectiveState returns the state in force at phases[index] (SDK
// §5.10): the phase's own state, or else a copy of the nearest earlier one.
// State is replaced whole, never merged.
func ComputeEffectiveState(phases []*Value, index int) *Value {
	for i := min(index, len(phases)-1); i >= 0; i-- {
		if s := phases[i].Get("state"); present(s) {
			return s.Clone()
		}
	}
	return nil
}
