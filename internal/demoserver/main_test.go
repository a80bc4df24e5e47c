package demoserver

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stderrWatch is a concurrency-safe stderr for Main that hands over the URL
// of the "listening on" line as soon as it is written.
type stderrWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
	url  chan string
}

func newStderrWatch() *stderrWatch { return &stderrWatch{url: make(chan string, 1)} }

func (w *stderrWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		for line := range strings.Lines(w.buf.String()) {
			if u, ok := strings.CutPrefix(line, "listening on "); ok && strings.HasSuffix(u, "\n") {
				w.url <- strings.TrimSpace(u)
				w.sent = true
				break
			}
		}
	}
	return len(p), nil
}

func (w *stderrWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runMain runs Main in the background; the returned func cancels it and
// returns its exit code.
func runMain(t *testing.T, args []string, stdin io.Reader, stdout, stderr io.Writer) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	code := make(chan int, 1)
	go func() { code <- Main(ctx, args, stdin, stdout, stderr) }()
	return func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("Main did not return after its context was cancelled")
			return -1
		}
	}
}

func TestMainStdio(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("over stdio"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WARDEN_DEMO_SECRET", canary)

	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	stderr := newStderrWatch()
	code := make(chan int, 1)
	go func() {
		code <- Main(t.Context(), []string{"--root", root}, serverIn, serverOut, stderr)
		serverOut.Close()
	}()

	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v\nstderr:\n%s", err, stderr)
	}
	if got := wantOK(t, call(t, cs, "echo", map[string]any{"message": "ping"})); got != "Echo: ping" {
		t.Errorf("echo = %q", got)
	}
	if got := wantOK(t, call(t, cs, "read_file", map[string]any{"path": "notes.txt"})); got != "over stdio" {
		t.Errorf("read_file = %q, want the file under --root", got)
	}
	if got := wantOK(t, call(t, cs, "get_env", nil)); !strings.Contains(got, "WARDEN_DEMO_SECRET="+canary) {
		t.Errorf("get_env over stdio does not reveal the planted canary")
	}

	// Closing the client closes the server's stdin: Main returns 0.
	cs.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("Main = %d after stdin closed, want 0\nstderr:\n%s", c, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Main did not return after stdin closed")
	}
}

func TestMainHTTP(t *testing.T) {
	t.Setenv("WARDEN_DEMO_SECRET", canary)
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"sessions", nil},
		{"stateless", []string{"--stateless"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("over http"), 0o644); err != nil {
				t.Fatal(err)
			}
			stderr := newStderrWatch()
			stop := runMain(t, append([]string{"--root", root, "--http", "127.0.0.1:0"}, tc.extra...), strings.NewReader(""), io.Discard, stderr)
			var url string
			select {
			case url = <-stderr.url:
			case <-time.After(10 * time.Second):
				stop()
				t.Fatalf("no listening line on stderr:\n%s", stderr)
			}
			if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
				t.Errorf("listening on %q, want http://127.0.0.1:PORT/mcp", url)
			}

			connectHTTP := func(opts *mcp.ClientOptions, rev string) *mcp.ClientSession {
				t.Helper()
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test"}, opts).
					Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: rev})
				if err != nil {
					t.Fatalf("connect to %s: %v", url, err)
				}
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			cs := connectHTTP(nil, revStateless)
			if got := wantOK(t, call(t, cs, "echo", map[string]any{"message": "ping"})); got != "Echo: ping" {
				t.Errorf("echo = %q", got)
			}
			if got := wantOK(t, call(t, cs, "read_file", map[string]any{"path": "notes.txt"})); got != "over http" {
				t.Errorf("read_file = %q, want the file under --root", got)
			}
			if got := wantOK(t, call(t, cs, "get_env", nil)); !strings.Contains(got, "WARDEN_DEMO_SECRET="+canary) {
				t.Errorf("get_env over HTTP does not reveal the planted canary")
			}
			receipt := wantOK(t, call(t, cs, "transfer_funds", map[string]any{"account_id": "ACC_123", "amount": 100, "recipient": "bob"}))
			if !strings.Contains(receipt, "txn-0001") {
				t.Errorf("receipt %q lacks txn-0001", receipt)
			}

			// A web page cannot reach the server across origins.
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Origin", "https://evil.example")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("cross-origin POST: status %d, want 403", resp.StatusCode)
			}

			// Clients share one ledger: a second client sees the next id.
			cs2 := connectHTTP(nil, revLegacy)
			receipt = wantOK(t, call(t, cs2, "transfer_funds", map[string]any{"account_id": "ACC_123", "amount": 100, "recipient": "bob"}))
			if !strings.Contains(receipt, "txn-0002") || !strings.Contains(receipt, "99800") {
				t.Errorf("second client's receipt %q, want txn-0002 leaving 99800", receipt)
			}

			// With sessions, a 2025-11-25 client is asked over a
			// server->client request on the HTTP stream.
			if tc.name == "sessions" {
				cs3 := connectHTTP(&mcp.ClientOptions{
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "yes"}}, nil
					},
				}, revLegacy)
				if got := wantOK(t, call(t, cs3, "ask_user", map[string]any{"question": "ok?"})); got != "yes" {
					t.Errorf("ask_user over HTTP = %q, want yes", got)
				}
			}

			if code := stop(); code != 0 {
				t.Errorf("Main = %d after cancel, want 0\nstderr:\n%s", code, stderr)
			}
		})
	}
}

func TestMainUsage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args     []string
		wantCode int
		want     string
	}{
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"extra"}, exitUsage, "unexpected argument"},
		{[]string{"--stateless"}, exitUsage, "--stateless needs --http"},
		{[]string{"--root", filepath.Join(file, "missing")}, exitUsage, "not a directory"},
		{[]string{"--root", file}, exitUsage, "not a directory"},
		{[]string{"--http", "0.0.0.0:0"}, exitUsage, "non-loopback"},
		{[]string{"--http", ":0"}, exitUsage, "non-loopback"},
		{[]string{"--http", "192.0.2.1:0"}, exitUsage, "non-loopback"},
		{[]string{"--http", "nonsense"}, exitUsage, "missing port"},
		{[]string{"-h"}, exitOK, "sandbox"},
	} {
		var stderr bytes.Buffer
		code := Main(t.Context(), tc.args, strings.NewReader(""), io.Discard, &stderr)
		if code != tc.wantCode || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("Main(%q) = %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.wantCode, tc.want)
		}
	}
}
