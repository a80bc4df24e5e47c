package attack_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/oatf"
)

// TestContextFrontendTool runs context mode against a model written here
// (streamed, OpenAI's wire format): it calls the RunAgentInput's frontend
// tool read_file, the ag_ui_client actor answers it from tool_responses in
// a follow-up run, and the model repeats the answer, which the indicator
// sees. The follow-up the model gets must hold its own tool call and the
// client's result under the same id.
func TestContextFrontendTool(t *testing.T) {
	var mu sync.Mutex
	var requests []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Stream   bool   `json:"stream"`
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "scripted" || !req.Stream {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		raw, _ := json.Marshal(req.Messages)
		mu.Lock()
		requests = append(requests, string(raw))
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "user" && len(req.Tools) == 1 && req.Tools[0].Function.Name == "read_file":
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_7","type":"function","function":{"name":"read_file","arguments":""}}]}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"~/.ssh/id_rsa\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
		case last.Role == "tool" && last.ToolCallID == "call_7":
			text, _ := json.Marshal("Your notes say: " + fmt.Sprint(last.Content))
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s},\"finish_reason\":\"stop\"}]}\n\n", text)
		default:
			fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"I cannot help."},"finish_reason":"stop"}]}`+"\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer model.Close()

	res, err := attack.Run(testCtx(t), load(t, filepath.Join("testdata", "context", "frontend-tool.yaml")),
		attack.Options{Context: &attack.ContextOptions{BaseURL: model.URL + "/v1", Model: "scripted"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Result != oatf.Exploited || res.Failed() {
		var b strings.Builder
		attack.WriteSummary(&b, res)
		t.Fatalf("verdict %s, want exploited\n%s\nmodel requests: %q", res.Verdict.Result, b.String(), requests)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) != 2 || !strings.Contains(requests[1], `"tool_calls":[{"id":"call_7"}]`) ||
		!strings.Contains(requests[1], `"tool_call_id":"call_7"`) {
		t.Errorf("model requests %q: want 2, the second with the call and its result under id call_7", requests)
	}
}

// TestContextThreadMemory: the second run of a thread, whose input holds
// only the second question, reaches the model with the first run before
// it, once: question, the host's tool call, its result, the answer.
func TestContextThreadMemory(t *testing.T) {
	var mu sync.Mutex
	var second string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		reply := `{"role":"assistant","content":"I do not know."}`
		switch {
		case last.Role == "user" && last.Content == "first question":
			reply = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":\"first\"}"}}]}`
		case last.Role == "tool" && last.ToolCallID == "call_1":
			reply = `{"role":"assistant","content":"answer one: fact-1"}`
		case last.Role == "user" && last.Content == "second question":
			raw, _ := json.Marshal(req.Messages)
			mu.Lock()
			second = string(raw)
			mu.Unlock()
			if strings.Contains(string(raw), "fact-1") {
				reply = `{"role":"assistant","content":"fact-1 still holds"}`
			}
		}
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":%s,"finish_reason":"stop"}]}`, reply)
	}))
	defer model.Close()

	res, err := attack.Run(testCtx(t), load(t, filepath.Join("testdata", "context", "two-runs.yaml")),
		attack.Options{Context: &attack.ContextOptions{BaseURL: model.URL, Model: "scripted", NoStream: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Result != oatf.Exploited || res.Failed() {
		var b strings.Builder
		attack.WriteSummary(&b, res)
		t.Fatalf("verdict %s, want exploited (the second answer knew the first run)\n%s\nsecond request: %s", res.Verdict.Result, b.String(), second)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{`"content":"first question"`, `"role":"assistant","content":null`, `"tool_call_id":"call_1"`, `"content":"answer one: fact-1"`, `"content":"second question"`}
	at := 0
	for _, w := range want {
		i := strings.Index(second[at:], w)
		if i < 0 || strings.Count(second, w) != 1 {
			t.Fatalf("second request %s: want %q once, after the previous part", second, w)
		}
		at += i + len(w)
	}
}

// TestContextToolNames: the model gets the actors' tools in the order they
// are listed, each run the same, under names OpenAI's API allows; a call
// to files_read reaches the actor as files.read.
func TestContextToolNames(t *testing.T) {
	var mu sync.Mutex
	var lists []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
			Tools []struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		mu.Lock()
		lists = append(lists, strings.Join(names, ","))
		mu.Unlock()
		reply := `{"role":"assistant","content":"done"}`
		if req.Messages[len(req.Messages)-1].Role == "user" {
			reply = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"files_read","arguments":"{\"path\":\"notes.txt\"}"}}]}`
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"index":0,"message":%s,"finish_reason":"stop"}]}`, reply)
	}))
	defer model.Close()
	doc := load(t, filepath.Join("testdata", "context", "tool-names.yaml"))
	for range 3 {
		res, err := attack.Run(testCtx(t), doc, attack.Options{Context: &attack.ContextOptions{BaseURL: model.URL, Model: "m", NoStream: true}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict.Result != oatf.Exploited {
			t.Fatalf("verdict %s, want exploited: the call did not reach the actor as files.read", res.Verdict.Result)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lists {
		if l != "zeta,files_read,alpha" {
			t.Fatalf("tools sent to the model %q, want zeta,files_read,alpha in every request", lists)
		}
	}
}
