package aguigw

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/transport"
)

// Holding text back.
//
// An injected directive can be split over any number of
// TEXT_MESSAGE_CONTENT deltas ("ignore previous" + " instructions"), and a
// delta that has reached the client cannot be taken back. So the gateway
// holds a message's deltas until its TEXT_MESSAGE_END (reasoning messages:
// REASONING_MESSAGE_END; tool-call arguments: TOOL_CALL_END), inspects the
// whole text once, and then releases the deltas unchanged, or one delta
// carrying the quarantine marker, or ends the run. The client sees each
// message appear at once when it is complete instead of token by token:
// the latency of a message becomes the time the agent takes to finish it.
// Chunk streams, which have no END, are held until the event that closes
// them (chunks.go). Other events are not delayed; a held message's deltas
// are released after the events that arrived while it was held, still
// before its END.

// errGone stops a run whose client went away: nothing more can be written.
var errGone = errors.New("aguigw: the client went away")

// refused carries a refusal through a run's error returns, with the event
// it refused and the findings that refused it.
type refused struct {
	*deny.Denial
	ev       *event
	findings []secproc.Finding
}

func (r *refused) Error() string { return r.Denial.String() }

// stop ends the run for d.
func stop(d *deny.Denial) *refused { return &refused{Denial: d} }

// run is the state of one relayed run. It is used by the goroutine serving
// the POST only.
type run struct {
	h               *Handler
	scope           scope
	threadID, runID string
	system          map[string]sysMessage // the client's system and developer messages, by id
	users           map[string]string     // the client's user messages' content (encoded), by id

	w         http.ResponseWriter
	tools     map[string]string // toolCallId → toolCallName
	held      map[string]*held  // "text:"+messageId, "args:"+toolCallId
	heldBytes int
	open      map[string]bool // started and not yet ended: "text:"+messageId, "reasoning:"+messageId, "tool:"+toolCallId
	ended     string          // "": the run goes on; else the RUN_FINISHED or RUN_ERROR that ended it
}

// held is a message whose deltas wait for its END event.
type held struct {
	events []*event
	text   strings.Builder
	kind   secproc.Kind
	tool   string
	others verdict // on the events' members other than the delta, already applied to them
	chunk  string  // a chunk stream's kind (text, reasoning, tool); "" for a message
	id     string  // a chunk stream's messageId or toolCallId
}

// event returns the Event for a message of this run.
func (rn *run) event(typ, canonical string) Event {
	return Event{Upstream: rn.h.opts.Name, Principal: rn.scope.principal, Direction: "upstream",
		ThreadID: rn.threadID, RunID: rn.runID, Type: typ, Canonical: canonical}
}

// relay reads the upstream's event stream and relays it event by event
// until it ends or an event is refused.
func (rn *run) relay(ctx context.Context, w http.ResponseWriter, body io.Reader) {
	rn.w, rn.tools, rn.held, rn.open = w, map[string]string{}, map[string]*held{}, map[string]bool{}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	maxBytes, _ := rn.h.limits()
	events := transport.NewEventReader(body, maxBytes)
	for {
		var err error
		sev, rerr := events.Next()
		switch {
		case rerr == io.EOF:
			err = rn.finish(ctx)
			if err == nil && rn.ended == "" {
				// A stream cut short ends as cleanly as a whole one on
				// the wire: the client is told the run did not finish.
				err = stop(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleEnded,
					Reason: "the upstream agent's stream ended without RUN_FINISHED or RUN_ERROR"})
			}
		case ctx.Err() != nil:
			e := rn.event("", "")
			e.Decision, e.Stage, e.Rule, e.Reason = "deny", StageUpstream, string(deny.RuleCancelled), "the client went away"
			_ = rn.h.record(ctx, e)
			return
		case errors.Is(rerr, transport.ErrEventTooLarge):
			err = stop(&deny.Denial{Stage: StageWire, Rule: deny.Rule(jsonrpc.RuleSize),
				Reason: "an event of the upstream agent is larger than " + strconv.Itoa(maxBytes) + " bytes"})
		case rerr != nil:
			err = stop(&deny.Denial{Stage: StageUpstream, Rule: deny.RuleEnded, Reason: "the upstream agent's stream broke off: " + rerr.Error()})
		default:
			ev, perr := parseEvent(sev.Name, sev.Data, rn.h.opts.Limits)
			if perr != nil {
				pe := perr.(*errEvent)
				err = stop(&deny.Denial{Stage: StageWire, Rule: pe.rule, Reason: pe.reason})
				break
			}
			ev.name = sev.Name
			err = rn.handle(ctx, ev)
		}
		var r *refused
		if errors.As(err, &r) {
			rn.end(ctx, r)
			return
		}
		if err != nil || rerr == io.EOF {
			return
		}
	}
}

// end records d and ends the run with a RUN_ERROR naming its stage and rule.
func (rn *run) end(ctx context.Context, r *refused) {
	e := rn.event("", "")
	if r.ev != nil {
		e.Type, e.Canonical = r.ev.typ, r.ev.canonical
	}
	d := r.Denial
	e.Decision, e.Stage, e.Rule, e.Reason, e.Findings = "deny", d.Stage, string(d.Rule), d.Reason, r.findings
	if err := rn.h.record(ctx, e); err != nil {
		d = auditDenial(err)
	}
	_ = rn.write("", runError(d))
}

// handle inspects one event and relays it, holds it, or refuses it.
func (rn *run) handle(ctx context.Context, ev *event) error {
	err := rn.dispatch(ctx, ev)
	var r *refused
	if errors.As(err, &r) && r.ev == nil {
		r.ev = ev
	}
	return err
}

func (rn *run) dispatch(ctx context.Context, ev *event) error {
	if d := rn.sequence(ev); d != nil {
		return stop(d)
	}
	if _, isChunk := chunkKinds[ev.canonical]; !isChunk {
		if err := rn.closeChunks(ctx, ev); err != nil {
			return err
		}
	}
	switch ev.canonical {
	case TypeTextStart, TypeReasoningMsgStart:
		if d := rn.checkRole(ev); d != nil {
			return stop(d)
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "")
	case TypeTextChunk, TypeReasoningMsgChunk:
		if d := rn.checkRole(ev); d != nil {
			return stop(d)
		}
		return rn.chunk(ctx, ev)
	case TypeTextContent, TypeReasoningMsgContent:
		if id := ev.str("messageId"); id != "" {
			return rn.hold(ctx, ev, "text:"+id, ev.str("delta"), secproc.KindToolResult, "")
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "", "delta") // 0.x THINKING_TEXT_MESSAGE_CONTENT has no id
	case TypeTextEnd, TypeReasoningMsgEnd:
		if id := ev.str("messageId"); id != "" {
			if err := rn.release(ctx, "text:"+id); err != nil {
				return err
			}
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "")
	case TypeToolStart:
		rn.tools[ev.str("toolCallId")] = ev.str("toolCallName")
		return rn.fields(ctx, ev, secproc.KindToolResult, "")
	case TypeToolArgs:
		id := ev.str("toolCallId")
		return rn.hold(ctx, ev, "args:"+id, ev.str("delta"), secproc.KindToolCall, rn.tools[id])
	case TypeToolEnd:
		if err := rn.release(ctx, "args:"+ev.str("toolCallId")); err != nil {
			return err
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "")
	case TypeToolChunk:
		return rn.chunk(ctx, ev)
	case TypeToolResult:
		return rn.fields(ctx, ev, secproc.KindToolResult, rn.tools[ev.str("toolCallId")], "content")
	case TypeStateSnapshot, TypeActivitySnapshot:
		name := map[string]string{TypeStateSnapshot: "snapshot", TypeActivitySnapshot: "content"}[ev.canonical]
		if raw, ok := ev.member(name); ok {
			if d := checkInstructions(decodeAny(raw), rn.system, "."+name); d != nil {
				return stop(d)
			}
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "", name)
	case TypeStateDelta, TypeActivityDelta:
		name := map[string]string{TypeStateDelta: "delta", TypeActivityDelta: "patch"}[ev.canonical]
		if raw, ok := ev.member(name); ok {
			if d := checkPatch(decodeAny(raw), rn.system, "."+name); d != nil {
				return stop(d)
			}
		}
		return rn.fields(ctx, ev, secproc.KindToolResult, "", name)
	case TypeMessagesSnapshot:
		return rn.messagesSnapshot(ctx, ev)
	case TypeRunFinished, TypeRunError:
		rn.ended = ev.canonical
		// A message left open is released before the run ends.
		if err := rn.finish(ctx); err != nil {
			return err
		}
	}
	// Every other event, known or not: all its members are untrusted text.
	return rn.fields(ctx, ev, secproc.KindToolResult, "")
}

// Lifecycles: the content of a message or a tool call belongs to it only
// between its START and its END, which is also the window in which the
// gateway holds it and inspects it whole. An event outside that window
// would be inspected apart from the rest, while a lenient client appends
// it to the message it names ("ignore all previous" END, then
// " instructions" for the same id), and a strict one (the TypeScript
// SDK's verifier) fails the run without saying why. So the wire stage
// refuses it, as it refuses any event after the run's RUN_FINISHED or
// RUN_ERROR but a new RUN_STARTED (and a RUN_ERROR after RUN_FINISHED).
var lifecycle = map[string]struct {
	key, id string
	phase   byte // 's' opens, 'c' needs it open, 'e' needs it open and closes it
}{
	TypeTextStart:           {"text:", "messageId", 's'},
	TypeTextContent:         {"text:", "messageId", 'c'},
	TypeTextEnd:             {"text:", "messageId", 'e'},
	TypeReasoningMsgStart:   {"reasoning:", "messageId", 's'},
	TypeReasoningMsgContent: {"reasoning:", "messageId", 'c'},
	TypeReasoningMsgEnd:     {"reasoning:", "messageId", 'e'},
	TypeToolStart:           {"tool:", "toolCallId", 's'},
	TypeToolArgs:            {"tool:", "toolCallId", 'c'},
	TypeToolEnd:             {"tool:", "toolCallId", 'e'},
}

// sequence refuses an event out of its place in the run (wire stage, rule
// sequence). Events without an id (0.x THINKING_TEXT_MESSAGE_*) are not
// tracked.
func (rn *run) sequence(ev *event) *deny.Denial {
	bad := func(reason string) *deny.Denial {
		return &deny.Denial{Stage: StageWire, Rule: deny.RuleSequence, Reason: reason}
	}
	switch {
	case ev.canonical == TypeRunStarted:
		rn.ended = ""
		return nil
	case rn.ended == TypeRunFinished && ev.canonical == TypeRunError:
	case rn.ended != "":
		return bad(ev.canonical + " after the run ended with " + rn.ended + "; only a new RUN_STARTED may follow")
	}
	lc, ok := lifecycle[ev.canonical]
	if !ok {
		return nil
	}
	if _, has := ev.member(lc.id); !has {
		return nil
	}
	id := ev.str(lc.id)
	key := lc.key + id
	switch {
	case lc.phase == 's' && rn.open[key]:
		return bad(ev.canonical + ": " + lc.id + " " + quoteShort(id) + " is already open; end it first")
	case lc.phase == 's':
		rn.open[key] = true
	case !rn.open[key]:
		return bad(ev.canonical + ": no " + lc.id + " " + quoteShort(id) + " is open (it was never started, or has ended)")
	case lc.phase == 'e':
		delete(rn.open, key)
	}
	return nil
}

// checkRole refuses a message the agent starts with a system or developer
// role.
func (rn *run) checkRole(ev *event) *deny.Denial {
	if role := ev.str("role"); instructionRoles[role] {
		return &deny.Denial{Stage: StageIntegrity, Rule: deny.RuleSystemMessage,
			Reason: ev.canonical + " starts a " + role + " message; only the client sets instructions"}
	}
	return nil
}

// fields inspects the named members of ev as kind, and every other member
// but "type" as untrusted text (rawEvent, metadata and the like, which
// the SDK's client keeps), and relays ev, quarantined if need be.
func (rn *run) fields(ctx context.Context, ev *event, kind secproc.Kind, tool string, names ...string) error {
	v := &verdict{}
	rn.inspectMembers(ctx, v, ev, "", kind, tool, names...)
	return rn.decide(ctx, ev, v)
}

// inspectMembers adds to v the findings on the named members of ev, as
// kind, and on every other member but "type" and skip (which its caller
// inspects its own way), as tool results.
func (rn *run) inspectMembers(ctx context.Context, v *verdict, ev *event, skip string, kind secproc.Kind, tool string, names ...string) {
	jsonrpc.Members(ev.raw, func(name string, raw []byte) {
		switch {
		case name == "type" || name == skip:
		case slices.Contains(names, name):
			rn.h.inspect(ctx, v, rn.scope, kind, tool, memberPath("", name), raw)
		default:
			rn.h.inspect(ctx, v, rn.scope, secproc.KindToolResult, "", memberPath("", name), raw)
		}
	})
}

// decide relays ev according to v.
func (rn *run) decide(ctx context.Context, ev *event, v *verdict) error {
	if d := v.denial(); d != nil {
		return &refused{Denial: d, findings: v.findings}
	}
	raw := ev.raw
	if len(v.targets) > 0 {
		raw = quarantine(raw, "", v.targets)
	}
	return rn.emit(ctx, ev, raw, v)
}

// messagesSnapshot checks that no system or developer message is added or
// changed, and inspects every message that is not the client's own: its
// instructions, and its user messages as it sent them. A user message the
// agent side adds or rewrites is inspected like tool output: the client
// keeps it and sends it back as the user's own on the next run.
func (rn *run) messagesSnapshot(ctx context.Context, ev *event) error {
	raw, _ := ev.member("messages")
	if d := checkInstructions(decodeAny(raw), rn.system, ".messages"); d != nil {
		return stop(d)
	}
	var msgs []json.RawMessage
	if jsonrpc.Unmarshal(raw, &msgs) != nil {
		return stop(&deny.Denial{Stage: StageWire, Rule: deny.RuleShape, Reason: "MESSAGES_SNAPSHOT: messages is not an array"})
	}
	v := &verdict{}
	for i, m := range msgs {
		o, _ := decodeAny(m).(map[string]any)
		role, _ := o["role"].(string)
		id, _ := o["id"].(string)
		if own, ok := rn.users[id]; instructionRoles[role] || role == "user" && ok && own == encode(o["content"]) {
			continue
		}
		rn.h.inspect(ctx, v, rn.scope, secproc.KindToolResult, "", ".messages["+strconv.Itoa(i)+"]", m)
	}
	rn.inspectMembers(ctx, v, ev, "messages", secproc.KindToolResult, "")
	return rn.decide(ctx, ev, v)
}

// hold keeps ev until the END event of its message (key). Its members
// other than the delta (metadata, rawEvent) are inspected now, on their
// own, and quarantined in the event that waits.
func (rn *run) hold(ctx context.Context, ev *event, key, delta string, kind secproc.Kind, tool string) error {
	if rn.heldBytes+len(ev.raw) > rn.h.maxHeld {
		return stop(&deny.Denial{Stage: StageSecurity, Rule: deny.RuleHoldLimit,
			Reason: "more than " + strconv.Itoa(rn.h.maxHeld) + " bytes of deltas wait for their END event; they cannot be inspected whole"})
	}
	m := rn.held[key]
	if m == nil {
		m = &held{kind: kind, tool: tool}
		rn.held[key] = m
	}
	rn.inspectMembers(ctx, &m.others, ev, "delta", secproc.KindToolResult, "")
	if d := m.others.denial(); d != nil {
		return &refused{Denial: d, findings: m.others.findings}
	}
	if len(m.others.targets) > 0 {
		ev.raw = quarantine(ev.raw, "", m.others.targets)
	}
	m.events = append(m.events, ev)
	m.text.WriteString(delta)
	rn.heldBytes += len(ev.raw)
	return nil
}

// release inspects the held message key as a whole and relays its deltas:
// unchanged, or as one delta carrying the marker. The verdict is recorded
// on the last delta relayed.
func (rn *run) release(ctx context.Context, key string) error {
	m := rn.held[key]
	if m == nil {
		return nil
	}
	delete(rn.held, key)
	for _, ev := range m.events {
		rn.heldBytes -= len(ev.raw)
	}
	text := m.text.String()
	raw := jsonrpc.Quote(text)
	if m.kind == secproc.KindToolCall {
		_, maxDepth := rn.h.limits()
		if d := checkArguments(text, jsonrpc.Limits{MaxBytes: len(text) + 1, MaxDepth: maxDepth}); d != nil {
			return &refused{Denial: d, ev: m.events[0]}
		}
		if strings.TrimSpace(text) != "" {
			raw = []byte(text)
		}
	}
	v := &verdict{}
	rn.h.inspect(ctx, v, rn.scope, m.kind, m.tool, ".delta", raw)
	if d := v.denial(); d != nil {
		return &refused{Denial: d, ev: m.events[0], findings: v.findings}
	}
	if len(v.targets) > 0 {
		first := m.events[0]
		marked := Marker(utf8.RuneCountInString(text), v.qrule)
		out := rewrite(first.raw, "", map[string]string{".delta": v.qrule}, func([]byte, string) []byte { return jsonrpc.Quote(marked) })
		return rn.emit(ctx, first, out, v.merge(&m.others))
	}
	v = v.merge(&m.others)
	for i, ev := range m.events {
		var ve *verdict
		if i == len(m.events)-1 {
			ve = v
		}
		if err := rn.emit(ctx, ev, ev.raw, ve); err != nil {
			return err
		}
	}
	return nil
}

// checkArguments is the wire check of a tool call's whole arguments: a
// JSON object, strict (no duplicate member, which readers resolve
// differently), or nothing at all; lim bounds its depth. Arguments that are not JSON would be
// inspected as one string, while a client repairs them (the TypeScript
// SDK reads truncated JSON as the object it begins) and calls the tool
// with what the gateway never saw as arguments.
func checkArguments(text string, lim jsonrpc.Limits) *deny.Denial {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if err := jsonrpc.Validate([]byte(text), lim); err != nil {
		d := &deny.Denial{Stage: StageWire, Rule: deny.RuleSyntax, Reason: "TOOL_CALL_ARGS: the arguments are not acceptable JSON: " + err.Error()}
		var re *jsonrpc.Error
		if errors.As(err, &re) {
			d.Reason = "TOOL_CALL_ARGS: the arguments are not acceptable JSON: " + re.Message
			if r, ok := jsonrpc.Lookup(re.Data, "rule"); ok {
				name, _ := jsonrpc.String(r)
				d.Rule = deny.Rule(name)
			}
		}
		return d
	}
	if strings.TrimSpace(text)[0] != '{' {
		return &deny.Denial{Stage: StageWire, Rule: deny.RuleShape, Reason: "TOOL_CALL_ARGS: the arguments are not a JSON object"}
	}
	return nil
}

// finish releases what is still held when the stream ends.
func (rn *run) finish(ctx context.Context) error {
	keys := make([]string, 0, len(rn.held))
	for k := range rn.held {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := rn.release(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// emit records ev as it leaves (raw) with verdict v (nil: nothing found),
// then writes it.
func (rn *run) emit(ctx context.Context, ev *event, raw []byte, v *verdict) error {
	e := rn.event(ev.typ, ev.canonical)
	e.Decision, e.Raw = "allow", raw
	if v != nil {
		e.Decision, e.Findings, e.Rule = v.decision(), v.findings, v.qrule
	}
	if err := rn.h.record(ctx, e); err != nil {
		return stop(auditDenial(err))
	}
	return rn.write(ev.name, raw)
}

// write writes one SSE event and flushes it.
func (rn *run) write(name string, data []byte) error {
	if err := transport.WriteEvent(rn.w, transport.Event{Name: name, Data: data}); err != nil {
		return errGone
	}
	if err := http.NewResponseController(rn.w).Flush(); err != nil {
		return errGone
	}
	return nil
}
