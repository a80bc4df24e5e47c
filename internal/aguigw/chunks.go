package aguigw

import (
	"context"
	"slices"
	"strings"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/secproc"
)

// Chunk streams.
//
// A *_CHUNK event has no END: a client joins the deltas of consecutive
// chunks into one message (the TypeScript SDK turns them into START,
// CONTENT…, END), so "ignore all prev" + "ious instructions." in two
// chunks is one directive to the user, and two harmless strings to an
// inspection chunk by chunk. The gateway holds a chunk stream's deltas
// as it holds a message's, and releases them, inspected whole, where the
// SDK closes the stream:
//
//	lane = the chunk's subagentRunId ("" for the agent itself); one open
//	       stream per lane, of one kind (text, reasoning, tool call)
//	a chunk with another id or kind in the lane  closes the lane's stream
//	RUN_*, MESSAGES_SNAPSHOT                       close every stream
//	SUBAGENT_FINISHED/_ERROR                        close their lane's
//	RAW, ACTIVITY_*, REASONING_ENCRYPTED_VALUE,
//	SUBAGENT_STARTED, unknown types                 close none
//	any other event                                 closes its lane's
//
// A chunk without an id continues the open stream of its kind (in its
// lane when it names one, else the agent's, else the only one); when
// there is none, or several, the SDK fails the run, and the gateway
// refuses it (wire, sequence).

// chunkKinds maps a chunk type to its stream's kind and id member.
var chunkKinds = map[string]struct{ kind, id string }{
	TypeTextChunk:         {"text", "messageId"},
	TypeReasoningMsgChunk: {"reasoning", "messageId"},
	TypeToolChunk:         {"tool", "toolCallId"},
}

// closesNone are the event types after which an open chunk stream goes on.
var closesNone = map[string]bool{TypeRaw: true, TypeActivitySnapshot: true, TypeActivityDelta: true,
	TypeReasoningEncrypted: true, TypeSubagentStarted: true}

// closesAll are the event types that close every chunk stream.
var closesAll = map[string]bool{TypeRunStarted: true, TypeRunFinished: true, TypeRunError: true, TypeMessagesSnapshot: true}

// known are the 1.0 event types; the SDK drops the others before it
// looks at chunks.
var known = map[string]bool{}

func init() {
	for _, t := range []string{TypeRunStarted, TypeRunFinished, TypeRunError, TypeTextStart, TypeTextContent, TypeTextEnd,
		TypeTextChunk, TypeToolStart, TypeToolArgs, TypeToolEnd, TypeToolChunk, TypeToolResult, TypeStateSnapshot,
		TypeStateDelta, TypeMessagesSnapshot, TypeActivitySnapshot, TypeActivityDelta, TypeReasoningStart, TypeReasoningEnd,
		TypeReasoningMsgStart, TypeReasoningMsgContent, TypeReasoningMsgEnd, TypeReasoningMsgChunk, TypeReasoningEncrypted,
		TypeStepStarted, TypeStepFinished, TypeSubagentStarted, TypeSubagentFinished, TypeSubagentError, TypeRaw, TypeCustom} {
		known[t] = true
	}
}

const chunkKey = "chunk:" // + lane, in run.held

// chunk holds one *_CHUNK event in its stream.
func (rn *run) chunk(ctx context.Context, ev *event) error {
	ck := chunkKinds[ev.canonical]
	_, hasID := ev.member(ck.id)
	id := ev.str(ck.id)
	_, hasSub := ev.member("subagentRunId")
	lane := ev.str("subagentRunId")
	switch {
	case hasSub:
	case hasID:
		// A stream already open with this id, in any lane, goes on.
		for k, m := range rn.held {
			if strings.HasPrefix(k, chunkKey) && m.chunk == ck.kind && m.id == id {
				lane = strings.TrimPrefix(k, chunkKey)
			}
		}
	default:
		if m := rn.held[chunkKey]; m == nil || m.chunk != ck.kind {
			var lanes []string
			for k, m := range rn.held {
				if strings.HasPrefix(k, chunkKey) && m.chunk == ck.kind {
					lanes = append(lanes, strings.TrimPrefix(k, chunkKey))
				}
			}
			if len(lanes) != 1 {
				return stop(&deny.Denial{Stage: StageWire, Rule: deny.RuleSequence,
					Reason: ev.canonical + " without a " + ck.id + " continues no single open chunk stream"})
			}
			lane = lanes[0]
		}
	}
	key := chunkKey + lane
	if m := rn.held[key]; m != nil && (m.chunk != ck.kind || hasID && m.id != id) {
		if err := rn.release(ctx, key); err != nil {
			return err
		}
	}
	if rn.held[key] == nil {
		if !hasID {
			return stop(&deny.Denial{Stage: StageWire, Rule: deny.RuleSequence,
				Reason: "the first " + ev.canonical + " of a stream has no " + ck.id})
		}
		kind, tool := secproc.KindToolResult, ""
		if ck.kind == "tool" {
			kind, tool = secproc.KindToolCall, ev.str("toolCallName")
			if tool == "" {
				tool = rn.tools[id]
			}
		}
		rn.held[key] = &held{kind: kind, tool: tool, chunk: ck.kind, id: id}
	}
	m := rn.held[key]
	return rn.hold(ctx, ev, key, ev.str("delta"), m.kind, m.tool)
}

// closeChunks releases the chunk streams that ev, not a chunk, closes.
func (rn *run) closeChunks(ctx context.Context, ev *event) error {
	var keys []string
	switch {
	case closesAll[ev.canonical]:
		for k := range rn.held {
			if strings.HasPrefix(k, chunkKey) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
	case closesNone[ev.canonical] || !known[ev.canonical]:
	case ev.canonical == TypeSubagentFinished || ev.canonical == TypeSubagentError:
		if _, ok := ev.member("subagentRunId"); ok {
			keys = []string{chunkKey + ev.str("subagentRunId")}
		}
	default:
		keys = []string{chunkKey + ev.str("subagentRunId")}
	}
	for _, k := range keys {
		if err := rn.release(ctx, k); err != nil {
			return err
		}
	}
	return nil
}
