//go:build integration

package replay

// Live replay against real implementations, plain and behind warden:
// @modelcontextprotocol/server-everything over stdio (Node 22), go-sdk's
// conformance everything-server (stdio, stateful HTTP, stateless HTTP),
// warden's demo server (go-sdk, in-process over HTTP), an a2a-go agent
// (in-process), and @copilotkit/aimock. A missing peer skips the test, or
// fails it under WARDEN_REQUIRE_DEPS=1.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/testenv"
	"github.com/agentwarden/warden/internal/transport"
)

func liveOptions() Options { return Options{StepTimeout: 10 * time.Second} }

func runBoth(t *testing.T, tgt *Target, up Upstream, stdio bool) (plain, behind *Report) {
	t.Helper()
	if testing.Short() {
		t.Skip("live replay runs external servers")
	}
	traces := modelTraces(t, "mcp")
	plain, err := Run(testCtx(t), tgt, traces, liveOptions())
	if err != nil {
		t.Fatal(err)
	}
	bt, stop, err := behindWardenVia(tgt, up, t.TempDir(), stdio)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	behind, err = Run(testCtx(t), bt, traces, liveOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range []*Report{plain, behind} {
		for _, r := range rep.Results {
			t.Logf("%-22s %-20s %-12s %s", rep.Target, r.Property, r.Outcome, r.Evidence)
		}
	}
	// The behind-warden run went through the gateway, and what it blocked
	// on the token and consent paths the gateway refused, with a stage.
	if behind.Gateway == nil || behind.Gateway.AuditRecords == 0 {
		t.Errorf("behind warden: the gateway's audit log recorded nothing: %+v", behind.Gateway)
	} else {
		t.Logf("%s: %s", behind.Target, behind.Gateway.note())
	}
	for _, r := range behind.Results {
		if r.Outcome == Blocked && (r.Property == "P1_identity" || r.Property == "P5_consent") && !strings.Contains(r.Evidence, "[stage ") {
			t.Errorf("behind warden, %s blocked without a gateway stage's refusal: %s", r.Property, r.Evidence)
		}
	}
	return plain, behind
}

// TestLiveServerEverything: the two known findings of the reference server
// appear (get-env returns the canary; tools/call is answered before
// initialize), and behind warden both are blocked.
func TestLiveServerEverything(t *testing.T) {
	node := testenv.Node22(t)
	js := testenv.EverythingServer(t)
	if target, err := filepath.EvalSymlinks(js); err == nil {
		js = target
	}
	canary := "canary-" + randomHex(6)
	env := map[string]string{DirectiveEnv: PlantedDirective(canary)}
	argv := []string{node, js, "stdio"}
	tgt := &Target{Name: "server-everything", Protocol: MCP, Mode: "live", Profile: "2025-06-18", Canary: canary,
		Harmless:  Tool{Name: "echo", Args: map[string]any{"message": "early"}},
		Sensitive: Tool{Name: "get-sum", Args: map[string]any{"a": 1, "b": 2}}, Leak: Tool{Name: "get-env"}}
	tgt.UseCommand(argv, env, []string{"PATH"}, nil)
	plain, behind := runBoth(t, tgt, Upstream{Command: argv, Env: env}, true)
	// P4 follows its counterexample: the directive planted in the
	// environment comes back verbatim from get-env; behind warden the
	// prompt-injection rule quarantines it, and the result still arrives.
	// P1 over stdio: MCP's authorization does not apply, and no credential
	// variable is named, so there is nothing to withhold. P5 is probed
	// after initialize, not before it (that is SL's trace), and behind
	// warden the user is asked through elicitation/create.
	wantOutcomes(t, plain, map[string]Outcome{"SL_lifecycle": Reproduced, "P4_prompt_integrity": Reproduced,
		"P1_identity": Unrealisable, "P5_consent": Reproduced, "WF_wire": Reproduced})
	wantOutcomes(t, behind, map[string]Outcome{"SL_lifecycle": Blocked, "P4_prompt_integrity": Blocked,
		"P1_identity": Blocked, "P5_consent": Blocked, "WF_wire": Blocked})
	wantEvidence(t, plain, "P1_identity", "MCP-2025-06-18-AUTH-03")
	wantEvidence(t, plain, "P5_consent", "no elicitation/create reached the client")
	wantEvidence(t, behind, "P4_prompt_integrity", "[warden: quarantined")
	wantEvidence(t, behind, "P5_consent", "held for the user's consent: elicitation/create")
	if r, _ := plain.Result("P5_consent"); len(r.Steps) == 0 || !strings.Contains(string(r.Steps[len(r.Steps)-1].Sent), `"tools/call"`) ||
		!slices.ContainsFunc(r.Steps, func(s Step) bool { return s.Action == "C_initialize" && s.Answer != "" }) {
		t.Errorf("the consent probe did not call after initialize: %+v", r.Steps)
	}

	// Named as the credential variable, SECRET_TOKEN is withheld from the
	// server for the identity probe: server-everything serves get-sum
	// without it, a reproduction the stdio clause allows to call one.
	tgt.CredentialEnv = "SECRET_TOKEN"
	tgt.UseCommand(argv, map[string]string{DirectiveEnv: PlantedDirective(canary), "SECRET_TOKEN": "s3cret"}, []string{"PATH"}, nil)
	rep, err := Run(testCtx(t), tgt, modelTraces(t, "mcp"), liveOptions())
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, rep, map[string]Outcome{"P1_identity": Reproduced})
	wantEvidence(t, rep, "P1_identity", "started without SECRET_TOKEN")
}

// startGoEverything runs go-sdk's everything-server on a loopback port.
func startGoEverything(t *testing.T, stateless bool) string {
	bin := testenv.GoEverythingServer(t)
	addr := testenv.FreeLoopbackAddr(t)
	cmd := exec.Command(bin, "-http="+addr, fmt.Sprintf("-stateless=%t", stateless))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
	}
	t.Fatalf("everything-server did not listen on %s", addr)
	return ""
}

func goEverythingTarget(name, profile string) *Target {
	return &Target{Name: name, Protocol: MCP, Mode: "live", Profile: profile,
		Harmless:  Tool{Name: "test_simple_text"},
		Sensitive: Tool{Name: "test_multiple_content_types"}}
}

// TestLiveGoSDKEverything: the clean baseline refuses early calls; its
// lenient JSON parsing of duplicate members shows; behind warden the
// ambiguous frame and the unguarded call are refused.
func TestLiveGoSDKEverything(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		bin := testenv.GoEverythingServer(t)
		tgt := goEverythingTarget("go-everything-stdio", "2025-11-25")
		tgt.UseCommand([]string{bin}, nil, []string{"PATH"}, nil)
		plain, behind := runBoth(t, tgt, Upstream{Command: []string{bin}}, true)
		wantOutcomes(t, plain, map[string]Outcome{"SL_lifecycle": Blocked, "P1_identity": Unrealisable, "WF_wire": Reproduced,
			"P4_prompt_integrity": Unrealisable, "P5_consent": Reproduced})
		wantOutcomes(t, behind, map[string]Outcome{"SL_lifecycle": Blocked, "P1_identity": Blocked, "WF_wire": Blocked,
			"P5_consent": Blocked})
	})
	for _, c := range []struct {
		profile   string
		stateless bool
	}{{"2025-11-25", false}, {"2026-07-28", true}} {
		t.Run("http-"+c.profile, func(t *testing.T) {
			url := startGoEverything(t, c.stateless)
			tgt := goEverythingTarget("go-everything-http", c.profile)
			tgt.Dial = func(context.Context) (transport.Conn, error) {
				return transport.NewHTTPClient(transport.HTTPClientOptions{URL: url}), nil
			}
			plain, behind := runBoth(t, tgt, Upstream{URL: url}, false)
			// go-sdk's HTTP handler refuses duplicate members (HTTP 400),
			// unlike its stdio transport.
			wantOutcomes(t, plain, map[string]Outcome{"P1_identity": Reproduced, "WF_wire": Blocked, "P5_consent": Reproduced})
			wantOutcomes(t, behind, map[string]Outcome{"P1_identity": Blocked, "WF_wire": Blocked, "P5_consent": Blocked})
			if c.stateless {
				wantOutcomes(t, plain, map[string]Outcome{"SL_lifecycle": Unrealisable})
			} else {
				wantOutcomes(t, plain, map[string]Outcome{"SL_lifecycle": Blocked})
			}
		})
	}
}

// TestLiveDemoServer: warden's own demo server (go-sdk) leaks its
// environment through get_env and moves money without a token; behind
// warden neither happens.
func TestLiveDemoServer(t *testing.T) {
	canary := "canary-" + randomHex(6)
	server := demoserver.New(demoserver.Options{Root: t.TempDir(), Ledger: demoserver.NewLedger(),
		Env: func() []string { return []string{DirectiveEnv + "=" + PlantedDirective(canary)} }})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv, err := loopbackServer(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	tgt := &Target{Name: "demo-server", Protocol: MCP, Mode: "live", Profile: "2025-11-25", Canary: canary,
		Harmless:  Tool{Name: "echo", Args: map[string]any{"message": "early"}},
		Sensitive: Tool{Name: "transfer_funds", Args: map[string]any{"account_id": "ACC_123", "amount": 10, "recipient": "x@example.com"}},
		Dial: func(context.Context) (transport.Conn, error) {
			return transport.NewHTTPClient(transport.HTTPClientOptions{URL: srv.URL}), nil
		}}
	plain, behind := runBoth(t, tgt, Upstream{URL: srv.URL}, false)
	wantOutcomes(t, plain, map[string]Outcome{"P4_prompt_integrity": Reproduced, "P1_identity": Reproduced, "P5_consent": Reproduced})
	wantOutcomes(t, behind, map[string]Outcome{"P4_prompt_integrity": Blocked, "P1_identity": Blocked, "WF_wire": Blocked,
		"P5_consent": Blocked})
	wantEvidence(t, behind, "P4_prompt_integrity", "[warden: quarantined")
	wantEvidence(t, behind, "P1_identity", "zero-trust token")
	wantEvidence(t, behind, "P5_consent", "elicitation/create")
}

// echoExecutor is the tiny a2a-go agent: it answers every message.
type echoExecutor struct{}

func (echoExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello")), nil)
	}
}

func (echoExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// a2aGoAgent is the a2a-go v2 agent on 127.0.0.1: JSON-RPC at /a2a, its
// card (signed with a key whose JWKS file is cardKeys) at the well-known
// path, and every request body that reached the agent.
type a2aGoAgent struct {
	url, cardKeys string
	mu            sync.Mutex
	bodies        []string
}

func (a *a2aGoAgent) received(s string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, b := range a.bodies {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

func startA2AGo(t *testing.T) *a2aGoAgent {
	t.Helper()
	a := &a2aGoAgent{}
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoExecutor{}))
	var card []byte
	mux := http.NewServeMux()
	mux.HandleFunc("/a2a", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.bodies = append(a.bodies, string(body))
		a.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	})
	mux.HandleFunc(a2agw.CardPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(card)
	})
	srv, err := loopbackServer(mux)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	a.url = srv.URL + "/a2a"
	key, err := newSigningKey("echo-card")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(&a2a.AgentCard{Name: "echo", Description: "says hello", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(a.url, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "hello", Name: "hello", Description: "says hello", Tags: []string{"echo"}}}})
	if err == nil {
		card, err = a2agw.SignCard(raw, key)
	}
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{key.Public()}})
	a.cardKeys = filepath.Join(t.TempDir(), "card.jwks.json")
	if err := os.WriteFile(a.cardKeys, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestLiveA2AGo replays the A2A counterexamples against an a2a-go v2 agent
// (no authentication configured, a signed card), plain and behind an
// in-process warden built from a gateway.a2a configuration. Plain, the
// unauthenticated request (IMPL-FAIL), the amplified delegation, the forged
// card and the task nobody approved reproduce. Behind warden the first three
// are refused by the gateway's auth, delegation and card stages: the
// amplified chain never reaches the agent, and the refusals are in warden's
// audit log. The unapproved task still runs: the gateway has no approval
// hold for A2A.
func TestLiveA2AGo(t *testing.T) {
	if testing.Short() {
		t.Skip("live replay")
	}
	agent := startA2AGo(t)
	traces := modelTraces(t, "a2a")
	tgt := &Target{Name: "a2a-go", Protocol: A2A, Mode: "live", Profile: A2A10, URL: agent.url, CardKeys: agent.cardKeys}
	plain, err := Run(testCtx(t), tgt, traces, liveOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bt, stop, err := BehindWarden(tgt, Upstream{}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	behind, err := Run(testCtx(t), bt, traces, liveOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range []*Report{plain, behind} {
		for _, r := range rep.Results {
			t.Logf("%-14s %-14s %-12s %s", rep.Target, r.Property, r.Outcome, r.Evidence)
		}
	}
	wantOutcomes(t, plain, map[string]Outcome{"P1_identity": Reproduced, "P2_card": Reproduced,
		"P3_delegation": Reproduced, "P5_consent": Reproduced})
	if r, _ := plain.Result("WF_wire"); r.Outcome == Unrealisable {
		t.Errorf("WF_wire could not be driven: %s", r.Evidence)
	}
	wantOutcomes(t, behind, map[string]Outcome{"P1_identity": Blocked, "P2_card": Blocked,
		"P3_delegation": Blocked, "P5_consent": Blocked, "WF_wire": Blocked})
	for prop, by := range map[string]string{"P1_identity": "stage auth", "P2_card": "stage card, rule signature",
		"P3_delegation": "stage delegation, rule INV-7", "P5_consent": "consent", "WF_wire": "stage wire"} {
		if r, _ := behind.Result(prop); !strings.Contains(r.Evidence, by) {
			t.Errorf("behind warden, %s was not refused by the gateway (%s): %s", prop, by, r.Evidence)
		}
	}
	// The amplified hop reached the agent plain, and not through warden.
	amplified := func(rep *Report) string {
		r, _ := rep.Result("P3_delegation")
		var body struct {
			Params struct {
				Message struct {
					Metadata map[string][]string `json:"metadata"`
				} `json:"message"`
			} `json:"params"`
		}
		for _, st := range r.Steps {
			if st.Action == "A_amplify" && json.Unmarshal(st.Sent, &body) == nil {
				if hops := body.Params.Message.Metadata[a2agw.MetadataKey]; len(hops) == 2 {
					return hops[1]
				}
			}
		}
		t.Fatalf("%s: no amplified hop in the P3 steps: %+v", rep.Target, r.Steps)
		return ""
	}
	if !agent.received(amplified(plain)) {
		t.Error("plain, the amplified delegation did not reach the agent")
	}
	if agent.received(amplified(behind)) {
		t.Error("behind warden, the amplified delegation reached the agent")
	}
	stop()
	audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"upstream":"a2a:target"`, `"stage":"delegation"`, `"stage":"card"`, `"stage":"auth"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("warden's audit log lacks %s", want)
		}
	}
}

// TestLiveAimock replays AG-UI, A2A and MCP, plain and behind warden,
// against @copilotkit/aimock (installed by .ci/deps.sh; a missing one skips
// the test, or fails it under WARDEN_REQUIRE_DEPS=1).
func TestLiveAimock(t *testing.T) {
	if testing.Short() {
		t.Skip("live replay")
	}
	bin := testenv.Aimock(t)
	node := testenv.Node22(t)
	dir := t.TempDir()
	cfg := `{"mcp":{"path":"/mcp","serverInfo":{"name":"mock","version":"1.0.0"},
  "tools":[{"name":"echo","description":"echo","inputSchema":{"type":"object"},"result":"hi"}]},
 "a2a":{"path":"/a2a","agents":[{"name":"echo","description":"echo agent","messages":[{"pattern":"hello","parts":[{"text":"hello"}]}]}]},
 "agui":{"path":"/agui","fixtures":[{"match":{"message":"look up"},"text":"sunny"}]}}`
	if err := os.WriteFile(filepath.Join(dir, "aimock.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeLoopbackAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	js, _ := filepath.EvalSymlinks(bin)
	cmd := exec.Command(node, js, "-c", filepath.Join(dir, "aimock.json"), "-p", port, "--host", "127.0.0.1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	up := false
	for deadline := time.Now().Add(15 * time.Second); !up && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			up = true
		}
	}
	if !up {
		t.Fatalf("aimock did not listen on %s", addr)
	}
	base := "http://" + addr
	for _, tgt := range []*Target{
		{Name: "aimock-agui", Protocol: AGUI, Mode: "live", URL: base + "/agui"},
		{Name: "aimock-a2a", Protocol: A2A, Mode: "live", Profile: A2A10, URL: base + "/a2a", CardURL: base + "/a2a" + a2agw.CardPath},
		{Name: "aimock-mcp", Protocol: MCP, Mode: "live", Profile: "2025-06-18", URL: base + "/mcp",
			Harmless: Tool{Name: "echo"}, Sensitive: Tool{Name: "echo"}, Dial: func(context.Context) (transport.Conn, error) {
				return transport.NewHTTPClient(transport.HTTPClientOptions{URL: base + "/mcp"}), nil
			}},
	} {
		rep, err := Run(testCtx(t), tgt, nil, liveOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Results {
			t.Logf("%-12s %-14s %-12s %s", tgt.Name, r.Property, r.Outcome, r.Evidence)
			if r.Outcome == Unrealisable && r.Property != "P4_prompt_integrity" && r.Property != "SL_lifecycle" {
				t.Errorf("%s %s could not be driven: %s", tgt.Name, r.Property, r.Evidence)
			}
		}
		if tgt.Protocol == AGUI {
			// Behind warden every event passes warden's checks and the
			// stream stays well formed; the planted instruction is
			// quarantined before the agent reads it.
			dir := t.TempDir()
			bt, stop, err := BehindWarden(tgt, Upstream{}, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			behind, err := Run(testCtx(t), bt, nil, liveOptions())
			stop()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range behind.Results {
				t.Logf("%-12s %-14s %-12s %s", bt.Name, r.Property, r.Outcome, r.Evidence)
			}
			wantOutcomes(t, behind, map[string]Outcome{"WF_events": Blocked, "P4_prompt_integrity": Blocked})
			if r, _ := behind.Result("WF_events"); !strings.Contains(r.Steps[0].Answer, "sunny") {
				t.Errorf("behind warden, aimock's answer did not come through: %s", r.Steps[0].Answer)
			}
			audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
			if err != nil || !strings.Contains(string(audit), `"upstream":"agui:target"`) ||
				!strings.Contains(string(audit), `"rule":"prompt_injection/override"`) {
				t.Errorf("warden's audit log lacks aimock's run or the quarantine (%v)", err)
			}
			continue
		}
		if tgt.Protocol == MCP {
			bt, stop, err := BehindWarden(tgt, Upstream{URL: tgt.URL}, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			behind, err := Run(testCtx(t), bt, nil, liveOptions())
			stop()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range behind.Results {
				t.Logf("%-12s %-14s %-12s %s", bt.Name, r.Property, r.Outcome, r.Evidence)
			}
			// Its one tool, taken as the consequential one, needs a token
			// behind warden; the duplicate-member frame never reaches it.
			wantOutcomes(t, behind, map[string]Outcome{"SL_lifecycle": Blocked, "P1_identity": Blocked, "P5_consent": Blocked, "WF_wire": Blocked})
			continue
		}
		// aimock's card is unsigned: behind warden it is pinned, and the
		// forgery is refused as a changed card.
		bt, stop, err := BehindWarden(tgt, Upstream{}, t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		behind, err := Run(testCtx(t), bt, nil, liveOptions())
		stop()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range behind.Results {
			t.Logf("%-12s %-14s %-12s %s", bt.Name, r.Property, r.Outcome, r.Evidence)
		}
		wantOutcomes(t, behind, map[string]Outcome{"P1_identity": Blocked, "P2_card": Blocked, "P3_delegation": Blocked, "WF_wire": Blocked})
	}
}
