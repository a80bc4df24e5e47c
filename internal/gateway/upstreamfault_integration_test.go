//go:build integration

package gateway_test

// Issue 9, upstream faults: a stdio MCP server that crashes, hangs or sends
// garbage (testdata/faultserver, a real child process) gives the client a
// clear JSON-RPC error, a cleaned-up session (its id unknown, its child
// reaped, its relay goroutines gone) and revoked credentials.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/revoke"
	"github.com/agentwarden/warden/internal/transport"
)

// Bounds of the fault tests: the gateway's request timeout, how long a
// client may leave its session idle, and each child's shutdown step.
const (
	faultRequestTimeout = time.Second
	faultIdleTimeout    = 2 * time.Second
	faultShutdown       = 200 * time.Millisecond
)

// TestUpstreamFaults runs each fault of the fault server behind an
// in-process gateway with zero-trust on, for a go-sdk client over HTTP, then
// for a raw connection that sees every message the relay sends.
func TestUpstreamFaults(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "faultserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/faultserver").CombinedOutput(); err != nil {
		t.Fatalf("building the fault server: %v\n%s", err, out)
	}
	cases := []struct {
		mode string
		code int64
		rule string
		// message is the error's message.
		message string
		// idle is the session idle timeout: the session ends by itself
		// after the fault, or when the client leaves it idle.
		idle time.Duration
	}{
		// The gateway ends the session itself when its upstream exits.
		{"crash", -32032, "ended", `upstream "faulty" ended the session (its process exited with status 3)`, time.Hour},
		// The request times out; the session ends when the client leaves
		// it idle, and the child, deaf to stdin and SIGTERM, is killed.
		{"hang", -32034, "timeout", `upstream "faulty" did not answer within 1s`, faultIdleTimeout},
		// Garbage is dropped, never relayed: the call whose id it carries
		// is answered at once with what came instead, not when the request
		// timeout runs out.
		{"invalid-json", -32033, "invalid-output", `upstream "faulty" answered with a message warden could not validate (rule syntax: ` + invalidJSONReason + `); it was not relayed`, faultIdleTimeout},
		{"not-jsonrpc", -32033, "invalid-output", `upstream "faulty" answered with a message warden could not validate (rule ` + notJSONRPCReason + `); it was not relayed`, faultIdleTimeout},
		{"unknown-id", -32034, "timeout", `upstream "faulty" did not answer within 1s`, faultIdleTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			dataDir := keyedDataDir(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  limits: {request_timeout: %s, session_idle_timeout: %s}
  zero_trust: {data_dir: %q, subject: alice}
  upstreams:
    - name: faulty
      command: [%q, %s, %q]
      shutdown_timeout: %s
      require_token: [transfer]
`, faultRequestTimeout, tc.idle, dataDir, bin, tc.mode, pidFile, faultShutdown))
			srv := httptest.NewServer(g.Handler())
			t.Cleanup(func() { srv.Close(); g.Close() })
			before := sessionGoroutines()

			wire := &faultWire{}
			client := mcp.NewClient(&mcp.Implementation{Name: "fault", Version: "1"}, nil)
			// No standalone SSE stream: it would keep the session busy, and
			// this client leaves its session idle after the fault.
			tr := &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", DisableStandaloneSSE: true, MaxRetries: -1}
			cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: tr, Writer: wire},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			session := cs.ID()
			pid := readPid(t, pidFile)
			t.Cleanup(func() { killLeftover(pid) })
			if n := sessionGoroutines(); n <= before {
				t.Fatalf("%d relay goroutines with a session open, %d before: the leak check sees nothing", n, before)
			}

			start := time.Now()
			cctx, ccancel := context.WithTimeout(ctx, faultRequestTimeout+10*time.Second)
			_, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: "work", Arguments: map[string]any{}})
			ccancel()
			took := time.Since(start)
			if err == nil {
				t.Fatal("the call succeeded")
			}
			// The client's SDK sees warden's refusal, stage and rule
			// included (warden's upstream codes are clear of the ones go-sdk
			// takes for its own connection closing) ...
			if stage := wardenRefusal(t, err); stage != "upstream" {
				t.Errorf("go-sdk reports the refusal of stage %q, want upstream: %v", stage, err)
			}
			// ... and the error as it was on the wire is exactly it.
			read := wire.read()
			if len(read) != 2 || string(read[0].ID) != "1" || string(read[1].ID) != "2" {
				// 1 is initialize, 2 the call: nothing the upstream sent in
				// place of an answer reached the client.
				t.Fatalf("the client read %d messages %s, want only the answers to its two requests", len(read), wire.raw())
			}
			e := read[1].Error
			if e == nil || e.Code != tc.code || e.Data.Stage != "upstream" || e.Data.Rule != tc.rule || e.Message != tc.message {
				t.Fatalf("the call's answer is %+v in %s; want code %d, stage upstream, rule %s: %q", e, wire.raw(), tc.code, tc.rule, tc.message)
			}
			if tc.code == -32034 && took < faultRequestTimeout {
				t.Errorf("the timeout came after %v, before the request timeout of %v", took, faultRequestTimeout)
			}

			// The client leaves without ending its session, and does not
			// touch it (a request would keep it alive); the gateway cleans up
			// on its own: at once after the crash, after the idle timeout
			// otherwise.
			deadline := time.Now().Add(faultIdleTimeout + 15*time.Second)
			var problems []string
			for {
				problems = problems[:0]
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					problems = append(problems, fmt.Sprintf("the upstream's process %d was not reaped (kill 0: %v)", pid, err))
				}
				if n := sessionGoroutines(); n != before {
					problems = append(problems, fmt.Sprintf("%d goroutines of the session's relay and child, %d before it", n, before))
				}
				if !sessionRevoked(t, dataDir, session) {
					problems = append(problems, "the revocation registry does not list the session")
				}
				if len(problems) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the session was not cleaned up:\n%s\n%s", strings.Join(problems, "\n"), sessionDump())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if code, body := postToSession(t, srv.URL+"/mcp", session); code != http.StatusNotFound {
				t.Errorf("a request on the ended session is answered %d %s, want 404 (unknown session)", code, body)
			}

			// The same fault on a raw client connection, where every message
			// the relay sends arrives (the HTTP listener drops a response
			// to nothing pending on its own): the relay sends the answers
			// to the client's requests, and nothing else.
			got := relayWitness(t, ctx, g, pidFile)
			if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"error":{"code":%d,"message":%q,"data":{"stage":"upstream","rule":%q}}}`,
				tc.code, tc.message, tc.rule); len(got) != 2 || !strings.HasPrefix(got[0], `{"jsonrpc":"2.0","id":1,"result":`) || got[1] != want {
				t.Errorf("on a raw connection the relay sent\n%s\nwant the answer to initialize, then\n%s", strings.Join(got, "\n"), want)
			}
		})
	}
}

// faultWire keeps the JSON-RPC messages a client read, from go-sdk's
// LoggingTransport ("read: {...}").
type faultWire struct {
	mu   sync.Mutex
	msgs []string
}

// faultMsg is what the fault tests look at in a message the client read.
type faultMsg struct {
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
		Data    struct{ Stage, Rule string }
	} `json:"error"`
}

func (w *faultWire) Write(p []byte) (int, error) {
	if dir, body, ok := strings.Cut(strings.TrimSpace(string(p)), ": "); ok && dir == "read" {
		w.mu.Lock()
		w.msgs = append(w.msgs, body)
		w.mu.Unlock()
	}
	return len(p), nil
}

func (w *faultWire) read() []faultMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]faultMsg, len(w.msgs))
	for i, m := range w.msgs {
		if json.Unmarshal([]byte(m), &out[i]) != nil {
			out[i].ID = json.RawMessage("unreadable")
		}
	}
	return out
}

func (w *faultWire) raw() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "\n")
}

// readPid waits for the fault server to write its pid.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the fault server did not start")
		}
	}
}

// relayWitness serves one session of g on an in-memory connection: it sends
// initialize, notifications/initialized and a tools/call (id 2), and
// returns every message the relay sent until the call's answer.
func relayWitness(t *testing.T, ctx context.Context, g *gateway.Gateway, pidFile string) []string {
	t.Helper()
	os.Remove(pidFile)
	client, server := transport.Pipe()
	served := make(chan error, 1)
	go func() { served <- g.ServeConn(ctx, server, "faulty", "raw-session", false) }()
	defer func() {
		client.Close()
		<-served
	}()
	rctx, cancel := context.WithTimeout(ctx, faultRequestTimeout+10*time.Second)
	defer cancel()
	var got []string
	send := func(line string) {
		msg, err := jsonrpc.Decode([]byte(line), jsonrpc.Limits{})
		if err == nil {
			err = client.Write(rctx, msg)
		}
		if err != nil {
			t.Fatalf("writing %s: %v", line, err)
		}
	}
	// answer reads what the relay sends until the answer to id.
	answer := func(id string) {
		for {
			msg, err := client.Read(rctx)
			if err != nil {
				t.Fatalf("after %s: %v", strings.Join(got, "\n"), err)
			}
			got = append(got, string(msg.Raw))
			if msg.Kind == jsonrpc.KindResponse && msg.ID.Raw() == id {
				return
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	answer("1")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { killLeftover(pid) })
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"work","arguments":{}}}`)
	answer("2")
	return got
}

// killLeftover kills the fault server with SIGKILL if a failed test left it
// running: it is this process's child, so its pid is not reused before it
// is reaped.
func killLeftover(pid int) {
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(cmdline), "faultserver") {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// postToSession sends a ping on the session and returns the HTTP status
// and body.
func postToSession(t *testing.T, url, session string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(body))
}

// sessionRevoked reports whether the revocation registry in dataDir (the
// default store, SQLite) lists the session.
func sessionRevoked(t *testing.T, dataDir, session string) bool {
	t.Helper()
	reg, err := revoke.OpenSQLite(filepath.Join(dataDir, "revoked.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	list, err := reg.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.Kind == revoke.KindSession && r.ID == session {
			return true
		}
	}
	return false
}

// sessionMarkers name the functions a session's goroutines run: the
// gateway's relay and the child process connection.
var sessionMarkers = []string{
	"internal/gateway.(*Gateway).ServeConn",
	"internal/gateway.(*Relay)",
	"internal/transport.(*CommandConn)",
	"internal/transport.Command.func",
	"internal/transport.(*stream).readLoop",
}

// sessionStacks returns the stacks of the goroutines running a session's
// code.
func sessionStacks() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var stacks []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		for _, m := range sessionMarkers {
			if strings.Contains(g, m) {
				stacks = append(stacks, g)
				break
			}
		}
	}
	return stacks
}

func sessionGoroutines() int { return len(sessionStacks()) }
func sessionDump() string    { return strings.Join(sessionStacks(), "\n\n") }

// Why the strict decoder refuses the fault server's two kinds of garbage
// (docs/errors.md): a line cut before its closing brace, and an object
// without "jsonrpc".
const (
	invalidJSONReason = "unexpected end of input, expected ',' or '}' after object member at $ (offset 79)"
	notJSONRPCReason  = `jsonrpc-version: missing "jsonrpc" member at $ (offset 0)`
)
