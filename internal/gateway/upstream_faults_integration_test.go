//go:build integration

package gateway_test

// Issue 16, "faithful", with real upstreams: an HTTP upstream that loses
// its sessions (go-sdk's everything-server, killed and started again on the
// same port; go-sdk's own handler, replaced) gives the client what the
// streamable HTTP transport gives a client whose session is gone, and a
// real SDK starts again; the upstream's HTTP errors arrive with their
// status and words; server-everything's priming events are not logged as
// invalid messages.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/transport"
)

// goEverything is go-sdk's everything-server, stateful, on a fixed
// loopback address, so that it can be killed and started again there.
type goEverything struct {
	bin, addr string
	cmd       *exec.Cmd
}

func (s *goEverything) start(t *testing.T) {
	t.Helper()
	s.cmd = exec.Command(s.bin, "-http="+s.addr, "-stateless=false")
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := s.cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("everything-server did not listen on %s", s.addr)
}

// restart kills the server (its sessions die with it) and starts it again.
func (s *goEverything) restart(t *testing.T) {
	t.Helper()
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.start(t)
}

// TestUpstreamSessionLossGivesClient404 restarts the upstream under a
// go-sdk client's session: the client gets 404 on its session (go-sdk:
// ErrSessionMissing), every later request does too, and a new session
// works. Before, every request of the old session got 200 with -32032,
// forever.
func TestUpstreamSessionLossGivesClient404(t *testing.T) {
	ctx := testCtx(t)
	up := &goEverything{bin: testenv.GoEverythingServer(t), addr: testenv.FreeLoopbackAddr(t)}
	up.start(t)
	gw := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      url: http://%s/mcp\n", up.addr))

	client := mcp.NewClient(&mcp.Implementation{Name: "loss", Version: "1"}, nil)
	// go-sdk's default reconnection: warden may learn of the loss on its
	// own standalone stream first and end the client's; the client then
	// reconnects that stream and is told 404.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list before the restart: %v", err)
	}
	session := cs.ID()

	up.restart(t)

	// The call that finds out gets 404 (or, if its stream had opened
	// already, warden's session-expired error); the session is over.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_, err = cs.ListTools(cctx, nil)
	cancel()
	switch {
	case err == nil:
		t.Fatal("tools/list on a session the upstream lost succeeded")
	case errors.Is(err, mcp.ErrSessionMissing):
		t.Logf("the call that found out got 404: %v", err)
	default:
		if rule := refusalRule(t, err); rule != "session-expired" {
			t.Fatalf("the call that found out: %v (rule %q), want 404 or rule session-expired", err, rule)
		}
		t.Logf("the call that found out got the session-expired error: %v", err)
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		if code := requestSession(t, method, gw, session); code != http.StatusNotFound {
			t.Errorf("%s on the lost session: %d, want 404", method, code)
		}
	}

	// go-sdk starts again, as the spec asks of a client given 404.
	cs2, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("a new session after the 404: %v", err)
	}
	defer cs2.Close()
	if _, err := cs2.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list on the new session: %v", err)
	}
}

// refusalRule returns the rule of a warden error go-sdk returned, or "".
func refusalRule(t *testing.T, err error) string {
	t.Helper()
	var werr *sdkjsonrpc.Error
	var d struct{ Stage, Rule string }
	if errors.As(err, &werr) {
		json.Unmarshal(werr.Data, &d)
	}
	return d.Rule
}

// requestSession sends method on the session and returns the status.
func requestSession(t *testing.T, method, url, session string) int {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	}
	req, _ := http.NewRequest(method, url, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// forgetfulUpstream is go-sdk's own streamable HTTP handler for a small
// server, which forget replaces with a new one: every session the old one
// knew is then unknown (404), as after a restart, while the old one's
// streams stay open. refuse makes it answer tools/call with an HTTP error.
type forgetfulUpstream struct {
	mu     sync.Mutex
	h      http.Handler
	refuse atomic.Bool
	srv    *httptest.Server
	server *mcp.Server
}

func newForgetfulUpstream(t *testing.T) *forgetfulUpstream {
	u := &forgetfulUpstream{server: mcp.NewServer(&mcp.Implementation{Name: "forgetful", Version: "1"}, nil)}
	mcp.AddTool(u.server, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi"}}}, nil, nil
	})
	u.forget()
	u.srv = httptest.NewServer(u)
	t.Cleanup(u.srv.Close)
	return u
}

func (u *forgetfulUpstream) forget() {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.server }, nil)
	u.mu.Lock()
	u.h = h
	u.mu.Unlock()
}

func (u *forgetfulUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if u.refuse.Load() && r.Method == http.MethodPost && r.Header.Get("Mcp-Method") != "notifications/initialized" {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"tools/call"`) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "token lacks scope tools:write\n")
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
	}
	u.mu.Lock()
	h := u.h
	u.mu.Unlock()
	h.ServeHTTP(w, r)
}

// stdioSession serves one session of g on an in-memory connection, as
// `gateway --stdio` serves its client, and returns the client's end and
// ServeConn's result.
func stdioSession(t *testing.T, ctx context.Context, g *gateway.Gateway, upstream string) (transport.Conn, <-chan error) {
	t.Helper()
	client, server := transport.Pipe()
	served := make(chan error, 1)
	go func() { served <- g.ServeConn(ctx, server, upstream, "", false) }()
	t.Cleanup(func() { client.Close() })
	return client, served
}

func pipeSend(t *testing.T, ctx context.Context, c transport.Conn, line string) {
	t.Helper()
	msg, err := jsonrpc.Decode([]byte(line), jsonrpc.Limits{})
	if err == nil {
		err = c.Write(ctx, msg)
	}
	if err != nil {
		t.Fatalf("writing %s: %v", line, err)
	}
}

// pipeAnswer reads until the answer to id.
func pipeAnswer(t *testing.T, ctx context.Context, c transport.Conn, id string) *jsonrpc.Message {
	t.Helper()
	for {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for the answer to %s: %v", id, err)
		}
		if msg.Kind == jsonrpc.KindResponse && msg.ID.Raw() == id {
			return msg
		}
	}
}

func pipeInitialize(t *testing.T, ctx context.Context, c transport.Conn) {
	t.Helper()
	pipeSend(t, ctx, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := pipeAnswer(t, ctx, c, "1"); m.Error != nil {
		t.Fatalf("initialize: %s", m.Raw)
	}
	pipeSend(t, ctx, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// TestUpstreamSessionLossStdioClient: a client on a stdio connection has no
// 404; the request that found out gets the session-expired error, which
// says to start again, and then the session ends.
func TestUpstreamSessionLossStdioClient(t *testing.T) {
	ctx := testCtx(t)
	up := newForgetfulUpstream(t)
	g := gatewayFromYAML(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: forgetful\n      url: %s\n", up.srv.URL))
	t.Cleanup(func() { g.Close() })
	client, served := stdioSession(t, ctx, g, "forgetful")
	pipeInitialize(t, ctx, client)
	pipeSend(t, ctx, client, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := pipeAnswer(t, ctx, client, "2"); m.Error != nil {
		t.Fatalf("tools/list: %s", m.Raw)
	}

	up.forget()
	pipeSend(t, ctx, client, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	m := pipeAnswer(t, ctx, client, "3")
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32032,"message":"upstream \"forgetful\" ended the session (it answered HTTP 404 to the session's id): start a new session","data":{"stage":"upstream","rule":"session-expired"}}}`
	if string(m.Raw) != want {
		t.Errorf("the request that found out got\n%s\nwant\n%s", m.Raw, want)
	}
	if msg, err := client.Read(ctx); err == nil {
		t.Errorf("after the loss the client read %s, want the end of the session", msg.Raw)
	}
	select {
	case err := <-served:
		if !errors.Is(err, transport.ErrSessionLost) {
			t.Errorf("ServeConn returned %v, want an error wrapping ErrSessionLost", err)
		}
	case <-ctx.Done():
		t.Fatal("the session did not end")
	}
}

// TestUpstreamHTTPErrorRelayed: an upstream's HTTP 403 reaches the client
// with its status and the upstream's words, not as a bare "HTTP 403".
func TestUpstreamHTTPErrorRelayed(t *testing.T) {
	ctx := testCtx(t)
	up := newForgetfulUpstream(t)
	g := gatewayFromYAML(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: strict\n      url: %s\n", up.srv.URL))
	t.Cleanup(func() { g.Close() })
	client, _ := stdioSession(t, ctx, g, "strict")
	pipeInitialize(t, ctx, client)
	up.refuse.Store(true)
	pipeSend(t, ctx, client, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hello","arguments":{}}}`)
	m := pipeAnswer(t, ctx, client, "2")
	want := `{"jsonrpc":"2.0","id":2,"error":{"code":-32032,"message":"upstream strict: answered HTTP 403 Forbidden: token lacks scope tools:write",` +
		`"data":{"stage":"upstream","rule":"http-status","status":403,"upstream_message":"token lacks scope tools:write"}}}`
	if string(m.Raw) != want {
		t.Errorf("the refused call's answer\n%s\nwant\n%s", m.Raw, want)
	}
}

// TestServerEverythingPrimingEventNotLogged calls server-everything
// (streamableHttp, which opens every POST stream with an event that has an
// id and empty data, as 2025-11-25 asks) through warden, and reads warden's
// log: nothing is reported invalid.
func TestServerEverythingPrimingEventNotLogged(t *testing.T) {
	ctx := testCtx(t)
	node := testenv.Node22(t)
	script, err := filepath.EvalSymlinks(testenv.EverythingServer(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeLoopbackAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	// server-everything listens on every interface; this preload keeps it
	// on loopback.
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	if err := os.WriteFile(preload, []byte(`const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (port, ...rest) {
  if ((typeof port === "number" || typeof port === "string") && typeof rest[0] !== "string") {
    return listen.call(this, port, "127.0.0.1", ...rest);
  }
  return listen.call(this, port, ...rest);
};
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "--require", preload, script, "streamableHttp")
	cmd.Env = []string{"PATH=" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "PORT=" + port}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything did not listen on %s", addr)
		}
	}

	logs := &lockedBuffer{}
	cfg, err := config.Parse([]byte(fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      url: http://%s/mcp\n", addr)), "test.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	opts, err := assemble.FromConfig(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })

	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, "2025-11-25")
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint("hi ", i)}})
		if err != nil || res.IsError {
			t.Fatalf("echo through warden: %v %v", res, err)
		}
	}
	if !strings.Contains(logs.String(), "session started") {
		t.Fatalf("warden's log is not captured:\n%s", logs)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "invalid") || strings.Contains(line, "dropped") {
			t.Errorf("warden logged a fault for server-everything's stream: %s", line)
		}
	}
}

// TestUpstreamSessionLossTypeScriptClient: the TypeScript SDK's client,
// whose session's upstream restarted, is told 404 and starts a new session
// that works.
func TestUpstreamSessionLossTypeScriptClient(t *testing.T) {
	node, sdk := testenv.Node22(t), testenv.TypeScriptSDK(t)
	script, err := filepath.Abs(filepath.Join("testdata", "tsclient", "sessionloss.cjs"))
	if err != nil {
		t.Fatal(err)
	}
	up := &goEverything{bin: testenv.GoEverythingServer(t), addr: testenv.FreeLoopbackAddr(t)}
	up.start(t)
	gw := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      url: http://%s/mcp\n", up.addr))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a failure guard
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, gw)
	cmd.Env = []string{"NODE_PATH=" + sdk, "HOME=" + t.TempDir()}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	type step struct {
		Step    string
		Tools   int
		OK      bool
		Status  *int
		Rule    string
		Message string
	}
	dec := json.NewDecoder(stdout)
	next := func() step {
		t.Helper()
		var s step
		if err := dec.Decode(&s); err != nil {
			t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
		}
		if s.Step == "error" {
			t.Fatalf("the TypeScript client failed: %s", s.Message)
		}
		return s
	}
	if s := next(); s.Step != "before" || s.Tools == 0 {
		t.Fatalf("before the restart: %+v", s)
	}
	up.restart(t)
	io.WriteString(stdin, "go\n")
	for {
		s := next()
		if s.Step == "again" {
			if s.Tools == 0 {
				t.Errorf("the new session lists no tools: %+v", s)
			}
			break
		}
		switch {
		case s.Step != "after" || s.OK:
			t.Fatalf("after the restart: %+v, want a failure", s)
		case s.Status != nil && *s.Status == http.StatusNotFound:
			t.Logf("the TypeScript client was told 404: %s", s.Message)
		case s.Rule == "session-expired":
			t.Logf("the call that found out got the session-expired error: %s", s.Message)
		default:
			t.Fatalf("after the restart: %+v, want 404 or rule session-expired", s)
		}
	}
	stdin.Close()
}
