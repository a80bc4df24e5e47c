//go:build integration

package gateway_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/gateway"
)

// gateway.admin.approvers reaches the approval queue a configuration opens
// (a call of a level that needs two people does not run on one approval),
// and the queue's decisions outlive a restart of the gateway on the same
// data directory.
func TestConfiguredTwoPersonRuleAndHistory(t *testing.T) {
	dataDir := keyedDataDir(t)
	up, ledger := demoUpstream(t, false)
	yaml := fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    store: memory
    hold_for_approval: true
    approval_channels: [admin]
    classification: [{level: 4, name: transfers, when: 'tool.name == "transfer_funds"'}]
  admin: {approvers: {4: 2}}
  upstreams: [{name: demo, url: %s}]
`, dataDir, up)
	_, opts := optionsFromYAML(t, yaml)
	g, err := gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	q := opts.Approvals
	if q == nil {
		t.Fatal("a configuration that holds calls opened no approval queue")
	}

	ctx := testCtx(t)
	cs, _ := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp"}, "2025-11-25")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer_funds",
			Arguments: map[string]any{"account_id": "ACC_123", "amount": 40, "recipient": "vendor@example.com"}})
		done <- err
	}()
	p := waitHeld(t, q)
	var more *approval.MoreApprovals
	if err := q.Decide(p.ID, true, "bob", "looks right"); !errors.As(err, &more) {
		t.Fatalf("one approval of a call whose level needs two: %v, want MoreApprovals", err)
	}
	// Kept: a negative check. A gateway that released the call on one
	// approval would run the transfer within this window; nothing else
	// shows that it did not.
	time.Sleep(100 * time.Millisecond)
	if n := len(ledger.Transfers()); n != 0 {
		t.Fatalf("the transfer ran on one person's approval (%d transfers)", n)
	}
	if err := q.Decide(p.ID, true, "carol", "agreed"); err != nil {
		t.Fatalf("the second approver: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call approved by two people: %v", err)
	}
	cs.Close()
	srv.Close()
	g.Close()

	// Restarted on the same data directory: the decision is still there.
	_, opts = optionsFromYAML(t, yaml)
	g, err = gateway.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	found := false
	for _, d := range opts.Approvals.History() {
		if d.ID == p.ID {
			found = true
		}
	}
	if !found {
		t.Errorf("after a restart the approval history lacks call %s: %+v", p.ID, opts.Approvals.History())
	}
}
