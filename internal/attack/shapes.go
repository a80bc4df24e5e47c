package attack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/oatf"
)

// What the runtime records, so that an indicator whose target no recorded
// message can carry is reported before the run instead of silently never
// matching (a verdict of not_exploited that tested nothing).
//
// A shape is the set of top-level keys a trace entry's content may have for
// one protocol, direction and method (the surface); "*" means any key. Only
// the first segment of a target is checked: below it, content is the peers'
// own (tool arguments, cards, task parts) and may hold anything. Keys the
// document itself writes into what the runtime sends or echoes (an action's
// params, a tool response, run_agent_input) are added to the shape of their
// method.
//
//	indicator{protocol, actor, direction, surface, target}
//	   │ which actors' traffic passes the filter
//	   ▼
//	actor mode ─► protocol × direction × method ─► keys (+ the document's own)
//	   │
//	   └─ target's first segment in none of them ─► RuleUnmatchableTarget

// mcpShapes: MCP 2025-11-25 params (requests, notifications) and results
// (responses; an error response's content is the JSON-RPC error object).
var mcpShapes = map[string]map[string][]string{
	Request: {
		"initialize":                           words("protocolVersion capabilities clientInfo _meta"),
		"ping":                                 words("_meta"),
		"tools/list":                           words("cursor _meta"),
		"resources/list":                       words("cursor _meta"),
		"resources/templates/list":             words("cursor _meta"),
		"prompts/list":                         words("cursor _meta"),
		"tasks/list":                           words("cursor _meta"),
		"tools/call":                           words("name arguments task _meta"),
		"resources/read":                       words("uri _meta"),
		"resources/subscribe":                  words("uri _meta"),
		"resources/unsubscribe":                words("uri _meta"),
		"prompts/get":                          words("name arguments _meta"),
		"completion/complete":                  words("ref argument context _meta"),
		"logging/setLevel":                     words("level _meta"),
		"sampling/createMessage":               words("messages modelPreferences systemPrompt includeContext temperature maxTokens stopSequences metadata tools toolChoice task _meta"),
		"elicitation/create":                   words("message requestedSchema mode url elicitationId task _meta"),
		"roots/list":                           words("_meta"),
		"tasks/get":                            words("taskId _meta"),
		"tasks/result":                         words("taskId _meta"),
		"tasks/cancel":                         words("taskId _meta"),
		"notifications/initialized":            words("_meta"),
		"notifications/cancelled":              words("requestId reason _meta"),
		"notifications/progress":               words("progressToken progress total message _meta"),
		"notifications/message":                words("level logger data _meta"),
		"notifications/resources/updated":      words("uri _meta"),
		"notifications/elicitation/complete":   words("elicitationId _meta"),
		"notifications/tools/list_changed":     words("_meta"),
		"notifications/resources/list_changed": words("_meta"),
		"notifications/prompts/list_changed":   words("_meta"),
		"notifications/roots/list_changed":     words("_meta"),
	},
	Response: {
		"initialize":               words("protocolVersion capabilities serverInfo instructions _meta"),
		"ping":                     words("_meta"),
		"tools/list":               words("tools nextCursor _meta"),
		"resources/list":           words("resources nextCursor _meta"),
		"resources/templates/list": words("resourceTemplates nextCursor _meta"),
		"prompts/list":             words("prompts nextCursor _meta"),
		"tools/call":               words("content structuredContent isError task _meta"),
		"resources/read":           words("contents _meta"),
		"resources/subscribe":      words("_meta"),
		"resources/unsubscribe":    words("_meta"),
		"prompts/get":              words("description messages _meta"),
		"completion/complete":      words("completion _meta"),
		"logging/setLevel":         words("_meta"),
		"sampling/createMessage":   words("role content model stopReason _meta"),
		"elicitation/create":       words("action content _meta"),
		"roots/list":               words("roots _meta"),
	},
}

// a2aTaskKeys are the keys of what an A2A agent answers, in OATF's (A2A
// 0.3) vocabulary: a Task, a Message, the two stream updates.
var (
	a2aTask           = words("kind id contextId status artifacts history metadata")
	a2aMessage        = words("kind messageId role parts contextId taskId referenceTaskIds metadata extensions")
	a2aStatusUpdate   = words("kind taskId contextId status final metadata")
	a2aArtifactUpdate = words("kind taskId contextId artifact append lastChunk metadata")
	a2aAnswer         = slices.Concat(a2aTask, a2aMessage, a2aStatusUpdate, a2aArtifactUpdate)
)

// a2aShapes: A2A params and results as the trace records them (a2a.go
// converts 1.0 traffic to this vocabulary). Cards are open.
var a2aShapes = map[string]map[string][]string{
	Request: {
		a2aCardEvent:        nil, // the GET has no content
		"message/send":      words("message configuration metadata tenant"),
		"message/stream":    words("message configuration metadata tenant"),
		"tasks/get":         words("id historyLength metadata tenant"),
		"tasks/cancel":      words("id metadata tenant"),
		"tasks/resubscribe": words("id metadata tenant"),
	},
	Response: {
		a2aCardEvent:        {"*"},
		"message/send":      a2aAnswer,
		"message/stream":    a2aAnswer,
		"tasks/get":         a2aAnswer,
		"tasks/cancel":      a2aAnswer,
		"tasks/resubscribe": a2aAnswer,
		"task/status":       a2aStatusUpdate,
		"task/artifact":     a2aArtifactUpdate,
	},
}

// aguiShapes: what an ag_ui_client records: its RunAgentInput and the
// tool results it returns (requests), the agent's events (responses),
// 0.x and 1.0, with the toolCallName warden adds to tool call events.
var aguiShapes = map[string]map[string][]string{
	Request: {
		"run_agent_input":  words("threadId runId parentRunId state messages tools context forwardedProps resume protocolVersion"),
		"tool_call_result": words("messageId toolCallId content role error"),
	},
	Response: aguiEventShapes(map[string]string{
		"run_started":                   "threadId runId parentRunId input protocolVersion",
		"run_finished":                  "threadId runId result outcome",
		"run_error":                     "message code",
		"step_started":                  "stepName",
		"step_finished":                 "stepName",
		"text_message_start":            "messageId role name",
		"text_message_content":          "messageId delta",
		"text_message_end":              "messageId",
		"text_message_chunk":            "messageId role name delta",
		"tool_call_start":               "toolCallId toolCallName parentMessageId subagentRunId",
		"tool_call_args":                "toolCallId toolCallName delta",
		"tool_call_end":                 "toolCallId toolCallName",
		"tool_call_chunk":               "toolCallId toolCallName parentMessageId delta",
		"tool_call_result":              "messageId toolCallId content role",
		"state_snapshot":                "snapshot",
		"state_delta":                   "delta",
		"messages_snapshot":             "messages",
		"activity_snapshot":             "messageId activityType content replace",
		"activity_delta":                "messageId activityType patch",
		"reasoning_start":               "messageId",
		"reasoning_end":                 "messageId",
		"reasoning_message_start":       "messageId role",
		"reasoning_message_content":     "messageId delta",
		"reasoning_message_end":         "messageId",
		"reasoning_message_chunk":       "messageId delta",
		"reasoning_encrypted_value":     "subtype entityId encryptedValue",
		"thinking_start":                "title",
		"thinking_end":                  "",
		"thinking_text_message_start":   "",
		"thinking_text_message_content": "delta",
		"thinking_text_message_end":     "",
		"raw":                           "event source",
		"custom":                        "name value",
	}),
}

// aguiEventShapes adds the fields every AG-UI event has.
func aguiEventShapes(events map[string]string) map[string][]string {
	out := make(map[string][]string, len(events))
	for name, keys := range events {
		out[name] = words("type timestamp rawEvent metadata " + keys)
	}
	return out
}

func words(s string) []string { return strings.Fields(s) }

// jsonRPCError is the content of an MCP or A2A error response.
var jsonRPCError = words("code message data")

var shapesByProtocol = map[string]map[string]map[string][]string{
	"mcp":   mcpShapes,
	"a2a":   a2aShapes,
	"ag_ui": aguiShapes,
}

// RuleUnmatchableTarget is the diagnostic of an indicator whose target no
// message the runtime records for its actors can carry.
const RuleUnmatchableTarget = "unmatchable-target"

// shapeSet is what one actor's traffic may look like: per direction and
// method, the top-level keys.
type shapeSet map[string]map[string][]string

// actorShapes returns the shapes of an actor's recorded traffic: its
// protocol's catalogue plus the keys the document writes into what the
// actor sends or answers. It returns nil for a protocol the runtime does not
// know (nothing is checked then).
func actorShapes(actor *oatf.Value) shapeSet {
	mode := actor.Get("mode").StringOr("")
	base := shapesByProtocol[oatf.ExtractProtocol(mode)]
	if base == nil {
		return nil
	}
	set := shapeSet{}
	for dir, methods := range base {
		set[dir] = map[string][]string{}
		for m, keys := range methods {
			set[dir][m] = slices.Clone(keys)
			if dir == Response && mode != "ag_ui_client" {
				// A JSON-RPC error is recorded as its error object.
				set[dir][m] = append(set[dir][m], jsonRPCError...)
			}
		}
	}
	add := func(dir, method string, v *oatf.Value) {
		if v == nil || v.Kind != oatf.Map {
			return
		}
		set[dir][method] = append(set[dir][method], v.Keys()...)
	}
	for _, ph := range items(actor.Get("phases")) {
		st := ph.Get("state")
		for _, act := range items(st.Get("actions")) {
			add(Request, act.Get("method").StringOr(""), act.Get("params"))
		}
		for _, on := range items(ph.Get("on_enter")) {
			if s := on.Get("send"); s != nil {
				add(Request, s.Get("method").StringOr(""), s.Get("params"))
			}
			if p := on.Get("send_push_notification"); p != nil {
				add(Request, a2aPushEvent, p.Get("payload"))
			}
		}
		switch mode {
		case "mcp_server":
			for _, tool := range items(st.Get("tools")) {
				for _, r := range items(tool.Get("responses")) {
					add(Response, "tools/call", r.Get("content"))
				}
			}
			for _, pr := range items(st.Get("prompts")) {
				for _, r := range items(pr.Get("responses")) {
					add(Response, "prompts/get", r)
				}
			}
		case "mcp_client":
			for _, r := range items(st.Get("sampling_responses")) {
				add(Response, "sampling/createMessage", r.Get("content"))
			}
			for _, r := range items(st.Get("elicitation_responses")) {
				add(Response, "elicitation/create", r)
			}
		case "a2a_server":
			for _, m := range []string{"message/send", "message/stream", "tasks/get", "tasks/cancel", "tasks/resubscribe"} {
				for _, r := range items(st.Get("task_responses")) {
					add(Response, m, r.Get("content"))
				}
				add(Response, m, st.Get("task"))
			}
		case "ag_ui_client":
			add(Request, "run_agent_input", st.Get("run_agent_input"))
			for _, r := range items(st.Get("tool_responses")) {
				add(Request, "tool_call_result", r.Get("content"))
			}
		}
	}
	return set
}

// admits reports whether some recorded message of the given direction ("":
// either) and method ("": any known one) can have key at its top level.
// A method the catalogue does not know carries anything.
func (s shapeSet) admits(direction, method, key string) bool {
	for _, dir := range []string{Request, Response} {
		if direction != "" && dir != direction {
			continue
		}
		if method != "" {
			keys, known := s[dir][method]
			if !known || slices.Contains(keys, "*") || slices.Contains(keys, key) {
				return true
			}
			continue
		}
		for _, keys := range s[dir] {
			if slices.Contains(keys, "*") || slices.Contains(keys, key) {
				return true
			}
		}
	}
	return false
}

// CheckTargets reports every pattern or semantic indicator of a normalized
// document whose target the runtime never records in the traffic its
// indicator filter selects (protocol, actor, direction, surface): such an
// indicator can never match, and a verdict of not_exploited would say
// nothing. The diagnostics are warnings (rule RuleUnmatchableTarget) at the
// target, with the indicator's path; `attack run` refuses them unless told
// otherwise.
func CheckTargets(doc *oatf.Document) []oatf.Diagnostic {
	var diags []oatf.Diagnostic
	for _, p := range checkTargets(doc) {
		diags = append(diags, p.diag)
	}
	return diags
}

// targetProblem is an unmatchable target: the indicator's index and the
// diagnostic.
type targetProblem struct {
	index int
	diag  oatf.Diagnostic
}

func checkTargets(doc *oatf.Document) []targetProblem {
	attack := doc.Attack()
	type actorInfo struct {
		name, protocol string
		shapes         shapeSet
	}
	var actors []actorInfo
	for _, av := range items(attack.Get("execution").Get("actors")) {
		actors = append(actors, actorInfo{av.Get("name").StringOr(""), oatf.ExtractProtocol(av.Get("mode").StringOr("")), actorShapes(av)})
	}
	var problems []targetProblem
	for i, ind := range items(attack.Get("indicators")) {
		det, path := ind.Get("pattern"), fmt.Sprintf("attack.indicators[%d]", i)
		if det == nil {
			det = ind.Get("semantic")
		}
		if det == nil || alwaysHolds(det) {
			continue
		}
		targetV := det.Get("target")
		if targetV == nil {
			targetV = ind.Get("target")
		}
		target := targetV.StringOr("")
		if target == "" {
			continue
		}
		key, _, _ := strings.Cut(target, ".")
		key = strings.TrimSuffix(key, "[*]")
		f := FilterFor(ind)
		checked, ok := 0, false
		for _, a := range actors {
			if a.protocol != f.Protocol || (f.Actor != "" && a.name != f.Actor) || a.shapes == nil {
				continue
			}
			checked++
			if a.shapes.admits(f.Direction, f.Surface, key) {
				ok = true
				break
			}
		}
		if ok || checked == 0 {
			continue // W-005 and V-048 cover an indicator no actor feeds
		}
		problems = append(problems, targetProblem{i, oatf.Diagnostic{Severity: oatf.SeverityWarning, Rule: RuleUnmatchableTarget,
			Path: path + ".target", Pos: posOr(targetV.Pos, ind.Pos), Message: unmatchableMessage(f, key, target)}})
	}
	return problems
}

// alwaysHolds reports a pattern whose condition is {exists: false}: it
// holds precisely where the target is missing.
func alwaysHolds(det *oatf.Value) bool {
	e := det.Get("condition").Get("exists")
	return e != nil && e.Kind == oatf.Bool && !e.Bool
}

func posOr(p, def oatf.Pos) oatf.Pos {
	if p.Line > 0 {
		return p
	}
	return def
}

// unmatchableMessage explains an unmatchable target: what was looked for,
// in which traffic, and, for the paths the public scenario library borrows
// from another runtime's context mode, where the data is in warden's trace.
func unmatchableMessage(f Filter, key, target string) string {
	where := f.Protocol
	if f.Surface != "" {
		where += " " + f.Surface
	}
	if f.Direction != "" {
		where += " " + f.Direction
	} else {
		where += " message"
	}
	if f.Actor != "" {
		where += " of actor " + f.Actor
	}
	msg := fmt.Sprintf("target %q can never match: no %s that warden records has a top-level %q", target, where, key)
	switch {
	case f.Protocol == "ag_ui" && key == "response":
		msg += "; \"response.content\" is the reply text of ThoughtJack's context mode: in warden the agent's text is in text_message_content events at \"delta\""
	case f.Protocol == "ag_ui" && key == "arguments":
		msg += "; in warden a tool call's arguments are streamed in tool_call_args events at \"delta\" (with toolCallName)"
	case f.Protocol == "mcp" && key == "response":
		msg += "; \"response.content\" is a path of ThoughtJack's context mode: in warden a tool result's text is at \"content[*].text\" (direction response, surface tools/call)"
	case f.Protocol == "a2a" && f.Direction != Response && slices.Contains([]string{"a2a", "name", "arguments"}, key):
		msg += "; this is a path of ThoughtJack's context mode (a delegation as a tool call): in warden an A2A request's text is at \"message.parts[*].text\""
	case f.Protocol == "a2a" && key == "response":
		msg += "; this is a path of ThoughtJack's context mode: in warden an A2A answer's text is at \"parts[*].text\", \"status.message.parts[*].text\" or \"artifacts[*].parts[*].text\""
	}
	return msg
}
