package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestDemoTellsWhatHappened runs the demo as `warden demo` does and checks
// the account a user reads: what was relayed, what was refused and by which
// stage, and that the planted secret never reached the client.
func TestDemoTellsWhatHappened(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	res, err := Run(ctx, Options{Out: &out})
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if len(res.Failures) > 0 {
		t.Fatalf("demo expectations failed: %v\n%s", res.Failures, out.String())
	}
	by := map[string]string{}
	for _, st := range res.Steps {
		by[st.Action] = st.Outcome + " " + st.By
	}
	for action, want := range map[string]string{
		`tools/call echo {"message":"hello through warden"}`:                                                  "relayed ",
		`tools/call get_env {}`:                                                                               "refused tool-policy (deny \"get_env\")",
		`tools/call read_file {"path":"../../etc/passwd"}`:                                                    "refused security (file_access/traversal)",
		`tools/call write_file {"content":"- review the ledger","path":"notes/todo.md"}`:                      "relayed ",
		`tools/call write_file {"content":"account ACC_123, balance 1000000.00","path":"ledger/ACC_123.txt"}`: "refused security (custom/ledger-read-only)",
		"billing: tools/call pay INV-7":                                                                       "relayed ",
		"billing: tools/call pay after a rug pull, without listing again":                                     "refused pin (unpinned)",
		"billing: the client lists the tools again":                                                           "refused pin (unpinned)",
		`a tool answer carrying "Ignore all previous instructions…" (quarantined)`:                            "relayed ",
		"transfer_funds of 50 without a token: held, and alice is asked in her client":                        "relayed ",
		"transfer_funds of 9999 without a token: held for approval":                                           "refused zero-trust (approval-denied)",
		"transfer_funds of 20000 (Tier 2 by rule big-transfer) with a token but no DPoP key":                  "refused zero-trust (INV-5)",
		"alice's DPoP-bound token, stolen, with the thief's own proof":                                        "refused zero-trust (INV-5)",
		"alice's DPoP-bound token with her proof (RFC 9449)":                                                  "relayed ",
		"transfer_funds of 75000 (Tier 3 by rule huge-transfer): token and proof, no client signature":        "refused zero-trust (INV-6)",
		"the same with alice's signature of the invocation by her pinned key":                                 "relayed ",
		`a tools/call whose params repeat "name" (echo, then get_env)`:                                        "refused wire (duplicate-key)",
		`a request spelled "Method" instead of "method"`:                                                      "refused wire (member-case)",
		`a tools/call of echo that also carries "NAME": "get_env" (a case-insensitive server runs get_env)`:   "refused wire (folded-duplicate-key)",
		`a tools/call whose tool is in "Name", which only a case-insensitive server reads`:                    "refused wire (member-case)",
		"transfer_funds sent as a notification (no id: nothing to answer, a server may still run it)":         "refused wire (request-as-notification)",
		"a token for exactly this transfer, approved for upstream billing":                                    "refused zero-trust (INV-1)",
		"that fresh token with exactly its arguments, after bob revoked it (warden token revoke --jti)":       "refused zero-trust (revoked)",
		`tools/call Get_Env {}`:                                                                             "refused tool-policy (tool-name-variant)",
		`a request nested 100 levels deep`:                                                                  "refused wire (depth)",
		`a POST from a web page at http://evil.example (DNS rebinding)`:                                     "refused listener (host)",
		"alice opens sessions until warden refuses one (max_sessions_per_principal: 8)":                     "refused listener (principal-session-limit)",
		"a tools/call in a session warden never issued (Mcp-Session-Id: s-made-up-0001)":                    "refused listener (unknown-session)",
		"A2A: alice → planner → booker, the planner passes on calendar:write of alice's calendar:*":         "relayed ",
		"A2A: alice reads her booking's task by its id (GetTask)":                                           "relayed ",
		"A2A: bob, another client of the gateway (his own API key), asks booker for alice's task by its id": "refused task-owner (task-owner)",
		"A2A: the planner widens the delegation to calendar:write and mail:send (amplification)":            "refused delegation (INV-7)",
		"A2A: alice's agent copies the note's request into a message to booker (a cross-protocol cascade)":  "refused taint (into-delegation)",
	} {
		if got := by[action]; got != want {
			t.Errorf("%s: %q, want %q", action, got, want)
		}
	}
	if res.UpstreamSaw["get_env"] != 0 {
		t.Errorf("get_env reached the demo server %d times", res.UpstreamSaw["get_env"])
	}
	// The greeting, and the injection whose answer was withheld on its way back.
	if res.UpstreamSaw["echo"] != 2 {
		t.Errorf("echo reached the demo server %d times, want 2", res.UpstreamSaw["echo"])
	}
	if res.UpstreamSaw["transfer_funds"] != 5 {
		t.Errorf("transfer_funds reached the demo server %d times, want exactly the two approved calls and the three tokens'", res.UpstreamSaw["transfer_funds"])
	}
	// Every message through the relay is on record: at least one per step
	// that reached the relay, and the chain verified.
	if res.AuditRecords < res.Relayed+res.Refused {
		t.Errorf("the audit log holds %d records for %d steps", res.AuditRecords, res.Relayed+res.Refused)
	}
	// Attack: the OATF run exploits the bare server, not the one behind warden.
	if len(res.Attacks) != 2 || res.Attacks[0] != "exploited" || res.Attacks[1] != "not_exploited" {
		t.Errorf("attack verdicts %v, want [exploited not_exploited]", res.Attacks)
	}
	// Prove: the model checker finds MCP's principles violated, none behind warden.
	if res.Violated == 0 || res.ViolatedBehindWarden != 0 {
		t.Errorf("model check: %d violated bare, %d behind warden", res.Violated, res.ViolatedBehindWarden)
	}
	// booker got the one valid delegation, not the amplified one nor the
	// one that copied the vendor's note.
	if res.A2AReceived != 1 {
		t.Errorf("booker received %d messages, want 1", res.A2AReceived)
	}
	if res.Canary == "" || strings.Contains(out.String(), res.Canary) {
		t.Errorf("the demo's secret %q appears in its output", res.Canary)
	}
	for _, want := range []string{"15 relayed, 26 refused.", "[warden: quarantined ", `carries text copied from the answer of MCP server "demo" tool read_file`, "refused by tool-policy", "HTTP 403",
		"parameters_hash of those arguments: bb4b09fe11ca1829bcb98fda2a658faf5f93c2da07c3b16b40e2d8646c518c9c",
		"checkpoints signed by its audit key attest it"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the account lacks %q:\n%s", want, out.String())
		}
	}
}
