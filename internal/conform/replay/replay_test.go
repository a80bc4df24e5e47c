package replay

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/conform/models"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Traces returns the counterexamples of a model's violated properties, as
// the CLI computes them.
func modelTraces(t *testing.T, name string) map[string]*Trace {
	t.Helper()
	m, err := models.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := Counterexamples(context.Background(), m, check.Options{MaxStates: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return traces
}

func outcomes(rep *Report) map[string]Outcome {
	out := map[string]Outcome{}
	for _, r := range rep.Results {
		out[r.Property] = r.Outcome
	}
	return out
}

func wantOutcomes(t *testing.T, rep *Report, want map[string]Outcome) {
	t.Helper()
	got := outcomes(rep)
	for p, w := range want {
		if got[p] != w {
			r, _ := rep.Result(p)
			t.Errorf("%s on %s: %s, want %s (%s)\nsteps: %+v", p, rep.Target, got[p], w, r.Evidence, r.Steps)
		}
	}
}

// TestMockMCP replays the MCP counterexamples on the vulnerable and the
// hardened fake, over the pipe (stdio shape) and streamable HTTP, for the
// stateful revisions: every finding reproduces on the first and none on
// the second.
func TestMockMCP(t *testing.T) {
	traces := modelTraces(t, "mcp")
	for _, overHTTP := range []bool{false, true} {
		for _, rev := range []string{"2025-06-18", "2025-11-25"} {
			for _, hardened := range []bool{false, true} {
				tgt, stop, err := MockMCP(hardened, overHTTP, rev)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(stop)
				rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				want := Reproduced
				if hardened {
					want = Blocked
				}
				wantOutcomes(t, rep, map[string]Outcome{"SL_lifecycle": want, "P4_prompt_integrity": want,
					"P1_identity": want, "P5_consent": want, "WF_wire": want})
				if r, _ := rep.Result("SL_lifecycle"); r.Trace != "counterexample" || r.Steps[0].Action != "S_answer_early" {
					t.Errorf("SL replay did not follow the model's counterexample: %+v", r)
				}
			}
		}
	}
}

// TestProbesTestTheirOwnPrinciple: on the fake (its pipe stands for
// stdio) each MCP probe takes its own path and says so. The consent probe
// calls after initialize, not before it as the lifecycle probe does; the
// identity probe starts the server without its credential variable (MCP's
// stdio clause); the prompt-integrity probe reads the planted directive
// back, not a secret.
func TestProbesTestTheirOwnPrinciple(t *testing.T) {
	traces := modelTraces(t, "mcp")
	for _, hardened := range []bool{false, true} {
		tgt, stop, err := MockMCP(hardened, false, "2025-11-25")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		consent, _ := rep.Result("P5_consent")
		lifecycle, _ := rep.Result("SL_lifecycle")
		if slices.Equal(sentOf(consent.Steps), sentOf(lifecycle.Steps)) || consent.Trace != "probe" {
			t.Errorf("hardened=%v: the consent probe replays the lifecycle probe's messages: %v", hardened, sentOf(consent.Steps))
		}
		if !slices.ContainsFunc(consent.Steps, func(s Step) bool { return s.Action == "C_initialize" && s.Answer != "" }) {
			t.Errorf("hardened=%v: the consent probe called without initializing: %+v", hardened, consent.Steps)
		}
		if !hardened {
			wantEvidence(t, rep, "P1_identity", "started without "+MockCredentialEnv)
			wantEvidence(t, rep, "P4_prompt_integrity", "directive planted in "+DirectiveEnv)
			wantEvidence(t, rep, "P5_consent", "no consent step")
		}
	}
	// Over stdio, with no credential variable named, the identity probe has
	// nothing to withhold: MCP's authorization does not apply there.
	tgt, stop, err := MockMCP(false, false, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	tgt.CredentialEnv = ""
	rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wantOutcomes(t, rep, map[string]Outcome{"P1_identity": Unrealisable})
	wantEvidence(t, rep, "P1_identity", "MCP-2025-06-18-AUTH-03")
}

func sentOf(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if len(s.Sent) > 0 {
			out = append(out, frameMethod(string(s.Sent)))
		}
	}
	return out
}

// wantEvidence checks that a result's evidence says what the oracle saw.
func wantEvidence(t *testing.T, rep *Report, property, want string) {
	t.Helper()
	r, ok := rep.Result(property)
	if !ok || !strings.Contains(r.Evidence, want) {
		t.Errorf("%s on %s: evidence %q lacks %q", property, rep.Target, r.Evidence, want)
	}
}

// TestMockMCPStateless: on 2026-07-28 the adapter sends server/discover and
// _meta on every request (the fake refuses server/discover without it),
// and the lifecycle trace has nothing to replay.
func TestMockMCPStateless(t *testing.T) {
	traces := modelTraces(t, "mcp")
	for _, overHTTP := range []bool{false, true} {
		tgt, stop, err := MockMCP(false, overHTTP, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, rep, map[string]Outcome{"SL_lifecycle": Unrealisable, "P4_prompt_integrity": Reproduced,
			"P1_identity": Reproduced, "WF_wire": Reproduced})
		r, _ := rep.Result("P4_prompt_integrity")
		if !strings.Contains(string(r.Steps[0].Sent), "server/discover") ||
			!strings.Contains(string(r.Steps[0].Sent), "io.modelcontextprotocol/clientCapabilities") {
			t.Errorf("stateless setup sent %s", r.Steps[0].Sent)
		}
	}
}

// TestMockA2A replays the A2A counterexamples on the vulnerable and the
// hardened fake agent, in both vocabularies. A forged card reproduces on
// both: with nothing between the client and the agent, no agent can keep
// an attacker in the card's path from reaching the client.
func TestMockA2A(t *testing.T) {
	traces := modelTraces(t, "a2a")
	for _, version := range []string{A2A10, A2A03} {
		for _, hardened := range []bool{false, true} {
			tgt, stop, err := MockA2A(hardened, version)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			rep, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			want := Reproduced
			if hardened {
				want = Blocked
			}
			wantOutcomes(t, rep, map[string]Outcome{"P1_identity": want, "WF_wire": want, "P3_delegation": want,
				"P5_consent": want, "P2_card": Reproduced})
			if r, _ := rep.Result("P1_identity"); !hardened && !strings.Contains(r.Evidence, "extended agent card") {
				t.Errorf("A2A %s: the unauthenticated extended card went unnoticed: %s", version, r.Evidence)
			}
			if r, _ := rep.Result("P3_delegation"); r.Trace != "counterexample" || r.Steps[len(r.Steps)-1].Action != "A_amplify" {
				t.Errorf("A2A %s: P3 did not replay the model's counterexample: %+v", version, r)
			}
		}
	}
}

// TestMockA2ABehindWarden replays the vulnerable fake agent plain and
// through an in-process gateway built from a gateway.a2a configuration:
// the amplified delegation, the forged (changed) card, the unauthenticated
// request and the ambiguous frame reproduce plain and are refused by the
// gateway's stages, each refusal naming its stage. A task nobody approved
// still runs behind warden: the gateway has no approval hold for A2A.
func TestMockA2ABehindWarden(t *testing.T) {
	traces := modelTraces(t, "a2a")
	for _, version := range []string{A2A10, A2A03} {
		tgt, stop, err := MockA2A(false, version)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		plain, err := Run(testCtx(t), tgt, traces, Options{StepTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		bt, stopW, err := BehindWarden(tgt, Upstream{}, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		behind, err := Run(testCtx(t), bt, traces, Options{StepTimeout: 5 * time.Second})
		stopW()
		if err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, plain, map[string]Outcome{"P1_identity": Reproduced, "P2_card": Reproduced,
			"P3_delegation": Reproduced, "P5_consent": Reproduced, "WF_wire": Reproduced})
		wantOutcomes(t, behind, map[string]Outcome{"P1_identity": Blocked, "P2_card": Blocked,
			"P3_delegation": Blocked, "P5_consent": Blocked, "WF_wire": Blocked})
		for prop, stage := range map[string]string{"P1_identity": "HTTP 401", "P2_card": "stage card, rule changed",
			"P3_delegation": "stage delegation, rule INV-7", "WF_wire": "stage wire, rule duplicate-key"} {
			if r, _ := behind.Result(prop); !strings.Contains(r.Evidence, stage) {
				t.Errorf("A2A %s behind warden: %s was not refused by %q: %s", version, prop, stage, r.Evidence)
			}
		}
		audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
		if err != nil || !strings.Contains(string(audit), `"upstream":"a2a:target"`) || !strings.Contains(string(audit), `"stage":"delegation"`) {
			t.Errorf("A2A %s: the gateway's audit log lacks the A2A records (%v):\n%s", version, err, audit)
		}
	}
}

// TestMockAGUI: the fake agent obeys an instruction planted in a tool
// result (P4) and, broken, ends its stream without RUN_FINISHED (WF). Behind
// warden both are blocked: the tool result is quarantined before the agent
// reads it, and the broken stream is ended with warden's RUN_ERROR.
func TestMockAGUI(t *testing.T) {
	for _, broken := range []bool{false, true} {
		tgt, stop, err := MockAGUI(broken)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		rep, err := Run(testCtx(t), tgt, nil, Options{StepTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		want := Blocked
		if broken {
			want = Reproduced
		}
		wantOutcomes(t, rep, map[string]Outcome{"WF_events": want, "P4_prompt_integrity": Reproduced})
		if r, _ := rep.Result("WF_events"); broken && !strings.Contains(r.Evidence, "not RUN_FINISHED") {
			t.Errorf("broken stream: %s", r.Evidence)
		}

		dir := t.TempDir()
		bt, stopW, err := BehindWarden(tgt, Upstream{}, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stopW)
		behind, err := Run(testCtx(t), bt, nil, Options{StepTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range behind.Results {
			t.Logf("%s %s %s: %s", bt.Name, r.Property, r.Outcome, r.Evidence)
		}
		// The broken agent cuts its answer short: warden quarantined the
		// instruction (the audit says so, below), but an answer that never
		// finished cannot show that the agent did not follow it.
		wantP4 := Blocked
		if broken {
			wantP4 = Inconclusive
		}
		wantOutcomes(t, behind, map[string]Outcome{"WF_events": Blocked, "P4_prompt_integrity": wantP4})
		if r, _ := behind.Result("WF_events"); broken && !strings.Contains(r.Steps[0].Answer, "RUN_ERROR") {
			t.Errorf("behind warden, the broken stream did not end with warden's RUN_ERROR: %s", r.Steps[0].Answer)
		}
		audit, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
		if err != nil || !strings.Contains(string(audit), `"upstream":"agui:target"`) || !strings.Contains(string(audit), `"rule":"prompt_injection/override"`) {
			t.Errorf("AG-UI behind warden: the audit log lacks the run or the quarantine (%v):\n%s", err, audit)
		}
	}
}

func TestParseITFRoundTrip(t *testing.T) {
	traces := modelTraces(t, "mcp")
	tr := traces["mcp/P4_prompt_integrity"]
	if tr == nil {
		t.Fatal("no P4 counterexample for mcp")
	}
	if got := strings.Join(tr.Actions(), " "); got != "C_initialize C_initialized A_plant_directive C_call_tool C_pass_result_to_model" {
		t.Errorf("actions %s", got)
	}
	if tr.Steps[3].Message == nil || !strings.Contains(string(tr.Steps[3].Message), "tools/call") {
		t.Errorf("C_call_tool carries no message: %+v", tr.Steps[3])
	}
}

// TestMockBehindWarden replays the vulnerable fake through an in-process
// gateway (HTTP listener, and the stdio path through ServeConn): the
// leak, the unguarded call and the ambiguous frame are blocked.
func TestMockBehindWarden(t *testing.T) {
	traces := modelTraces(t, "mcp")
	plain, stop, err := MockMCP(false, true, "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	for _, stdio := range []bool{false, true} {
		up := Upstream{URL: plain.URL}
		bt, stopW, err := behindWardenVia(plain, up, t.TempDir(), stdio)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(testCtx(t), bt, traces, Options{StepTimeout: 2 * time.Second})
		stopW()
		if err != nil {
			t.Fatal(err)
		}
		wantOutcomes(t, rep, map[string]Outcome{"P4_prompt_integrity": Blocked, "P1_identity": Blocked,
			"P5_consent": Blocked, "WF_wire": Blocked})
		if stdio {
			// warden refuses requests before initialize on a stateful session.
			wantOutcomes(t, rep, map[string]Outcome{"SL_lifecycle": Blocked})
		} else {
			// Over HTTP a sessionless POST is served as a stateless session,
			// so the early call is relayed: reported, not asserted (the
			// gateway's owner decides).
			r, _ := rep.Result("SL_lifecycle")
			t.Logf("HTTP listener: SL_lifecycle %s: %s", r.Outcome, r.Evidence)
		}
	}
}
