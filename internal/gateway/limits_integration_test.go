//go:build integration

package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/transport"
)

const limitsInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"limits","version":"1"}}}`

// postInit sends an initialize to url with the given bearer key ("" for
// none) and returns the response, its body read.
func postInit(t *testing.T, url, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(limitsInit))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

// mustInit opens a session and returns its id.
func mustInit(t *testing.T, url, key string) string {
	t.Helper()
	resp, body := postInit(t, url, key)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"serverInfo"`)) {
		t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

// wantBusy checks the refusal of a session over a limit.
func wantBusy(t *testing.T, url, key, rule string) {
	t.Helper()
	resp, body := postInit(t, url, key)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the limit: %s, Retry-After %q, %s; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"), body)
	}
	var e struct {
		ID    int `json:"id"`
		Error struct {
			Code int64 `json:"code"`
			Data struct{ Stage, Rule string }
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("refusal body %s: %v", body, err)
	}
	if e.ID != 1 || e.Error.Code != transport.CodeBusy || e.Error.Data.Stage != "listener" || e.Error.Data.Rule != rule {
		t.Fatalf("refusal %s, want id 1, code %d, listener/%s", body, transport.CodeBusy, rule)
	}
}

// childrenWith counts the running processes whose command line contains
// marker (a temporary directory of the test's own).
func childrenWith(t *testing.T, marker string) int {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(marker)) {
			if st, err := os.ReadFile(filepath.Join(filepath.Dir(p), "stat")); err == nil && !isZombie(st) {
				n++
			}
		}
	}
	return n
}

// isZombie reads the state field of /proc/PID/stat.
func isZombie(stat []byte) bool {
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && len(stat) > i+2 && stat[i+2] == 'Z'
}

// eventually retries f until it reports true, failing after a deadline.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the deadline", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChildCapPerStdioUpstream: with max_children_per_upstream 2, two
// sessions each run their demo-server child; a third session is refused with
// 503 and starts no third child; once one session ends (its child gone),
// a new session is accepted again.
func TestChildCapPerStdioUpstream(t *testing.T) {
	ctx := testCtx(t)
	root := t.TempDir() // on each child's command line: how the test finds them
	url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  limits: {max_children_per_upstream: 2}
  upstreams:
    - name: demo
      command: [%q, demo-server, --root, %q]
`, wardenBin, root))

	first, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
	second, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
	for _, cs := range []*mcp.ClientSession{first, second} {
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := childrenWith(t, root); n != 2 {
		t.Fatalf("%d children with two sessions, want 2", n)
	}

	wantBusy(t, url, "", transport.RuleChildLimit)
	if n := childrenWith(t, root); n != 2 {
		t.Fatalf("%d children after a refused session, want 2: the refusal started one", n)
	}
	// The sessions held go on working.
	if _, err := second.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}

	if err := first.Close(); err != nil { // DELETE: the child is stopped
		t.Fatal(err)
	}
	var sid string
	eventually(t, "a session after one ended", func() bool {
		resp, body := postInit(t, url, "")
		if resp.StatusCode == http.StatusServiceUnavailable {
			return false
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"serverInfo"`)) {
			t.Fatalf("initialize after a session ended: %s %s", resp.Status, body)
		}
		sid = resp.Header.Get("Mcp-Session-Id")
		return true
	})
	if sid == "" {
		t.Fatal("no session id")
	}
	if n := childrenWith(t, root); n != 2 {
		t.Fatalf("%d children, want 2", n)
	}
}

// TestSessionCapPerPrincipal: with API keys, each principal holds at most
// max_sessions_per_principal sessions and everyone together max_sessions;
// a refused session never reaches the upstream.
func TestSessionCapPerPrincipal(t *testing.T) {
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: demoserver.NewLedger()})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	var upstreamSessions atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"initialize"`)) {
				upstreamSessions.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(up.Close)

	const aliceKey, bobKey = "wk_alice_limits_0123456789", "wk_bob_limits_9876543210"
	url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  auth: {api_keys: {alice: %s, bob: %s}}
  limits: {max_sessions: 3, max_sessions_per_principal: 2}
  upstreams: [{name: demo, url: %s}]
`, sha(aliceKey), sha(bobKey), up.URL))

	alice := mustInit(t, url, aliceKey)
	mustInit(t, url, aliceKey)
	wantBusy(t, url, aliceKey, transport.RulePrincipalSessionLimit)
	mustInit(t, url, bobKey) // alice's sessions do not hold bob back
	wantBusy(t, url, bobKey, transport.RuleSessionLimit)
	if n := upstreamSessions.Load(); n != 3 {
		t.Fatalf("%d upstream sessions, want 3: a refused session reached the upstream", n)
	}

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", alice)
	req.Header.Set("Authorization", "Bearer "+aliceKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	eventually(t, "room for bob after alice ended a session", func() bool {
		resp, _ := postInit(t, url, bobKey)
		return resp.StatusCode == http.StatusOK
	})
}

// TestSlowBodyCutOff: a client that sends a few bytes of its body and
// stalls is answered 408 after gateway.limits.body_timeout and
// disconnected; no session starts.
func TestSlowBodyCutOff(t *testing.T) {
	root := t.TempDir()
	url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  limits: {body_timeout: 1s}
  upstreams:
    - name: demo
      command: [%q, demo-server, --root, %q]
`, wardenBin, root))
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // the failure guard
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", host, len(limitsInit), limitsInit[:10])
	got, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v (read %q)", err, got)
	}
	if !bytes.HasPrefix(got, []byte("HTTP/1.1 408 ")) || !bytes.Contains(got, []byte(`"rule":"body-timeout"`)) {
		t.Fatalf("answer to a stalled body: %s", got)
	}
	if n := childrenWith(t, root); n != 0 {
		t.Fatalf("%d children for a request that never arrived", n)
	}
}

// Sessions refused for a limit are counted in /metrics, as denials of
// stage listener, so that an operator sees the limit being reached.
func TestSessionLimitRefusalsCounted(t *testing.T) {
	up, _ := demoUpstream(t, false)
	g := gatewayFromYAML(t, fmt.Sprintf(`version: 1
gateway:
  listen: {addr: "127.0.0.1:0"}
  limits: {max_sessions: 1, max_sessions_per_principal: 1}
  upstreams: [{name: demo, url: %q}]
telemetry: {metrics: true}
`, up))
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	mustInit(t, srv.URL+"/mcp", "")
	wantBusy(t, srv.URL+"/mcp", "", transport.RuleSessionLimit)
	wantBusy(t, srv.URL+"/mcp", "", transport.RuleSessionLimit)
	if m := scrapeMetrics(t, srv.URL); !strings.Contains(m, `warden_denials_total{upstream="demo",stage="listener"} 2`) {
		t.Errorf("/metrics does not count the 2 refused sessions:\n%s", m)
	}
}
