package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
)

// readyWriter is warden gateway's stderr: it keeps what is written and
// closes ready when the gateway says it listens.
type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "warden gateway listening on ") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestApprovalRoundTripThroughTheCLI: warden gateway holds a go-sdk
// client's transfer_funds; warden approve list shows it, warden approve
// allow releases it, and the call runs once; a denied call is refused.
func TestApprovalRoundTripThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := run(t, "keys", "generate", "--data-dir", dir); code != ExitOK {
		t.Fatalf("keys generate: %s", stderr)
	}
	ledger := demoserver.NewLedger()
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: ledger, Env: func() []string { return nil }})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer up.Close()

	listen, admin := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(dir, "gw.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 1
gateway:
  listen: {addr: %q}
  admin: {addr: %q}
  zero_trust: {data_dir: %q, subject: alice, store: memory, hold_for_approval: true}
  upstreams:
    - name: demo
      url: %s
      require_token: [transfer_funds]
`, listen, admin, dir, up.URL)), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gwDone := make(chan int, 1)
	gwErr := &readyWriter{ready: make(chan struct{})}
	go func() {
		gwDone <- Run(ctx, []string{"gateway", "--config", cfg, "--log-level", "error"},
			&Env{Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: gwErr, Getenv: func(string) string { return "" }})
	}()
	defer func() { cancel(); <-gwDone }()

	// The gateway says it listens once its listener and admin API are up.
	select {
	case <-gwErr.ready:
	case code := <-gwDone:
		gwDone <- code
		t.Fatalf("warden gateway exited with %d before listening:\n%s", code, gwErr)
	case <-time.After(30 * time.Second):
		t.Fatalf("warden gateway did not listen within 30 s:\n%s", gwErr)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(cctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + listen + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connecting to the gateway that said it listens: %v\n%s", err, gwErr)
	}
	defer cs.Close()

	transfer := func(amount int) chan error {
		done := make(chan error, 1)
		go func() {
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "transfer_funds",
				Arguments: map[string]any{"account_id": "ACC_123", "amount": amount, "recipient": "vendor@example.com"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool error")
			}
			done <- err
		}()
		return done
	}
	// pendingID polls warden approve list, as a person would: the call
	// is held in another goroutine's request, which shows nowhere else.
	pendingID := func() (string, string) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(25 * time.Millisecond) {
			_, out, _ := run(t, "approve", "list", "--admin", "http://"+admin, "--data-dir", dir)
			if m := regexp.MustCompile(`apr_\w+`).FindString(out); m != "" {
				return m, out
			}
			if time.Now().After(deadline) {
				t.Fatalf("no held call appeared in warden approve list within 30 s:\n%s", out)
			}
		}
	}

	done := transfer(2500)
	id, listing := pendingID()
	if !strings.Contains(listing, `{"account_id":"ACC_123","amount":2500,"recipient":"vendor@example.com"}`) {
		t.Errorf("warden approve list does not show the exact arguments:\n%s", listing)
	}
	if code, out, stderr := run(t, "approve", "allow", id, "--admin", "http://"+admin, "--data-dir", dir, "--as", "bob"); code != ExitOK ||
		!strings.Contains(out, "approved as bob") {
		t.Fatalf("approve allow: %d %s %s", code, out, stderr)
	}
	if err := <-done; err != nil {
		t.Fatalf("the approved call failed: %v", err)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("balance %d after the approved transfer, want 97500", b)
	}

	done = transfer(999999)
	id, _ = pendingID()
	run(t, "approve", "deny", id, "--admin", "http://"+admin, "--data-dir", dir, "--reason", "too much")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "too much") {
		t.Fatalf("a denied call: %v, want the denial with its reason", err)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Fatalf("the denied transfer ran: balance %d", b)
	}
	// Deciding twice is an error, not a second run.
	if code, _, _ := run(t, "approve", "allow", id, "--admin", "http://"+admin, "--data-dir", dir); code == ExitOK {
		t.Error("a decided call could be approved again")
	}
}
