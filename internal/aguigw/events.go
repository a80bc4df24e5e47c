package aguigw

import (
	"bytes"
	"errors"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Canonical event types (the @ag-ui/core 1.0 names) that the gateway looks
// into. Other types are relayed with a generic inspection of their members.
const (
	TypeRunStarted          = "RUN_STARTED"
	TypeRunFinished         = "RUN_FINISHED"
	TypeRunError            = "RUN_ERROR"
	TypeTextStart           = "TEXT_MESSAGE_START"
	TypeTextContent         = "TEXT_MESSAGE_CONTENT"
	TypeTextEnd             = "TEXT_MESSAGE_END"
	TypeTextChunk           = "TEXT_MESSAGE_CHUNK"
	TypeToolStart           = "TOOL_CALL_START"
	TypeToolArgs            = "TOOL_CALL_ARGS"
	TypeToolEnd             = "TOOL_CALL_END"
	TypeToolChunk           = "TOOL_CALL_CHUNK"
	TypeToolResult          = "TOOL_CALL_RESULT"
	TypeStateSnapshot       = "STATE_SNAPSHOT"
	TypeStateDelta          = "STATE_DELTA"
	TypeMessagesSnapshot    = "MESSAGES_SNAPSHOT"
	TypeActivitySnapshot    = "ACTIVITY_SNAPSHOT"
	TypeActivityDelta       = "ACTIVITY_DELTA"
	TypeReasoningStart      = "REASONING_START"
	TypeReasoningEnd        = "REASONING_END"
	TypeReasoningMsgStart   = "REASONING_MESSAGE_START"
	TypeReasoningMsgContent = "REASONING_MESSAGE_CONTENT"
	TypeReasoningMsgEnd     = "REASONING_MESSAGE_END"
	TypeReasoningMsgChunk   = "REASONING_MESSAGE_CHUNK"
	TypeReasoningEncrypted  = "REASONING_ENCRYPTED_VALUE"
	TypeStepStarted         = "STEP_STARTED"
	TypeStepFinished        = "STEP_FINISHED"
	TypeSubagentStarted     = "SUBAGENT_STARTED"
	TypeSubagentFinished    = "SUBAGENT_FINISHED"
	TypeSubagentError       = "SUBAGENT_ERROR"
	TypeRaw                 = "RAW"
	TypeCustom              = "CUSTOM"
)

// preV1 maps the pre-1.0 names that 1.0 renamed (the deprecated THINKING_*
// events) to their 1.0 equivalents.
var preV1 = map[string]string{
	"THINKING_START":                "REASONING_START",
	"THINKING_END":                  "REASONING_END",
	"THINKING_TEXT_MESSAGE_START":   "REASONING_MESSAGE_START",
	"THINKING_TEXT_MESSAGE_CONTENT": "REASONING_MESSAGE_CONTENT",
	"THINKING_TEXT_MESSAGE_END":     "REASONING_MESSAGE_END",
}

// Canonical returns the canonical name of an event type: upper-cased (so
// that OATF's "tool_call_start" and any case variant a lenient client might
// accept are inspected like TOOL_CALL_START), with the pre-1.0 THINKING_*
// names mapped to REASONING_*.
func Canonical(typ string) string {
	u := strings.ToUpper(typ)
	if c, ok := preV1[u]; ok {
		return c
	}
	return u
}

// required lists, per canonical type, the members that must be strings
// (s), arrays (a), strings or arrays (c: 1.0 content, text or content
// parts) or present (v) for the gateway to inspect the event.
var required = map[string][]struct {
	name string
	kind byte
}{
	TypeTextStart:           {{"messageId", 's'}},
	TypeTextContent:         {{"messageId", 's'}, {"delta", 's'}},
	TypeTextEnd:             {{"messageId", 's'}},
	TypeToolStart:           {{"toolCallId", 's'}, {"toolCallName", 's'}},
	TypeToolArgs:            {{"toolCallId", 's'}, {"delta", 's'}},
	TypeToolEnd:             {{"toolCallId", 's'}},
	TypeToolResult:          {{"toolCallId", 's'}, {"content", 'c'}},
	TypeStateSnapshot:       {{"snapshot", 'v'}},
	TypeStateDelta:          {{"delta", 'a'}},
	TypeMessagesSnapshot:    {{"messages", 'a'}},
	TypeReasoningMsgContent: {{"delta", 's'}},
}

// event is one parsed AG-UI event.
type event struct {
	raw       []byte // the exact data of the SSE event
	name      string // the SSE "event:" name, written back as it came
	typ       string // "type" as sent
	canonical string
}

// errEvent is a refused event: the rule and the reason.
type errEvent struct {
	rule   deny.Rule
	reason string
}

func (e *errEvent) Error() string { return e.reason }

// parseEvent validates the data of one SSE event: strict JSON (no duplicate
// member names, valid UTF-8, bounded depth and size), an object whose
// "type" is a non-empty string, agreeing with the SSE "event:" name when
// there is one (a disagreement is a parser differential), with the members
// the gateway inspects of the right JSON type. Errors are *errEvent.
func parseEvent(name string, data []byte, lim jsonrpc.Limits) (*event, error) {
	if err := jsonrpc.Validate(data, lim); err != nil {
		rule := deny.RuleSyntax
		var re *jsonrpc.Error
		if errors.As(err, &re) {
			if r, ok := jsonrpc.Lookup(re.Data, "rule"); ok {
				name, _ := jsonrpc.String(r)
				rule = deny.Rule(name)
			}
			return nil, &errEvent{rule, "the event is not acceptable JSON: " + re.Message}
		}
		return nil, &errEvent{rule, "the event is not acceptable JSON: " + err.Error()}
	}
	data = bytes.TrimSpace(data)
	if data[0] != '{' {
		return nil, &errEvent{deny.RuleNotObject, "an AG-UI event is a JSON object"}
	}
	t, ok := jsonrpc.Lookup(data, "type")
	if !ok {
		return nil, &errEvent{deny.RuleType, `the event has no "type"`}
	}
	typ, ok := jsonrpc.String(t)
	if !ok || typ == "" {
		return nil, &errEvent{deny.RuleType, `the event's "type" is not a non-empty string`}
	}
	ev := &event{raw: data, typ: typ, canonical: Canonical(typ)}
	if name != "" && name != "message" && Canonical(name) != ev.canonical {
		return nil, &errEvent{deny.RuleEventName, "the SSE event name " + quoteShort(name) + " disagrees with the event's type " + quoteShort(typ)}
	}
	for _, m := range required[ev.canonical] {
		v, ok := jsonrpc.Lookup(data, m.name)
		good := ok
		switch {
		case !ok:
		case m.kind == 's':
			_, good = jsonrpc.String(v)
		case m.kind == 'a':
			good = len(v) > 0 && v[0] == '['
		case m.kind == 'c':
			_, good = jsonrpc.String(v)
			good = good || len(v) > 0 && v[0] == '['
		}
		if !good {
			return nil, &errEvent{deny.RuleShape, ev.canonical + ": member " + quoteShort(m.name) + " is missing or of the wrong type"}
		}
	}
	return ev, nil
}

// str returns the string member name of ev, or "".
func (ev *event) str(name string) string {
	v, ok := jsonrpc.Lookup(ev.raw, name)
	if !ok {
		return ""
	}
	s, _ := jsonrpc.String(v)
	return s
}

// member returns the raw member name of ev.
func (ev *event) member(name string) ([]byte, bool) { return jsonrpc.Lookup(ev.raw, name) }

func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return string(jsonrpc.Quote(s))
}
