package attack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// maxSSEEvent bounds one AG-UI event's data.
const maxSSEEvent = 4 << 20

// aguiClient is the ag_ui_client mode (OATF §7.3): it POSTs each phase's
// run_agent_input to the agent and reads the SSE stream of events.
//
//   - Event names are the snake_case of the AG-UI type (TOOL_CALL_START →
//     tool_call_start), from an `event:` line when there is one, else from the
//     JSON "type"; both the 0.x and 1.0 vocabularies pass through unchanged.
//   - tool_call_args, tool_call_end (and tool_call_chunk) are enriched with the
//     toolCallName of the tool_call_start with the same toolCallId, before
//     triggers, extractors, indicators and the trace see them.
//   - A tool call the agent does not answer itself (no TOOL_CALL_RESULT) is a
//     frontend tool call: the client picks the first tool_responses entry
//     whose `when` matches the enriched tool_call_start, or the default result
//     {messageId, toolCallId, content: ""}, records it as a client-originated
//     tool_call_result event, and returns it in the next RunAgentInput (same
//     threadId, new runId) as the assistant message with toolCalls followed by
//     a role "tool" message.
type aguiClient struct {
	a   *actor
	url string
}

func newAGUIClient(a *actor) *aguiClient { return &aguiClient{a: a, url: a.rt.opts.AGUIURL} }

func (c *aguiClient) endpoint() string              { return "" }
func (c *aguiClient) prepare(context.Context) error { return nil }
func (c *aguiClient) close()                        {}

// toolCall is one tool call seen in a stream.
type toolCall struct {
	id, name string
	start    *oatf.Value // the enriched tool_call_start content
	args     strings.Builder
	ended    bool
	answered bool        // the agent sent its own TOOL_CALL_RESULT
	chunked  bool        // announced by TOOL_CALL_CHUNK: ends with the stream
	state    *oatf.Value // the phase state when the call ended
}

func (c *aguiClient) run(ctx context.Context) error {
	c.a.start(ctx, nil)
	maxTurns := cmpOr(c.a.rt.opts.MaxTurns, DefaultMaxTurns)
	posted, turns := -1, 0
	var last *oatf.Value
	var calls []*toolCall
	for {
		idx, state, terminal, changed := c.a.current()
		var body *oatf.Value
		switch {
		case len(calls) > 0 && turns < maxTurns:
			body = c.followUp(last, calls)
			turns++
		case posted != idx:
			body = c.input(state)
			posted, turns = idx, 0
		case terminal:
			return nil
		default:
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		calls = nil
		last = body
		c.a.observe(Request, "run_agent_input", body, true)
		if i, _, _, _ := c.a.current(); i != idx && !c.a.phases[i].Has("state") {
			// A run_agent_input trigger fired on this POST: the stream
			// that answers it belongs to the new phase, and a phase that
			// only inherits this input must not send it a second time.
			posted = i
		}
		var err error
		calls, err = c.stream(ctx, body)
		if err != nil {
			return err
		}
	}
}

// input builds the RunAgentInput of a phase: run_agent_input with its
// templates rendered, and the fields AG-UI requires on the wire added when
// the document leaves them out (ids are generated; messages, tools and
// context default to empty lists, state and forwardedProps to {}).
func (c *aguiClient) input(state *oatf.Value) *oatf.Value {
	body := c.a.interpolate(state.Get("run_agent_input"), nil, nil)
	if body == nil || body.Kind != oatf.Map {
		body = oatf.NewMap()
	}
	if !body.Has("threadId") {
		body.Set("threadId", oatf.NewString("thread-"+randomID()))
	}
	if !body.Has("runId") {
		body.Set("runId", oatf.NewString("run-"+randomID()))
	}
	for _, k := range []string{"messages", "tools", "context"} {
		if !body.Has(k) {
			body.Set(k, oatf.NewSeq())
		}
	}
	for _, k := range []string{"state", "forwardedProps"} {
		if !body.Has(k) {
			body.Set(k, oatf.NewMap())
		}
	}
	body.Delete("synthesize")
	return body
}

// followUp builds the RunAgentInput that returns tool results: the previous
// input with a new runId and, appended to its messages, the assistant
// message carrying the tool calls and one role "tool" message per result.
func (c *aguiClient) followUp(prev *oatf.Value, calls []*toolCall) *oatf.Value {
	body := prev.Clone()
	body.Set("runId", oatf.NewString("run-"+randomID()))
	msgs := body.Get("messages")
	if msgs == nil || msgs.Kind != oatf.Seq {
		msgs = oatf.NewSeq()
	}
	assistant := oatf.NewMap()
	assistant.Set("id", oatf.NewString("msg-"+randomID()))
	assistant.Set("role", oatf.NewString("assistant"))
	tcs := oatf.NewSeq()
	var results []*oatf.Value
	for _, tc := range calls {
		fn := oatf.NewMap()
		fn.Set("name", oatf.NewString(tc.name))
		fn.Set("arguments", oatf.NewString(tc.args.String()))
		call := oatf.NewMap()
		call.Set("id", oatf.NewString(tc.id))
		call.Set("type", oatf.NewString("function"))
		call.Set("function", fn)
		tcs.Items = append(tcs.Items, call)
		results = append(results, c.result(tc))
	}
	assistant.Set("toolCalls", tcs)
	msgs.Items = append(msgs.Items, assistant)
	for _, r := range results {
		m := oatf.NewMap()
		m.Set("id", r.Get("messageId"))
		m.Set("role", oatf.NewString("tool"))
		content := r.Get("content")
		if content == nil {
			content = oatf.NewString("")
		} else if content.Kind != oatf.String {
			content = oatf.NewString(oatf.CompactJSON(content))
		}
		m.Set("content", content)
		m.Set("toolCallId", r.Get("toolCallId"))
		if e := r.Get("error"); e != nil {
			m.Set("error", e)
		}
		msgs.Items = append(msgs.Items, m)
	}
	body.Set("messages", msgs)
	return body
}

// result dispatches one frontend tool call (tool_responses, first match on
// the enriched tool_call_start) and records the client-originated
// tool_call_result event.
func (c *aguiClient) result(tc *toolCall) *oatf.Value {
	r := oatf.NewMap()
	if entry := oatf.SelectResponse(items(tc.state.Get("tool_responses")), tc.start); entry != nil {
		switch cv := c.a.interpolate(entry.Get("content"), tc.start, nil); {
		case cv == nil:
		case cv.Kind == oatf.Map:
			r = cv
		default:
			r.Set("content", cv)
		}
	}
	if !r.Has("messageId") {
		r.Set("messageId", oatf.NewString("msg-"+randomID()))
	}
	if !r.Has("toolCallId") {
		r.Set("toolCallId", oatf.NewString(tc.id))
	}
	if !r.Has("content") {
		r.Set("content", oatf.NewString(""))
	}
	c.a.observe(Request, "tool_call_result", r, true)
	return r
}

// stream POSTs body and reads the agent's events until the run ends. It
// returns the frontend tool calls left for the client to answer.
func (c *aguiClient) stream(ctx context.Context, body *oatf.Value) ([]*toolCall, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(encodeJSON(body)))
	if err != nil {
		return nil, err
	}
	for k, vs := range c.a.rt.opts.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.a.rt.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("agent answered HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	p := newStreamParser()
	er := transport.NewEventReader(resp.Body, maxSSEEvent)
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p.pending(), fmt.Errorf("agent event stream: %w", err)
		}
		name, content, err := p.parse(ev)
		if err != nil {
			c.a.log().Warn("attack: undecodable AG-UI event skipped", "err", err)
			continue
		}
		if name == "tool_call_end" {
			if tc := p.byID[content.Get("toolCallId").StringOr("")]; tc != nil {
				_, tc.state, _, _ = c.a.current()
			}
		}
		c.a.observe(Response, name, content, true)
		if name == "run_finished" || name == "run_error" {
			break
		}
	}
	calls := p.pending()
	for _, tc := range calls {
		if tc.state == nil {
			_, tc.state, _, _ = c.a.current()
		}
	}
	return calls, nil
}

// streamParser turns one SSE stream's events into OATF events, tracking tool
// calls for enrichment and dispatch. It is used by one goroutine.
type streamParser struct {
	byID  map[string]*toolCall
	order []*toolCall
}

func newStreamParser() *streamParser { return &streamParser{byID: map[string]*toolCall{}} }

// parse decodes one SSE event: its OATF name and its enriched content.
func (p *streamParser) parse(ev transport.Event) (string, *oatf.Value, error) {
	content, err := DecodeJSON(ev.Data)
	if err != nil {
		return "", nil, err
	}
	if content.Kind != oatf.Map {
		return "", nil, errors.New("event data is not a JSON object")
	}
	typ := content.Get("type").StringOr("")
	if ev.Name != "" && ev.Name != "message" {
		typ = ev.Name
	}
	if typ == "" {
		return "", nil, errors.New("event has no type")
	}
	name := SnakeCase(typ)
	id := content.Get("toolCallId").StringOr("")
	tc := p.byID[id]
	switch name {
	case "tool_call_start", "tool_call_chunk":
		if tc == nil && id != "" {
			tc = &toolCall{id: id, start: content, chunked: name == "tool_call_chunk"}
			p.byID[id] = tc
			p.order = append(p.order, tc)
		}
		if tc != nil {
			if n := content.Get("toolCallName").StringOr(""); n != "" && tc.name == "" {
				tc.name = n
			}
			if name == "tool_call_chunk" {
				tc.args.WriteString(content.Get("delta").StringOr(""))
			}
		}
	case "tool_call_args":
		if tc != nil {
			tc.args.WriteString(content.Get("delta").StringOr(""))
		}
	case "tool_call_end":
		if tc != nil {
			tc.ended = true
		}
	case "tool_call_result":
		if tc != nil {
			tc.answered = true
		}
	}
	if tc != nil && tc.name != "" && !content.Has("toolCallName") &&
		(name == "tool_call_args" || name == "tool_call_end" || name == "tool_call_chunk") {
		content.Set("toolCallName", oatf.NewString(tc.name))
	}
	return name, content, nil
}

// pending returns the calls that ended without an answer from the agent.
func (p *streamParser) pending() []*toolCall {
	var out []*toolCall
	for _, tc := range p.order {
		if (tc.ended || tc.chunked) && !tc.answered {
			out = append(out, tc)
		}
	}
	return out
}

// SnakeCase turns an AG-UI event type into its OATF event name:
// TOOL_CALL_START and ToolCallStart both become tool_call_start.
func SnakeCase(s string) string {
	if strings.ContainsRune(s, '_') || strings.ToUpper(s) == s {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func randomID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
