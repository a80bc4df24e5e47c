//lint:file-ignore SA1019 the tests drive the deprecated logging feature on purpose

package demoserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTransferFunds(t *testing.T) {
	ledger := NewLedger()
	cs := connect(t, Options{Ledger: ledger}, nil, revStateless)

	res := call(t, cs, "transfer_funds", map[string]any{"account_id": "ACC_123", "amount": 2500, "recipient": "mallory"})
	receipt := wantOK(t, res)
	for _, want := range []string{"txn-0001", "97500", "mallory"} {
		if !strings.Contains(receipt, want) {
			t.Errorf("receipt %q lacks %q", receipt, want)
		}
	}
	want := Transfer{ID: "txn-0001", AccountID: "ACC_123", Recipient: "mallory", Amount: 2500, Balance: 97500}
	if got := structured[Transfer](t, res); got != want {
		t.Errorf("structured content = %+v, want %+v", got, want)
	}
	res = call(t, cs, "transfer_funds", map[string]any{"account_id": "ACC_456", "amount": 5000, "recipient": "bob"})
	if got := structured[Transfer](t, res); got.ID != "txn-0002" || got.Balance != 0 {
		t.Errorf("second transfer = %+v, want txn-0002 leaving 0", got)
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"account_id": "ACC_456", "amount": 1, "recipient": "bob"}, "insufficient funds"},
		{map[string]any{"account_id": "ACC_123", "amount": 97501, "recipient": "bob"}, "insufficient funds"},
		{map[string]any{"account_id": "ACC_999", "amount": 1, "recipient": "bob"}, "unknown account"},
		{map[string]any{"account_id": "ACC_123", "amount": 0, "recipient": "bob"}, "amount"},
		{map[string]any{"account_id": "ACC_123", "amount": -5, "recipient": "bob"}, "amount"},
		{map[string]any{"account_id": "ACC_123", "amount": 1.5, "recipient": "bob"}, "amount"},
		{map[string]any{"account_id": "ACC_123", "amount": 1, "recipient": "  "}, "recipient"},
		{map[string]any{"account_id": "ACC_123", "amount": 1, "recipient": ""}, "recipient"},
		{map[string]any{"account_id": "ACC_123", "amount": 1}, "recipient"},
	} {
		wantToolError(t, call(t, cs, "transfer_funds", tc.args), tc.want)
	}
	if b, _ := ledger.Balance("ACC_123"); b != 97500 {
		t.Errorf("ACC_123 balance = %d after refused transfers, want 97500", b)
	}
	if b, _ := ledger.Balance("ACC_456"); b != 0 {
		t.Errorf("ACC_456 balance = %d after refused transfers, want 0", b)
	}
	if got := ledger.Transfers(); len(got) != 2 {
		t.Errorf("ledger holds %d transfers, want the 2 that succeeded: %+v", len(got), got)
	}
}

func TestTransferFundsLogsToClient(t *testing.T) {
	logs := make(chan string, 1)
	cs := connect(t, Options{}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			logs <- fmt.Sprint(req.Params.Data)
		},
	}, revLegacy)
	if err := cs.SetLoggingLevel(t.Context(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	wantOK(t, call(t, cs, "transfer_funds", map[string]any{"account_id": "ACC_123", "amount": 1, "recipient": "bob"}))
	select {
	case msg := <-logs:
		if !strings.Contains(msg, "txn-0001") {
			t.Errorf("log message %q lacks the transaction id", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/message after transfer_funds")
	}
}

func TestLedgerConcurrentTransfers(t *testing.T) {
	l := NewLedger()
	const n, amount = 150, 1000 // ACC_123 covers exactly 100 of them
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := l.Transfer("ACC_123", amount, "bob")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok, short := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrInsufficientFunds):
			short++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 100 || short != 50 {
		t.Errorf("%d transfers succeeded and %d were refused, want 100 and 50", ok, short)
	}
	if b, _ := l.Balance("ACC_123"); b != 0 {
		t.Errorf("balance = %d, want 0", b)
	}
	transfers := l.Transfers()
	for i, tr := range transfers {
		if want := fmt.Sprintf("txn-%04d", i+1); tr.ID != want || tr.Balance != int64(100000-(i+1)*amount) {
			t.Errorf("transfer %d = %+v, want id %s and a running balance", i, tr, want)
		}
	}
}

func TestLedgerTransferErrors(t *testing.T) {
	l := NewLedger()
	for _, tc := range []struct {
		account   string
		amount    int64
		recipient string
		want      error
	}{
		{"ACC_000", 1, "bob", ErrUnknownAccount},
		{"ACC_123", 0, "bob", ErrInvalidAmount},
		{"ACC_123", -1, "bob", ErrInvalidAmount},
		{"ACC_123", 1, " \t", ErrNoRecipient},
		{"ACC_456", 5001, "bob", ErrInsufficientFunds},
	} {
		if _, err := l.Transfer(tc.account, tc.amount, tc.recipient); !errors.Is(err, tc.want) {
			t.Errorf("Transfer(%q, %d, %q) = %v, want %v", tc.account, tc.amount, tc.recipient, err, tc.want)
		}
	}
	b1, _ := l.Balance("ACC_123")
	b2, _ := l.Balance("ACC_456")
	if b1 != 100000 || b2 != 5000 || len(l.Transfers()) != 0 {
		t.Errorf("after refused transfers: balances %d and %d, %d transfers; want 100000, 5000 and none", b1, b2, len(l.Transfers()))
	}
	if _, ok := l.Balance("ACC_000"); ok {
		t.Errorf("Balance reports an account that does not exist")
	}
}

func TestReviewTransferPrompt(t *testing.T) {
	ledger := NewLedger()
	if _, err := ledger.Transfer("ACC_123", 700, "mallory"); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Ledger: ledger}, nil, revStateless)
	ctx := t.Context()

	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "review_transfer" ||
		len(prompts.Prompts[0].Arguments) != 1 || !prompts.Prompts[0].Arguments[0].Required {
		t.Errorf("prompts = %+v, want review_transfer with a required account_id", prompts.Prompts)
	}

	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review_transfer", Arguments: map[string]string{"account_id": "ACC_123"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("messages = %+v, want one user message", res.Messages)
	}
	msg := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"ACC_123", "99300", "txn-0001", "mallory"} {
		if !strings.Contains(msg, want) {
			t.Errorf("prompt %q lacks %q", msg, want)
		}
	}

	for _, args := range []map[string]string{{"account_id": "ACC_999"}, {}} {
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review_transfer", Arguments: args}); err == nil {
			t.Errorf("review_transfer %v succeeded, want an error", args)
		}
	}
}
