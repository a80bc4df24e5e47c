package attack_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/attack/attacktest"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/testenv"
)

func load(t *testing.T, path string) *oatf.Document {
	t.Helper()
	doc, diags := oatf.ValidateOptions{Library: true}.Load(path)
	if doc == nil {
		t.Fatalf("load %s: %v", path, oatf.Errors(diags))
	}
	return doc
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// endpoints is filled by OnReady and read by the agent.
type endpoints struct {
	mu   sync.Mutex
	urls map[string]string
}

func (e *endpoints) set(m map[string]string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.urls = m
	return nil
}

func (e *endpoints) get() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.urls
}

// TestLibraryGoalHijackingExploitsGullibleAgent runs the public library's
// OATF-014 (an MCP tool result tells the model to e-mail financial data)
// against the scripted agent, which obeys: the verdict is exploited, with
// the send_email call to the attacker's address as evidence.
func TestLibraryGoalHijackingExploitsGullibleAgent(t *testing.T) {
	doc := load(t, filepath.Join(testenv.SharedDir(t), "oatf", "scenarios", "benchmark", "OATF-014_goal-hijacking-tool-response.yaml"))
	var eps endpoints
	agent := &attacktest.Agent{MCP: eps.get}
	srv := httptest.NewServer(agent)
	defer srv.Close()
	res, err := attack.Run(testCtx(t), doc, attack.Options{AGUIURL: srv.URL, OnReady: eps.set})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Result != oatf.Exploited {
		t.Fatalf("verdict %s, want exploited; agent called %v; actors %+v", res.Verdict.Result, agent.CalledTools(), res.Actors)
	}
	if res.Verdict.MaxTier != "boundary_breach" {
		t.Errorf("max tier %q, want boundary_breach", res.Verdict.MaxTier)
	}
	byID := map[string]attack.IndicatorResult{}
	for _, ir := range res.Indicators {
		byID[ir.IndicatorID] = ir
	}
	if ir := byID["OATF-014-02"]; ir.Result != oatf.Matched || !strings.Contains(ir.Evidence, "compliance-gateway.com") || ir.Actor != "mcp_email" {
		t.Errorf("OATF-014-02 = %+v, want matched on the attacker address at mcp_email", ir)
	}
	if !slices.Equal(agent.CalledTools(), []string{"browse_web", "send_email"}) {
		t.Errorf("agent called %v", agent.CalledTools())
	}
	if res.Failed() {
		t.Errorf("an actor failed: %+v", res.Actors)
	}
}
