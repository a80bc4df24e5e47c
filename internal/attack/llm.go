package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/agentwarden/warden/internal/oatf"
)

// Bounds on what a model endpoint may send back.
const (
	maxChatBody  = 8 << 20 // one non-streamed completion
	maxChatChunk = 1 << 20 // one SSE line of a streamed completion
	maxChatError = 512     // the excerpt of an error body kept in the error
)

// chatClient calls an OpenAI-compatible chat-completions endpoint
// (POST <base>/chat/completions), streamed (SSE `data:` chunks, tool calls
// as deltas keyed by index, a final usage chunk) or not. It is immutable
// and safe for concurrent use.
type chatClient struct {
	url       string // <base>/chat/completions
	model     string
	key       string // sent as a bearer token; "" sends none
	stream    bool
	maxTokens int
	http      *http.Client
}

// chatMessage is one message of the conversation, as OpenAI's API writes
// it. Content is a string, or nil for an assistant message that only calls
// tools.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatTool is a function the model may call.
type chatTool struct {
	Type     string      `json:"type"`
	Function chatToolDef `json:"function"`
}

type chatToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools,omitempty"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
}

// chatResult is one completion: text, tool calls, or both.
type chatResult struct {
	Content      string
	ToolCalls    []chatToolCall
	FinishReason string
	Model        string // the model that answered, when the endpoint says
	InputTokens  int64
	OutputTokens int64
}

// complete sends the conversation and the tools and returns the model's
// answer. A transport failure, a non-2xx status or a body that is not a
// completion is an error; the key never appears in one.
func (c *chatClient) complete(ctx context.Context, msgs []chatMessage, tools []chatTool) (*chatResult, error) {
	req := chatRequest{Model: c.model, Messages: msgs, Tools: tools, MaxTokens: c.maxTokens, Stream: c.stream}
	if c.stream {
		req.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	if c.stream {
		hreq.Header.Set("Accept", "text/event-stream")
	} else {
		hreq.Header.Set("Accept", "application/json")
	}
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("model endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxChatError))
		return nil, fmt.Errorf("model endpoint %s: HTTP %d: %s", c.url, resp.StatusCode, strings.TrimSpace(string(excerpt)))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readChatStream(resp.Body)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxChatBody+1))
	if err != nil {
		return nil, fmt.Errorf("model endpoint: reading the completion: %w", err)
	}
	if len(raw) > maxChatBody {
		return nil, fmt.Errorf("model endpoint: completion larger than %d bytes", maxChatBody)
	}
	return parseCompletion(raw)
}

// parseCompletion reads a non-streamed chat.completion object.
func parseCompletion(raw []byte) (*chatResult, error) {
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("model endpoint: the completion is not JSON: %w", err)
	}
	if e := v.Get("error"); e != nil {
		return nil, fmt.Errorf("model endpoint: error %s", oatf.CompactJSON(e))
	}
	choices := items(v.Get("choices"))
	if len(choices) == 0 {
		return nil, errors.New("model endpoint: the completion has no choices")
	}
	msg := choices[0].Get("message")
	if msg == nil {
		return nil, errors.New("model endpoint: choices[0] has no message")
	}
	r := &chatResult{Content: msg.Get("content").StringOr(""), FinishReason: choices[0].Get("finish_reason").StringOr(""),
		Model: v.Get("model").StringOr("")}
	for i, tc := range items(msg.Get("tool_calls")) {
		fn := tc.Get("function")
		call := chatToolCall{ID: tc.Get("id").StringOr(""), Type: "function",
			Function: chatFunction{Name: fn.Get("name").StringOr(""), Arguments: fn.Get("arguments").StringOr("")}}
		if call.Function.Name == "" {
			return nil, fmt.Errorf("model endpoint: tool_calls[%d] has no function name", i)
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	r.usage(v.Get("usage"))
	return r, nil
}

func (r *chatResult) usage(u *oatf.Value) {
	if n := u.Get("prompt_tokens"); n.IsNumber() {
		r.InputTokens = int64(n.Number())
	}
	if n := u.Get("completion_tokens"); n.IsNumber() {
		r.OutputTokens = int64(n.Number())
	}
}

// readChatStream reads a streamed completion: `data:` lines each holding a
// chat.completion.chunk, until `data: [DONE]` or the end of the body. Text
// deltas are concatenated; tool call deltas are merged by their index (the
// id and name come in the first, the arguments in pieces).
func readChatStream(body io.Reader) (*chatResult, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxChatChunk)
	r := &chatResult{}
	var text strings.Builder
	calls := map[int64]*chatToolCall{}
	done := false
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue // comments, event: and id: lines, blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			done = true
			break
		}
		if data == "" {
			continue
		}
		chunk, err := DecodeJSON([]byte(data))
		if err != nil {
			return nil, fmt.Errorf("model endpoint: a stream chunk is not JSON: %w", err)
		}
		if e := chunk.Get("error"); e != nil {
			return nil, fmt.Errorf("model endpoint: error in stream %s", oatf.CompactJSON(e))
		}
		if m := chunk.Get("model").StringOr(""); m != "" {
			r.Model = m
		}
		if u := chunk.Get("usage"); u != nil && u.Kind == oatf.Map {
			r.usage(u)
		}
		for _, ch := range items(chunk.Get("choices")) {
			if f := ch.Get("finish_reason").StringOr(""); f != "" {
				r.FinishReason = f
			}
			delta := ch.Get("delta")
			text.WriteString(delta.Get("content").StringOr(""))
			for i, tc := range items(delta.Get("tool_calls")) {
				idx := int64(i)
				if n := tc.Get("index"); n.IsNumber() {
					idx = int64(n.Number())
				}
				call := calls[idx]
				if call == nil {
					call = &chatToolCall{Type: "function"}
					calls[idx] = call
				}
				if id := tc.Get("id").StringOr(""); id != "" {
					call.ID = id
				}
				fn := tc.Get("function")
				call.Function.Name += fn.Get("name").StringOr("")
				call.Function.Arguments += fn.Get("arguments").StringOr("")
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("model endpoint: reading the stream: %w", err)
	}
	if !done && r.FinishReason == "" {
		return nil, errors.New("model endpoint: the stream ended before the completion did")
	}
	r.Content = text.String()
	idxs := make([]int64, 0, len(calls))
	for i := range calls {
		idxs = append(idxs, i)
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	for _, i := range idxs {
		if calls[i].Function.Name == "" {
			return nil, fmt.Errorf("model endpoint: streamed tool call %d has no function name", i)
		}
		r.ToolCalls = append(r.ToolCalls, *calls[i])
	}
	return r, nil
}
