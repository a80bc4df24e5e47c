package attack_test

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentwarden/warden/internal/assemble"
	"github.com/agentwarden/warden/internal/attack"
	"github.com/agentwarden/warden/internal/attack/attacktest"
	"github.com/agentwarden/warden/internal/config"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/testenv"
)

// startGateway builds warden's gateway from YAML, as the CLI does, and
// serves it on loopback. It returns the base URL (upstreams at /mcp/NAME).
func startGateway(t *testing.T, yaml string) string {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml), "test.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	opts, err := assemble.FromConfig(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

// TestLibraryGoalHijackingBlockedByGateway runs the same OATF-014 attack
// with the agent's MCP servers behind warden's gateway, whose tool policy
// denies send_email on the e-mail server: the agent still obeys the
// injected instruction, but the call never reaches the attacker's server,
// so the verdict is not_exploited.
func TestLibraryGoalHijackingBlockedByGateway(t *testing.T) {
	doc := load(t, filepath.Join(testenv.SharedDir(t), "oatf", "scenarios", "benchmark", "OATF-014_goal-hijacking-tool-response.yaml"))
	var eps endpoints
	agent := &attacktest.Agent{MCP: eps.get}
	srv := httptest.NewServer(agent)
	defer srv.Close()
	onReady := func(urls map[string]string) error {
		gw := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  upstreams:
    - name: web
      url: %s
    - name: email
      url: %s
      tools: {deny: [send_email]}
`, urls["mcp_web"], urls["mcp_email"]))
		return eps.set(map[string]string{"mcp_web": gw + "/mcp/web", "mcp_email": gw + "/mcp/email"})
	}
	res, err := attack.Run(testCtx(t), doc, attack.Options{AGUIURL: srv.URL, OnReady: onReady})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict.Result != oatf.NotExploited {
		t.Fatalf("verdict %s, want not_exploited behind the gateway; agent called %v", res.Verdict.Result, agent.CalledTools())
	}
	if !slices.Contains(agent.CalledTools(), "browse_web") {
		t.Errorf("agent called %v; the attack's first step (browse_web through the gateway) did not happen", agent.CalledTools())
	}
	for _, e := range res.Trace {
		if e.Actor == "mcp_email" && e.Method == "tools/call" {
			t.Errorf("send_email reached the attacker's server through the gateway: %+v", e)
		}
	}
	if res.Failed() {
		t.Errorf("an actor failed: %+v", res.Actors)
	}
}
