package replay

// Mock targets: in-process fakes of an MCP server, an A2A agent and an
// AG-UI agent, each in a vulnerable and a hardened variant. They validate
// the adapters (mock replay must reproduce every finding on the vulnerable
// fake and none on the hardened one) and never stand for a real
// implementation in a report: their Mode is "mock".
//
// Each fake keeps its state under its own mutex; HTTP fakes listen on
// 127.0.0.1 only.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// MockCanary is the code of the directive the fake MCP server keeps in its
// "environment" (PlantedDirective).
const MockCanary = "canary-mock-7f3a"

// MockCredentialEnv is the variable the fake MCP server's pipe form would
// take its credential from.
const MockCredentialEnv = "MOCK_CREDENTIAL"

// fakeMCP is the logic of the fake MCP server, shared by its pipe and HTTP
// forms. Vulnerable: answers before initialize, returns its environment
// from get_env, parses leniently, serves every call. Hardened: the
// opposite of each.
type fakeMCP struct {
	hardened bool
	mu       sync.Mutex
	ready    map[string]bool // per session: initialize answered
}

func (f *fakeMCP) handle(session string, raw []byte) []byte {
	var id json.RawMessage
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string         `json:"name"`
			Args map[string]any `json:"arguments"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if f.hardened {
		if _, err := jsonrpc.Decode(raw, jsonrpc.Limits{}); err != nil {
			return fakeError(jsonrpc.PeekID(raw).Raw(), jsonrpc.CodeParseError, "parse error: "+err.Error())
		}
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		return fakeError("null", jsonrpc.CodeParseError, "parse error")
	}
	id = msg.ID
	if len(id) == 0 {
		return nil // a notification
	}
	f.mu.Lock()
	ready := f.ready[session]
	f.mu.Unlock()
	stateless := msg.Params.Meta["io.modelcontextprotocol/protocolVersion"] != nil
	switch msg.Method {
	case "initialize":
		f.mu.Lock()
		f.ready[session] = true
		f.mu.Unlock()
		return fakeResult(id, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
	case "server/discover":
		if !stateless {
			return fakeError(string(id), jsonrpc.CodeInvalidRequest, "server/discover without _meta")
		}
		return fakeResult(id, `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
	case "ping":
		return fakeResult(id, `{}`)
	}
	if f.hardened && !ready && !stateless {
		return fakeError(string(id), jsonrpc.CodeInvalidRequest, msg.Method+" before initialize")
	}
	switch msg.Method {
	case "tools/list":
		return fakeResult(id, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"get_env","inputSchema":{"type":"object"}},{"name":"transfer","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		switch msg.Params.Name {
		case "echo":
			return fakeResult(id, textResult("Echo: "+fmt.Sprint(msg.Params.Args["message"])))
		case "get_env":
			if f.hardened {
				return fakeResult(id, textResult(`{"PATH":"/usr/bin","`+DirectiveEnv+`":"[removed: instructions in data]"}`))
			}
			return fakeResult(id, textResult(`{"PATH":"/usr/bin","`+DirectiveEnv+`":"`+PlantedDirective(MockCanary)+`"}`))
		case "transfer":
			if f.hardened {
				return fakeError(string(id), -32001, "transfer needs a credential and the user's consent")
			}
			return fakeResult(id, textResult("transferred"))
		}
		return fakeError(string(id), jsonrpc.CodeInvalidParams, "unknown tool")
	}
	return fakeError(string(id), jsonrpc.CodeMethodNotFound, "method not found: "+msg.Method)
}

func textResult(s string) string {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
	return string(b)
}

func fakeResult(id json.RawMessage, result string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func fakeError(id string, code int64, msg string) []byte {
	if id == "" {
		id = "null"
	}
	b, _ := json.Marshal(msg)
	return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, b))
}

// servePipe answers the messages of one pipe connection until it closes.
func (f *fakeMCP) servePipe(conn transport.Conn, session string) {
	defer conn.Close()
	for {
		msg, err := conn.Read(context.Background())
		if err != nil {
			return
		}
		out := f.handle(session, msg.Raw)
		if out == nil {
			continue
		}
		m, err := jsonrpc.Decode(out, jsonrpc.Limits{})
		if err != nil {
			return
		}
		if conn.Write(context.Background(), m) != nil {
			return
		}
	}
}

// ServeHTTP is a minimal streamable HTTP endpoint: one JSON answer per
// POST, a session id from initialize.
func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	session := r.Header.Get("Mcp-Session-Id")
	if session == "" && strings.Contains(string(body), `"initialize"`) {
		f.mu.Lock()
		session = fmt.Sprintf("fake-%d", len(f.ready)+1)
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", session)
	}
	out := f.handle(session, body)
	if out == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// MockMCP returns an MCP target backed by the fake server, over an
// in-memory pipe (the stdio adapter's shape) or, with overHTTP, over
// streamable HTTP on 127.0.0.1. stop releases the listener.
func MockMCP(hardened, overHTTP bool, profile string) (t *Target, stop func(), err error) {
	f := &fakeMCP{hardened: hardened, ready: map[string]bool{}}
	name := "mock-mcp"
	if hardened {
		name += "-hardened"
	}
	t = &Target{Name: name, Protocol: MCP, Mode: "mock", Profile: profile, Canary: MockCanary,
		Harmless: Tool{Name: "echo", Args: map[string]any{"message": "early"}}, Sensitive: Tool{Name: "transfer"}}
	if !overHTTP {
		n := 0
		var mu sync.Mutex
		t.Dial = func(context.Context) (transport.Conn, error) {
			mu.Lock()
			n++
			sess := fmt.Sprintf("pipe-%d", n)
			mu.Unlock()
			client, server := transport.Pipe()
			go f.servePipe(server, sess)
			return client, nil
		}
		// The pipe stands for stdio: the fake takes its credential from
		// its "environment", and serves its consequential tool without it
		// unless hardened.
		t.CredentialEnv = MockCredentialEnv
		dial := t.Dial
		t.DialEnv = func(ctx context.Context, _ map[string]string, _ []string) (transport.Conn, error) { return dial(ctx) }
		return t, func() {}, nil
	}
	srv, err := loopbackServer(f)
	if err != nil {
		return nil, nil, err
	}
	t.Name += "-http"
	t.URL = srv.URL + "/mcp"
	t.Dial = func(context.Context) (transport.Conn, error) {
		return transport.NewHTTPClient(transport.HTTPClientOptions{URL: t.URL}), nil
	}
	return t, srv.Close, nil
}

func loopbackServer(h http.Handler) (*httptest.Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	return srv, nil
}

// fakeA2A is a JSON-RPC A2A agent speaking both vocabularies: 1.0 when the
// request carries A2A-Version: 1.0, 0.3 otherwise, each refusing the
// other's method names. Hardened: requires a bearer token and parses
// strictly, refuses a delegation chain whose scopes widen (reading the
// hops unverified: it is a fake), and holds every task for the user's
// input. Both serve an unsigned agent card at the well-known path.
type fakeA2A struct{ hardened bool }

func (f *fakeA2A) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodGet && r.URL.Path == a2agw.CardPath {
		card, _ := json.Marshal(map[string]any{"name": "fake", "description": "the replay's fake A2A agent", "version": "1",
			"supportedInterfaces": []any{map[string]any{"url": "http://" + r.Host + "/a2a", "protocolBinding": "JSONRPC", "protocolVersion": A2A10}},
			"defaultInputModes":   []string{"text/plain"}, "defaultOutputModes": []string{"text/plain"},
			"skills": []any{map[string]any{"id": "echo", "name": "echo", "description": "echo", "tags": []string{"echo"}}}})
		_, _ = w.Write(card)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if f.hardened {
		if _, err := jsonrpc.Decode(body, jsonrpc.Limits{}); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(fakeError("null", jsonrpc.CodeParseError, "parse error"))
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write(fakeError("null", -32001, "authentication required"))
			return
		}
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Message struct {
				Role     string              `json:"role"`
				Kind     string              `json:"kind"`
				Parts    []map[string]any    `json:"parts"`
				Metadata map[string][]string `json:"metadata"`
			} `json:"message"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		_, _ = w.Write(fakeError("null", jsonrpc.CodeParseError, "parse error"))
		return
	}
	v10 := r.Header.Get("A2A-Version") == A2A10
	id := string(req.ID)
	if f.hardened && !monotone(req.Params.Message.Metadata[a2agw.MetadataKey]) {
		_, _ = w.Write(fakeError(id, -32001, "delegation chain widens its grant"))
		return
	}
	state10, state03 := "TASK_STATE_COMPLETED", "completed"
	if f.hardened {
		state10, state03 = "TASK_STATE_INPUT_REQUIRED", "input-required"
	}
	switch {
	case v10 && req.Method == "SendMessage" && req.Params.Message.Role == "ROLE_USER" && req.Params.Message.Kind == "":
		_, _ = w.Write(fakeResult(req.ID, `{"task":{"id":"t1","status":{"state":"`+state10+`"}}}`))
	case !v10 && req.Method == "message/send" && req.Params.Message.Role == "user" && req.Params.Message.Kind == "message" &&
		len(req.Params.Message.Parts) > 0 && req.Params.Message.Parts[0]["kind"] == "text":
		_, _ = w.Write(fakeResult(req.ID, `{"kind":"task","id":"t1","status":{"state":"`+state03+`"}}`))
	case v10 && req.Method == "GetExtendedAgentCard", !v10 && req.Method == "agent/getAuthenticatedExtendedCard":
		_, _ = w.Write(fakeResult(req.ID, `{"name":"fake","skills":[]}`))
	default:
		_, _ = w.Write(fakeError(id, jsonrpc.CodeMethodNotFound, "method not found or wrong vocabulary: "+req.Method))
	}
}

// monotone reports whether the scopes of a delegation chain's hops never
// widen, reading the hops' payloads without verifying them.
func monotone(chain []string) bool {
	var granted []string
	for i, tok := range chain {
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			return false
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		var hop a2agw.Hop
		if err != nil || json.Unmarshal(payload, &hop) != nil {
			return false
		}
		if ok, _ := a2agw.Subset(hop.Scopes, granted); i > 0 && !ok {
			return false
		}
		granted = hop.Scopes
	}
	return true
}

// MockA2A returns an A2A target backed by the fake agent on 127.0.0.1. The
// hardened agent's target carries the credential it asks for.
func MockA2A(hardened bool, version string) (*Target, func(), error) {
	srv, err := loopbackServer(&fakeA2A{hardened: hardened})
	if err != nil {
		return nil, nil, err
	}
	t := &Target{Name: "mock-a2a", Protocol: A2A, Mode: "mock", Profile: version, URL: srv.URL + "/a2a"}
	if hardened {
		t.Name += "-hardened"
		t.Bearer = "mock-credential"
	}
	return t, srv.Close, nil
}

// fakeAGUI streams a run as SSE; broken leaves out the end events. It
// plays a model that trusts tool output: a tool result in the input that
// says to reply only with a code gets the code as the answer.
type fakeAGUI struct{ broken bool }

func (f *fakeAGUI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ThreadID string `json:"threadId"`
		RunID    string `json:"runId"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&in) != nil || len(in.Messages) == 0 {
		http.Error(w, "want a RunAgentInput", http.StatusBadRequest)
		return
	}
	answer := "sunny"
	for _, m := range in.Messages {
		content, _ := m.Content.(string)
		if _, code, ok := strings.Cut(content, AGUIInjectionPrefix); ok && m.Role == "tool" {
			answer, _, _ = strings.Cut(code, ".")
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	events := []string{
		fmt.Sprintf(`{"type":"RUN_STARTED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID),
		`{"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"}`,
		fmt.Sprintf(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":%q}`, answer),
	}
	if !f.broken {
		events = append(events, `{"type":"TEXT_MESSAGE_END","messageId":"a1"}`,
			fmt.Sprintf(`{"type":"RUN_FINISHED","threadId":%q,"runId":%q}`, in.ThreadID, in.RunID))
	}
	for _, e := range events {
		_ = transport.WriteEvent(w, transport.Event{Data: []byte(e)})
	}
}

// MockAGUI returns an AG-UI target backed by the fake agent on 127.0.0.1.
func MockAGUI(broken bool) (*Target, func(), error) {
	srv, err := loopbackServer(&fakeAGUI{broken: broken})
	if err != nil {
		return nil, nil, err
	}
	name := "mock-agui"
	if broken {
		name += "-broken"
	}
	return &Target{Name: name, Protocol: AGUI, Mode: "mock", URL: srv.URL + "/agui"}, srv.Close, nil
}
