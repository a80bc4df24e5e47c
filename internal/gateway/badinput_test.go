package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/inprocess"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// badInput is one hostile or broken message and the refusal it must get.
type badInput struct {
	name string
	body string
	code int64
	rule string
}

// smallLimit keeps the oversize case small.
const smallLimit = 64 << 10

func badInputs() []badInput {
	deep := strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)
	return []badInput{
		{"duplicate key deep in arguments", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a","message":"b"}}}`, -32700, "duplicate-key"},
		{"duplicate tool name", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","name":"get_env"}}`, -32700, "duplicate-key"},
		{"escaped duplicate key", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","n\u0061me":"get_env"}}`, -32700, "duplicate-key"},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"\xff\xfe\"}}}", -32700, "utf8"},
		{"lone surrogate", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"message":"\ud800"}}}`, -32700, "surrogate"},
		{"too deep", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo","arguments":` + deep + `}}`, -32700, "depth"},
		{"oversize", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"` + strings.Repeat("x", smallLimit) + `"}}}`, -32600, "size"},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":8,"method":"tools/list"}`, -32600, "jsonrpc-version"},
		{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"tools/list"}`, -32600, "id-type"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, -32600, "id-type"},
		{"Method in another case", `{"jsonrpc":"2.0","id":9,"Method":"tools/call","params":{"name":"get_env"}}`, -32600, "member-case"},
		{"method with a NUL", `{"jsonrpc":"2.0","id":10,"method":"tools/list","method\u0000":"tools/call"}`, -32600, "unknown-member"},
		{"batch on 2025-11-25", `[{"jsonrpc":"2.0","id":11,"method":"tools/list"}]`, -32600, "batch-forbidden"},
		{"tool name not a string", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":7}}`, -32602, "tool-name"},
		{"escaped denied tool", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"get\u005fenv","arguments":{}}}`, -32001, `deny "get_env"`},
	}
}

// countingUpstream is the demo server in process, counting every message
// warden forwards to it.
func countingUpstream(t *testing.T) (gateway.Upstream, *atomic.Int64) {
	t.Helper()
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Env: func() []string { return nil }})
	deny, err := config.CompilePattern("get_env")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	return gateway.Upstream{
		Name:      "demo",
		Transport: "in-process",
		Dial: func(ctx context.Context, _ bool) (transport.Conn, error) {
			c, err := inprocess.Dial(ctx, server, "demo", jsonrpc.Limits{}, nil)
			if err != nil {
				return nil, err
			}
			return &counted{Conn: c, n: &n}, nil
		},
		Pipeline: gateway.NewPipeline(gateway.MethodPolicy{}, gateway.ToolPolicy{List: config.List{Deny: []config.Pattern{deny}}}),
	}, &n
}

type counted struct {
	transport.Conn
	n *atomic.Int64
}

func (c *counted) Write(ctx context.Context, m *jsonrpc.Message) error {
	c.n.Add(1)
	return c.Conn.Write(ctx, m)
}

func checkRefusal(t *testing.T, tc badInput, reply []byte) {
	t.Helper()
	msg, err := jsonrpc.Decode(reply, jsonrpc.Limits{})
	if err != nil || msg.Error == nil {
		t.Fatalf("%s: reply %q is not a JSON-RPC error (%v)", tc.name, reply, err)
	}
	var d jsonrpc.Detail
	if err := json.Unmarshal(msg.Error.Data, &d); err != nil {
		t.Fatalf("%s: error data %s: %v", tc.name, msg.Error.Data, err)
	}
	if msg.Error.Code != tc.code || d.Rule != tc.rule {
		t.Errorf("%s: got code %d rule %q (%s), want code %d rule %q", tc.name, msg.Error.Code, d.Rule, msg.Error.Message, tc.code, tc.rule)
	}
}

func TestBadInputOverHTTPReachesNoUpstream(t *testing.T) {
	up, seen := countingUpstream(t)
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Limits: jsonrpc.Limits{MaxBytes: smallLimit}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()

	post := mcpPoster(t, srv.URL+"/mcp")
	session := initSession(t, post)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	post(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`, session) // the upstream has everything sent so far
	before := seen.Load()

	for _, tc := range badInputs() {
		_, reply := post(tc.body, session)
		checkRefusal(t, tc, reply)
	}
	if got := seen.Load() - before; got != 0 {
		t.Errorf("the upstream received %d messages from the bad-input corpus, want 0", got)
	}
	// The session still works after all that.
	_, reply := post(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"message":"still here"}}}`, session)
	if !bytes.Contains(reply, []byte("Echo: still here")) {
		t.Errorf("after the corpus, echo answered %s", reply)
	}
}

// readReply returns the JSON-RPC message of an HTTP reply, whether it came
// as application/json or as the first event of an SSE stream.
func readReply(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Skip the priming event (an id with empty data) that opens a stream.
		events := transport.NewEventReader(resp.Body, 1<<20)
		for {
			ev, err := events.Next()
			if err != nil {
				t.Fatalf("SSE reply: %v", err)
			}
			if len(ev.Data) > 0 {
				return ev.Data
			}
		}
	}
	b, _ := io.ReadAll(resp.Body)
	return bytes.TrimSpace(b)
}

func TestBadInputOverStdioReachesNoUpstream(t *testing.T) {
	up, seen := countingUpstream(t)
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Limits: jsonrpc.Limits{MaxBytes: smallLimit}})
	if err != nil {
		t.Fatal(err)
	}
	clientIn, gwIn := io.Pipe()
	gwOut, clientOut := io.Pipe()
	conn := transport.NewStream(clientIn, clientOut, clientIn, transport.StreamOptions{
		Limits: jsonrpc.Limits{MaxBytes: smallLimit}, ReplyInvalid: true, Name: "client"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.ServeConn(ctx, conn, "demo", "", false); close(done) }()
	defer func() { cancel(); gwIn.Close(); <-done }()

	lines := bufio.NewReader(gwOut)
	next := func() []byte {
		type res struct {
			b   []byte
			err error
		}
		ch := make(chan res, 1)
		go func() { b, err := lines.ReadBytes('\n'); ch <- res{b, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("reading the gateway's stdout: %v", r.err)
			}
			return bytes.TrimSpace(r.b)
		case <-time.After(5 * time.Second):
			t.Fatal("no reply from the gateway")
			return nil
		}
	}
	io.WriteString(gwIn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	next()
	io.WriteString(gwIn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	io.WriteString(gwIn, `{"jsonrpc":"2.0","id":"sync","method":"ping"}`+"\n")
	next() // the upstream has everything sent so far
	before := seen.Load()
	for _, tc := range badInputs() {
		io.WriteString(gwIn, tc.body+"\n")
		checkRefusal(t, tc, next())
	}
	if got := seen.Load() - before; got != 0 {
		t.Errorf("the upstream received %d messages from the bad-input corpus, want 0", got)
	}
}

// mcpPoster returns a function that POSTs one body to the MCP endpoint at
// url (revision 2025-11-25, in session when it is not empty) and returns
// the response with its reply read.
func mcpPoster(t *testing.T, url string) func(body, session string) (*http.Response, []byte) {
	return func(body, session string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp, readReply(t, resp)
	}
}

// initSession initializes a session through post and returns its id.
func initSession(t *testing.T, post func(body, session string) (*http.Response, []byte)) string {
	t.Helper()
	resp, _ := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, "")
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("no session id from initialize")
	}
	return session
}
