package attack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// chatServer answers POST /v1/chat/completions with body and content type,
// after checking the bearer key.
func chatServer(t *testing.T, contentType, body string) *chatClient {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return &chatClient{url: srv.URL + "/v1/chat/completions", model: "m", key: "sk-test", stream: true, http: srv.Client()}
}

// TestChatStreamMergesToolCallDeltas: a streamed completion's text deltas
// are joined, two tool calls whose arguments arrive in pieces and
// interleaved are rebuilt by index, and the usage chunk is read.
func TestChatStreamMergesToolCallDeltas(t *testing.T) {
	chunks := []string{
		`{"model":"m-2026","choices":[{"index":0,"delta":{"role":"assistant","content":"Let me "}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"check."}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"web_search","arguments":"{\"query\":"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"~/.ssh/id_rsa\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"cve\"}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":45,"total_tokens":165}}`,
	}
	var b strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&b, ": keep-alive\ndata: %s\n\n", c)
	}
	b.WriteString("data: [DONE]\n\n")
	c := chatServer(t, "text/event-stream", b.String())
	res, err := c.complete(context.Background(), []chatMessage{{Role: "user", Content: "hi"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Let me check." || res.Model != "m-2026" || res.FinishReason != "tool_calls" || res.InputTokens != 120 || res.OutputTokens != 45 {
		t.Errorf("result %+v", res)
	}
	if len(res.ToolCalls) != 2 ||
		res.ToolCalls[0] != (chatToolCall{ID: "call_a", Type: "function", Function: chatFunction{Name: "read_file", Arguments: `{"path":"~/.ssh/id_rsa"}`}}) ||
		res.ToolCalls[1] != (chatToolCall{ID: "call_b", Type: "function", Function: chatFunction{Name: "web_search", Arguments: `{"query":"cve"}`}}) {
		t.Errorf("tool calls %+v", res.ToolCalls)
	}
}

// TestChatWholeCompletion reads a non-streamed completion with a tool call.
func TestChatWholeCompletion(t *testing.T) {
	c := chatServer(t, "application/json", `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,
		"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"send_email","arguments":"{\"to\":\"a@b.c\"}"}}]},
		"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`)
	c.stream = false
	res, err := c.complete(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Function.Arguments != `{"to":"a@b.c"}` || res.InputTokens != 7 || res.OutputTokens != 3 {
		t.Errorf("result %+v", res)
	}
}

// TestChatFailures: what is not a complete answer is an error, and the key
// never appears in one.
func TestChatFailures(t *testing.T) {
	for name, tc := range map[string]struct {
		contentType, body string
		key               string
		want              string
	}{
		"wrong key":        {"application/json", `{}`, "sk-wrong", "HTTP 401"},
		"cut stream":       {"text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n", "sk-test", "ended before"},
		"bad chunk":        {"text/event-stream", "data: {\"choices\":\n\n", "sk-test", "not JSON"},
		"error in stream":  {"text/event-stream", "data: {\"error\":{\"message\":\"overloaded\"}}\n\n", "sk-test", "overloaded"},
		"no choices":       {"application/json", `{"choices":[]}`, "sk-test", "no choices"},
		"nameless tool":    {"application/json", `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"arguments":"{}"}}]}}]}`, "sk-test", "no function name"},
		"duplicate member": {"application/json", `{"choices":[],"choices":[]}`, "sk-test", "duplicate"},
	} {
		c := chatServer(t, tc.contentType, tc.body)
		c.key = tc.key
		_, err := c.complete(context.Background(), nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: the key is in the error %q", name, err)
		}
	}
}
