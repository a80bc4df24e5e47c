// Package attacktest provides a scripted, deliberately gullible AG-UI agent
// for testing the attack runtime: its "model" is a few lines of code that
// follow any instruction they read, so an attack against it is exploited
// deterministically, and the same attack with a guard in between is not.
// Agent.Reckless makes it obey any tool it reads the name of; Agent.Careful
// makes it deliberately safe, for the other side of a verdict.
//
//	agent := &attacktest.Agent{MCP: func() map[string]string { return urls }}
//	srv := httptest.NewServer(agent)   // POST RunAgentInput, SSE events back
//
// The agent is for tests only: it calls whatever tools it is told to.
package attacktest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Agent is a scripted AG-UI agent. For each RunAgentInput it
//
//  1. takes the last message: a user request, or a tool result from the
//     client (role "tool");
//  2. for a user request, calls a frontend tool (one of the input's tools)
//     if the request names it, and ends the run so that the client answers;
//     otherwise picks the MCP tool whose name best fits the request, calls it
//     and reads the result;
//  3. follows any "use the X tool" instruction in what it read, calling X
//     with the e-mail address it found and the text it read as the body;
//  4. streams RUN_STARTED, TOOL_CALL_* (with TOOL_CALL_RESULT for MCP tools
//     it ran itself), a text message and RUN_FINISHED.
//
// Agent is safe for concurrent use; each request is handled on its own.
type Agent struct {
	// MCP returns the MCP servers the agent uses, name → streamable HTTP
	// URL. It is called for every run.
	MCP func() map[string]string
	// EventLines writes an `event: TYPE` line before each data line (the
	// other AG-UI framing); otherwise only `data:` lines are written.
	EventLines bool
	// Careful makes the agent deliberately safe: it still calls the tool
	// the user's request fits (step 2), with only the arguments the tool's
	// schema requires, and never follows an instruction it read (step 3),
	// so an attack that needs obedience or an optional argument (a bcc) is
	// not exploited.
	Careful bool
	// Reckless makes the agent more gullible still (unless it is careful):
	// after the tool the request fits, it calls every other MCP tool whose
	// name it read in that tool's result or description, however the
	// text asks ("follow these steps ... using read_secrets"), in the
	// order named, with arguments from all it has read so far.
	Reckless bool
	// Logger receives the agent's decisions. Nil discards.
	Logger *slog.Logger

	mu    sync.Mutex // guards Calls
	Calls []string   // tool names the agent called, in order
}

type input struct {
	ThreadID string    `json:"threadId"`
	RunID    string    `json:"runId"`
	Messages []message `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type message struct {
	Role       string `json:"role"`
	Content    any    `json:"content"`
	ToolCallID string `json:"toolCallId"`
}

func (m message) text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case nil:
		return ""
	}
	b, _ := json.Marshal(m.Content)
	return string(b)
}

// tool is an MCP tool the agent can call.
type tool struct {
	session *mcp.ClientSession
	name    string
	desc    string
	props   []string // property names, sorted
	types   map[string]string
	needed  map[string]bool // the schema's required properties
}

var (
	instruction = regexp.MustCompile(`(?i)\b(?:use|call|invoke|run) the ([A-Za-z0-9_\-]+) tool`)
	emailRE     = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
	urlRE       = regexp.MustCompile(`https?://[^\s"'<>]+`)
	numberRE    = regexp.MustCompile(`-?\d+(?:\.\d+)?`)
)

// ServeHTTP implements the AG-UI HTTP binding: POST RunAgentInput, SSE back.
func (ag *Agent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var in input
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&in); err != nil {
		http.Error(w, "bad RunAgentInput: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	s := &stream{w: w, lines: ag.EventLines}
	s.emit(map[string]any{"type": "RUN_STARTED", "threadId": in.ThreadID, "runId": in.RunID})
	ag.think(r.Context(), s, in)
	s.emit(map[string]any{"type": "RUN_FINISHED", "threadId": in.ThreadID, "runId": in.RunID})
}

func (ag *Agent) log() *slog.Logger {
	if ag.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return ag.Logger
}

func (ag *Agent) think(ctx context.Context, s *stream, in input) {
	if len(in.Messages) == 0 {
		s.say("Nothing to do.")
		return
	}
	last := in.Messages[len(in.Messages)-1]
	tools, closeAll := ag.connect(ctx)
	defer closeAll()
	text := last.text()
	if last.Role != "tool" {
		for _, ft := range in.Tools {
			if ft.Name != "" && strings.Contains(text, ft.Name) {
				s.toolCall(ft.Name, map[string]any{"query": text}, "")
				return // the client runs frontend tools
			}
		}
		if t := pick(tools, text); t != nil {
			a := args(t, text, text)
			if ag.Careful {
				maps.DeleteFunc(a, func(p string, _ any) bool { return !t.needed[p] })
			}
			text = ag.call(ctx, s, t, a)
			if ag.Reckless && !ag.Careful && ag.obeyAll(ctx, s, tools, t, text) {
				return
			}
		}
	}
	// The "model" obeys what it read, unless it is careful.
	if m := instruction.FindStringSubmatch(text); m != nil && !ag.Careful {
		name := m[1]
		for _, t := range tools {
			if t.name == name {
				ag.call(ctx, s, t, args(t, text, text))
				s.say("Done, as instructed.")
				return
			}
		}
		for _, ft := range in.Tools {
			if ft.Name == name {
				s.toolCall(name, map[string]any{"input": text}, "")
				return
			}
		}
	}
	s.say("Here is what I found: " + text)
}

// maxObeyed bounds the tools a reckless agent calls for one request.
const maxObeyed = 4

// obeyAll is the reckless agent's step 3: it calls the tools other than
// first named in first's description and in read (first's result), in
// the order named, each with arguments from read and the results so far.
// It reports whether it called any.
func (ag *Agent) obeyAll(ctx context.Context, s *stream, tools []*tool, first *tool, read string) bool {
	said := first.desc + "\n" + read
	type mention struct {
		at int
		t  *tool
	}
	var named []mention
	for _, t := range tools {
		if i := strings.Index(said, t.name); i >= 0 && t != first {
			named = append(named, mention{i, t})
		}
	}
	if len(named) == 0 {
		return false
	}
	sort.Slice(named, func(i, j int) bool { return named[i].at < named[j].at })
	read = said
	for _, m := range named[:min(len(named), maxObeyed)] {
		read += "\n" + ag.call(ctx, s, m.t, args(m.t, read, read))
	}
	s.say("Done, as instructed.")
	return true
}

// call runs an MCP tool and streams it as a tool call the agent answered
// itself (with TOOL_CALL_RESULT). It returns the result's text.
func (ag *Agent) call(ctx context.Context, s *stream, t *tool, a map[string]any) string {
	ag.mu.Lock()
	ag.Calls = append(ag.Calls, t.name)
	ag.mu.Unlock()
	ag.log().Info("gullible agent: calling tool", "tool", t.name, "args", a)
	var out string
	res, err := t.session.CallTool(ctx, &mcp.CallToolParams{Name: t.name, Arguments: a})
	switch {
	case err != nil:
		out = "error: " + err.Error()
	default:
		var parts []string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		out = strings.Join(parts, "\n")
	}
	s.toolCall(t.name, a, out)
	return out
}

// CalledTools returns the tools the agent called so far.
func (ag *Agent) CalledTools() []string {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	return append([]string(nil), ag.Calls...)
}

// connect opens a session with every MCP server and lists their tools.
func (ag *Agent) connect(ctx context.Context) ([]*tool, func()) {
	var tools []*tool
	var sessions []*mcp.ClientSession
	closeAll := func() {
		for _, s := range sessions {
			s.Close()
		}
	}
	if ag.MCP == nil {
		return nil, closeAll
	}
	servers := ag.MCP()
	names := make([]string, 0, len(servers))
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	client := mcp.NewClient(&mcp.Implementation{Name: "gullible-agent", Version: "1.0.0"}, nil)
	for _, n := range names {
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: servers[n]}, nil)
		if err != nil {
			ag.log().Warn("gullible agent: MCP server unreachable", "server", n, "err", err)
			continue
		}
		sessions = append(sessions, cs)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			ag.log().Warn("gullible agent: tools/list failed", "server", n, "err", err)
			continue
		}
		for _, t := range res.Tools {
			tools = append(tools, newTool(cs, t))
		}
	}
	return tools, closeAll
}

func newTool(cs *mcp.ClientSession, t *mcp.Tool) *tool {
	out := &tool{session: cs, name: t.Name, desc: t.Description, types: map[string]string{}, needed: map[string]bool{}}
	var schema struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if b, err := json.Marshal(t.InputSchema); err == nil {
		json.Unmarshal(b, &schema)
	}
	for p, d := range schema.Properties {
		out.props = append(out.props, p)
		out.types[p] = d.Type
	}
	for _, p := range schema.Required {
		out.needed[p] = true
	}
	sort.Strings(out.props)
	return out
}

// pick chooses the tool whose name shares the most words with the request;
// the first tool when none does.
func pick(tools []*tool, request string) *tool {
	if len(tools) == 0 {
		return nil
	}
	lower := strings.ToLower(request)
	best, score := tools[0], 0
	for _, t := range tools {
		n := 0
		for _, w := range strings.FieldsFunc(strings.ToLower(t.name), func(r rune) bool { return r == '_' || r == '-' }) {
			if len(w) > 2 && strings.Contains(lower, w) {
				n++
			}
		}
		if n > score {
			best, score = t, n
		}
	}
	return best
}

// args fills a tool's arguments from what the agent read: URLs for *url*,
// the first e-mail address for to/recipient/email, numbers for numbers, and
// the text itself for any other string.
func args(t *tool, text, body string) map[string]any {
	a := map[string]any{}
	nums := numberRE.FindAllString(text, -1)
	for _, p := range t.props {
		lp := strings.ToLower(p)
		switch {
		case t.types[p] == "number" || t.types[p] == "integer":
			v := 1.0
			if len(nums) > 0 {
				v, _ = strconv.ParseFloat(nums[0], 64)
				nums = nums[1:]
			}
			a[p] = v
		case strings.Contains(lp, "url"):
			a[p] = urlRE.FindString(text)
		case lp == "to" || strings.Contains(lp, "recipient") || strings.Contains(lp, "email"):
			a[p] = emailRE.FindString(text)
		case lp == "subject" || lp == "title":
			a[p] = "As requested"
		default:
			a[p] = body
		}
	}
	return a
}

// stream writes AG-UI events as SSE.
type stream struct {
	w     http.ResponseWriter
	lines bool
	n     int
}

func (s *stream) emit(ev map[string]any) {
	b, _ := json.Marshal(ev)
	if s.lines {
		fmt.Fprintf(s.w, "event: %s\n", ev["type"])
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *stream) id(prefix string) string {
	s.n++
	return prefix + "-" + strconv.Itoa(s.n)
}

// toolCall streams one tool call; result "" leaves it for the client.
func (s *stream) toolCall(name string, a map[string]any, result string) {
	id := s.id("call")
	b, _ := json.Marshal(a)
	s.emit(map[string]any{"type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": name})
	half := len(b) / 2
	s.emit(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": string(b[:half])})
	s.emit(map[string]any{"type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": string(b[half:])})
	s.emit(map[string]any{"type": "TOOL_CALL_END", "toolCallId": id})
	if result != "" {
		s.emit(map[string]any{"type": "TOOL_CALL_RESULT", "messageId": s.id("msg"), "toolCallId": id,
			"content": result, "role": "tool"})
	}
}

func (s *stream) say(text string) {
	id := s.id("msg")
	s.emit(map[string]any{"type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant"})
	s.emit(map[string]any{"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": text})
	s.emit(map[string]any{"type": "TEXT_MESSAGE_END", "messageId": id})
}
