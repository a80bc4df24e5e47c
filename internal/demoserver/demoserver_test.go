//lint:file-ignore SA1019 the tests drive the deprecated sampling feature on purpose

package demoserver

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol revisions the tests run under: the SDK's newest, where
// server->client input travels inside results, and the newest of the
// initialize-handshake revisions, where it is a server->client request.
const (
	revStateless = "2026-07-28" // the go-sdk client's default
	revLegacy    = "2025-11-25"
)

const canary = "canary-7f3a9c"

// connect serves a demo server built from opts to a go-sdk client over
// in-memory transports, at protocol revision rev.
func connect(t *testing.T, opts Options, copts *mcp.ClientOptions, rev string) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, opts, mcp.NewClient(&mcp.Implementation{Name: "demoserver-test", Version: "0"}, copts), rev)
}

// connectClient is connect with a client of the test's making. It checks
// that the session runs at the revision asked for.
func connectClient(t *testing.T, opts Options, client *mcp.Client, rev string) *mcp.ClientSession {
	t.Helper()
	if opts.Env == nil {
		opts.Env = func() []string { return []string{"WARDEN_DEMO_SECRET=" + canary} }
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(opts).Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := client.Connect(t.Context(), ct, &mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != rev {
		t.Fatalf("session runs at %s, want %s", got, rev)
	}
	return cs
}

// call calls a tool and fails the test on a protocol error; tool errors are
// returned in the result.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s, %v): %v", name, args, err)
	}
	return res
}

// text joins the text blocks of a result.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// wantOK fails unless res is a successful result, and returns its text.
func wantOK(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("got tool error %q, want success", text(res))
	}
	return text(res)
}

// wantToolError fails unless res is a tool error whose text contains want.
func wantToolError(t *testing.T, res *mcp.CallToolResult, want string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("got success %q, want a tool error containing %q", text(res), want)
	}
	if !strings.Contains(text(res), want) {
		t.Errorf("tool error %q does not contain %q", text(res), want)
	}
}

// structured decodes res.StructuredContent into a T.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return v
}

func TestServerIdentityAndCapabilities(t *testing.T) {
	for _, rev := range []string{revStateless, revLegacy} {
		t.Run(rev, func(t *testing.T) {
			cs := connect(t, Options{}, nil, rev)
			init := cs.InitializeResult()
			if init.ServerInfo == nil || init.ServerInfo.Name != "warden-demo" || init.ServerInfo.Version != "1.0.0" {
				t.Errorf("server info = %+v, want warden-demo 1.0.0", init.ServerInfo)
			}
			caps := init.Capabilities
			if caps == nil || caps.Logging == nil || caps.Tools == nil || caps.Resources == nil || caps.Prompts == nil {
				t.Errorf("capabilities = %+v, want logging, tools, resources and prompts", caps)
			}
		})
	}
}

func TestToolList(t *testing.T) {
	type hints struct {
		readOnly, destructive, openWorld bool
	}
	want := map[string]struct {
		hints    hints
		required []string
		optional []string
	}{
		"read_file":      {hints{readOnly: true}, []string{"path"}, nil},
		"list_dir":       {hints{readOnly: true}, nil, []string{"path"}},
		"write_file":     {hints{destructive: true}, []string{"path", "content"}, nil},
		"transfer_funds": {hints{destructive: true, openWorld: true}, []string{"account_id", "amount", "recipient"}, nil},
		"get_env":        {hints{readOnly: true}, nil, nil},
		"echo":           {hints{readOnly: true}, []string{"message"}, nil},
		"slow_count":     {hints{readOnly: true}, []string{"count"}, []string{"delay_ms"}},
		"ask_user":       {hints{readOnly: true}, []string{"question"}, nil},
	}

	cs := connect(t, Options{}, nil, revStateless)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %q", tool.Name)
			continue
		}
		if tool.Description == "" {
			t.Errorf("%s: no description", tool.Name)
		}
		a := tool.Annotations
		if a == nil {
			t.Errorf("%s: no annotations", tool.Name)
			continue
		}
		// Per the spec an absent destructiveHint or openWorldHint means true,
		// so every tool must state them unless it is read-only.
		got := hints{readOnly: a.ReadOnlyHint, destructive: a.DestructiveHint == nil || *a.DestructiveHint, openWorld: a.OpenWorldHint == nil || *a.OpenWorldHint}
		if a.ReadOnlyHint {
			got.destructive = false
		}
		if got != w.hints {
			t.Errorf("%s: hints = %+v, want %+v", tool.Name, got, w.hints)
		}

		var schema struct {
			Type       string
			Required   []string
			Properties map[string]struct{ Description string }
		}
		b, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatalf("%s: input schema %s: %v", tool.Name, b, err)
		}
		if schema.Type != "object" {
			t.Errorf("%s: input schema type %q, want object", tool.Name, schema.Type)
		}
		if !slices.Equal(sorted(schema.Required), sorted(w.required)) {
			t.Errorf("%s: required = %v, want %v", tool.Name, schema.Required, w.required)
		}
		if len(schema.Properties) != len(w.required)+len(w.optional) {
			t.Errorf("%s: properties %s, want %v and %v", tool.Name, b, w.required, w.optional)
		}
		for name, p := range schema.Properties {
			if p.Description == "" {
				t.Errorf("%s: property %s has no description", tool.Name, name)
			}
		}
	}
	if len(names) != len(want) {
		t.Errorf("tools = %v, want the %d tools %v", names, len(want), slices.Sorted(maps.Keys(want)))
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func TestGetEnv(t *testing.T) {
	t.Run("Options.Env", func(t *testing.T) {
		cs := connect(t, Options{Env: func() []string {
			return []string{"PATH=/usr/bin", "WARDEN_DEMO_SECRET=" + canary}
		}}, nil, revStateless)
		got := wantOK(t, call(t, cs, "get_env", map[string]any{}))
		if want := "PATH=/usr/bin\nWARDEN_DEMO_SECRET=" + canary; got != want {
			t.Errorf("get_env = %q, want %q", got, want)
		}
	})
	t.Run("process environment", func(t *testing.T) {
		t.Setenv("WARDEN_DEMO_SECRET", canary+"-process")
		st, ct := mcp.NewInMemoryTransports()
		ss, err := New(Options{}).Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		got := wantOK(t, call(t, cs, "get_env", nil))
		if !slices.Contains(strings.Split(got, "\n"), "WARDEN_DEMO_SECRET="+canary+"-process") {
			t.Errorf("get_env does not reveal the planted canary:\n%s", got)
		}
	})
}

func TestEcho(t *testing.T) {
	cs := connect(t, Options{}, nil, revStateless)
	if got := wantOK(t, call(t, cs, "echo", map[string]any{"message": "hi there"})); got != "Echo: hi there" {
		t.Errorf("echo = %q", got)
	}
	wantToolError(t, call(t, cs, "echo", map[string]any{}), "message")
}

func TestSlowCount(t *testing.T) {
	for _, rev := range []string{revStateless, revLegacy} {
		t.Run(rev, func(t *testing.T) {
			progress := make(chan *mcp.ProgressNotificationParams, 20)
			cs := connect(t, Options{}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					progress <- req.Params
				},
			}, rev)

			params := &mcp.CallToolParams{Name: "slow_count", Arguments: map[string]any{"count": 5, "delay_ms": 1}}
			params.SetProgressToken("tok-1")
			res, err := cs.CallTool(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			if got := wantOK(t, res); got != "counted 5" {
				t.Errorf("slow_count = %q, want counted 5", got)
			}
			for i := 1; i <= 5; i++ {
				select {
				case p := <-progress:
					if p.ProgressToken != "tok-1" || p.Progress != float64(i) || p.Total != 5 {
						t.Errorf("notification %d = %+v, want token tok-1, progress %d of 5", i, p, i)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("received %d progress notifications, want 5", i-1)
				}
			}

			// Without a token there is nothing to report progress against.
			if got := wantOK(t, call(t, cs, "slow_count", map[string]any{"count": 2, "delay_ms": 0})); got != "counted 2" {
				t.Errorf("slow_count = %q", got)
			}
			select {
			case p := <-progress:
				t.Errorf("progress notification %+v for a call without a progress token", p)
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}

func TestSlowCountRejectsOutOfRange(t *testing.T) {
	cs := connect(t, Options{}, nil, revStateless)
	for _, args := range []map[string]any{
		{"count": 0},
		{"count": 21},
		{"count": 1, "delay_ms": -1},
		{"count": 1, "delay_ms": 1001},
	} {
		wantToolError(t, call(t, cs, "slow_count", args), "validating")
	}
}

func TestAskUser(t *testing.T) {
	const question = "Which account should pay?"
	elicit := func(action, answer string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message != question {
				return nil, fmt.Errorf("elicitation message %q, want %q", req.Params.Message, question)
			}
			res := &mcp.ElicitResult{Action: action}
			if action == "accept" {
				res.Content = map[string]any{"answer": answer}
			}
			return res, nil
		}
	}
	sample := func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		if len(req.Params.Messages) != 1 {
			return nil, fmt.Errorf("got %d sampling messages, want 1", len(req.Params.Messages))
		}
		if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != question {
			return nil, fmt.Errorf("sampling message %+v, want the question", req.Params.Messages[0].Content)
		}
		return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "ACC_456 (sampled)"}}, nil
	}

	tests := []struct {
		name       string
		opts       *mcp.ClientOptions
		wantText   string
		wantOut    askOutput
		wantErrMsg string
	}{
		{
			name:     "elicitation",
			opts:     &mcp.ClientOptions{ElicitationHandler: elicit("accept", "ACC_123")},
			wantText: "ACC_123",
			wantOut:  askOutput{Answer: "ACC_123", Method: "elicitation", Action: "accept"},
		},
		{
			name:     "elicitation preferred over sampling",
			opts:     &mcp.ClientOptions{ElicitationHandler: elicit("accept", "ACC_123"), CreateMessageHandler: sample},
			wantText: "ACC_123",
			wantOut:  askOutput{Answer: "ACC_123", Method: "elicitation", Action: "accept"},
		},
		{
			name:     "elicitation declined",
			opts:     &mcp.ClientOptions{ElicitationHandler: elicit("decline", "")},
			wantText: "The user did not answer (decline).",
			wantOut:  askOutput{Method: "elicitation", Action: "decline"},
		},
		{
			name:     "sampling",
			opts:     &mcp.ClientOptions{CreateMessageHandler: sample},
			wantText: "ACC_456 (sampled)",
			wantOut:  askOutput{Answer: "ACC_456 (sampled)", Method: "sampling", Action: "accept"},
		},
		{
			name:       "neither",
			opts:       nil,
			wantErrMsg: "supports neither elicitation nor sampling",
		},
	}
	for _, rev := range []string{revStateless, revLegacy} {
		for _, tc := range tests {
			t.Run(tc.name+"/"+rev, func(t *testing.T) {
				// Record the server->client requests the client receives.
				var mu sync.Mutex
				var received []string
				client := mcp.NewClient(&mcp.Implementation{Name: "demoserver-test"}, tc.opts)
				client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if !strings.HasPrefix(method, "notifications/") {
							mu.Lock()
							received = append(received, method)
							mu.Unlock()
						}
						return next(ctx, method, req)
					}
				})
				cs := connectClient(t, Options{}, client, rev)

				res := call(t, cs, "ask_user", map[string]any{"question": question})
				if tc.wantErrMsg != "" {
					wantToolError(t, res, tc.wantErrMsg)
					return
				}
				if got := wantOK(t, res); got != tc.wantText {
					t.Errorf("ask_user = %q, want %q", got, tc.wantText)
				}
				if got := structured[askOutput](t, res); got != tc.wantOut {
					t.Errorf("structured content = %+v, want %+v", got, tc.wantOut)
				}

				// At 2025-11-25 the question is a server->client request; at
				// 2026-07-28 it rides in the tools/call result instead.
				var want []string
				if rev == revLegacy {
					want = []string{map[string]string{"elicitation": "elicitation/create", "sampling": "sampling/createMessage"}[tc.wantOut.Method]}
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(received, want) {
					t.Errorf("client received requests %v, want %v", received, want)
				}
			})
		}
	}
}

func TestResources(t *testing.T) {
	root, _ := sandbox(t)
	cs := connect(t, Options{Root: root}, nil, revStateless)
	ctx := t.Context()

	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != "demo://readme" {
		t.Errorf("resources = %+v, want demo://readme", list.Resources)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "file:///{+path}" {
		t.Errorf("resource templates = %+v, want file:///{+path}", templates.ResourceTemplates)
	}

	read := func(uri string) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	}
	res, err := read("demo://readme")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "transfer_funds") {
		t.Errorf("demo://readme = %+v, want the readme text", res.Contents)
	}

	for uri, want := range map[string]string{
		"file:///notes.txt":    "hello from the sandbox",
		"file:///sub/deep.txt": "deep",
	} {
		res, err := read(uri)
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != want || res.Contents[0].URI != uri {
			t.Errorf("read %s = %+v, want %q", uri, res.Contents, want)
		}
	}

	writeFiles(t, root, map[string]string{"binary.dat": "\xff\xfe\x00"})
	res, err = read("file:///binary.dat")
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Contents[0]; string(c.Blob) != "\xff\xfe\x00" || c.Text != "" || c.MIMEType != "application/octet-stream" {
		t.Errorf("file:///binary.dat = %+v, want the bytes as a blob", c)
	}

	for _, tc := range []struct{ uri, want string }{
		{"file:///../outside/secret.txt", "leaves the sandbox"},
		{"file:///%2E%2E/outside/secret.txt", "leaves the sandbox"},
		{"file:///escape", "escapes"},
		{"file:///outdir/secret.txt", "escapes"},
		{"file:///missing.txt", "not found"},
		{"file://host/notes.txt", "not found"}, // matches no template
	} {
		res, err := read(tc.uri)
		if err == nil {
			t.Errorf("read %s = %+v, want an error", tc.uri, res.Contents)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("read %s: %v, want an error containing %q", tc.uri, err, tc.want)
		}
		if strings.Contains(err.Error(), "TOP SECRET") {
			t.Errorf("read %s leaked the secret: %v", tc.uri, err)
		}
	}
}
