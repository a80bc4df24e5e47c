//go:build integration

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/testenv"
)

// TestSharedChildSubscriptionsConformance runs the conformance suite's
// server-stateless scenario (2026-07-28) through warden with go-sdk's
// everything-server as a stdio child, which all stateless clients share.
// Its subscriptions/listen checks open a listen, change the tool list with
// another call, and expect the acknowledgement and the change on the listen's
// stream, tagged with the listen's own request id. Each subscription check
// must score what the server scores over HTTP on its own.
func TestSharedChildSubscriptionsConformance(t *testing.T) {
	node := testenv.Node22(t)
	suite := testenv.ConformanceJS(t)
	server := testenv.GoEverythingServer(t)
	args := []string{"--scenario", "server-stateless", "--spec-version", "2026-07-28"}

	direct := runScenario(t, node, suite, startEverythingServer(t, server, true), args)
	gw := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      command: [%q]\n", server))
	through := runScenario(t, node, suite, gw, args)

	compared := 0
	for id, st := range direct {
		if !strings.Contains(id, "subscription") {
			continue
		}
		compared++
		if !strings.HasPrefix(st, "SUCCESS") {
			t.Errorf("check %s: %s directly; want SUCCESS, the suite or server changed", id, st)
		}
		if got := through[id]; got != st {
			t.Errorf("check %s: %s directly, %q through warden's shared stdio child", id, st, got)
		}
	}
	if compared < 3 {
		t.Fatalf("%d subscription checks ran directly, want at least 3: %v", compared, direct)
	}
	t.Logf("%d subscription checks compared", compared)
}

// runScenario runs the suite's scenarios named in args against url and
// returns each check's status, keyed as runConformance keys them. A scenario
// run alone prints no Total line, so only its checks.json files are read.
func runScenario(t *testing.T, node, suite, url string, args []string) map[string]string {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{suite, "server", "--url", url, "--output-dir", out}, args...)...)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	output, err := cmd.CombinedOutput()
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) == 0 {
		t.Fatalf("conformance against %s wrote no checks.json (err %v):\n%s", url, err, tail(output, 40))
	}
	checks := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list []struct{ ID, Status, ErrorMessage string }
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		scenario := stamp.ReplaceAllString(filepath.Base(filepath.Dir(f)), "")
		for i, c := range list {
			checks[fmt.Sprintf("%s/%s#%d", scenario, c.ID, i)] = strings.TrimSpace(c.Status + " " + c.ErrorMessage)
		}
	}
	return checks
}

// TestSharedChildProgressOfTwoClientsWithOneToken: two stateless clients
// call go-sdk everything-server's test_tool_with_progress, a stdio child they
// share, both with the progress token "same", at the same time (each call
// lasts 100 ms in the server, so they overlap). Each gets the three steps of
// its own call, under its own token.
func TestSharedChildProgressOfTwoClientsWithOneToken(t *testing.T) {
	ctx := testCtx(t)
	url := startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams:\n    - name: everything\n      command: [%q]\n", testenv.GoEverythingServer(t)))

	type client struct {
		mu     sync.Mutex
		steps  []float64
		tokens []any
	}
	connectClient := func(c *client) *mcp.ClientSession {
		cl := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				c.mu.Lock()
				c.steps = append(c.steps, req.Params.Progress)
				c.tokens = append(c.tokens, req.Params.ProgressToken)
				c.mu.Unlock()
			},
		})
		cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := &client{}, &client{}
	csA, csB := connectClient(a), connectClient(b)
	call := func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{},
			Meta: mcp.Meta{"progressToken": "same"}})
		return err
	}

	start := make(chan struct{})
	errs := make(chan error, 2)
	for _, cs := range []*mcp.ClientSession{csA, csB} {
		go func() { <-start; errs <- call(cs) }()
	}
	close(start)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("call: %v", err)
		}
	}
	// A client may run its handler after CallTool returns.
	for _, c := range []*client{a, b} {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			c.mu.Lock()
			n := len(c.steps)
			c.mu.Unlock()
			if n >= 3 {
				break
			}
		}
	}
	for name, c := range map[string]*client{"A": a, "B": b} {
		c.mu.Lock()
		if !slices.Equal(c.steps, []float64{0, 50, 100}) {
			t.Errorf("client %s got progress %v, want its own call's [0 50 100]", name, c.steps)
		}
		for _, tok := range c.tokens {
			if tok != "same" {
				t.Errorf("client %s got progress under token %v, want its own \"same\"", name, tok)
			}
		}
		c.mu.Unlock()
	}
}
