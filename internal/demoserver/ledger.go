package demoserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Demo accounts and their opening balances, in minor units.
const (
	AccountMain    = "ACC_123" // opens with 100000
	AccountSavings = "ACC_456" // opens with 5000
)

// Errors returned by [Ledger.Transfer]; transfer_funds reports them as tool
// errors.
var (
	ErrUnknownAccount    = errors.New("unknown account")
	ErrInvalidAmount     = errors.New("amount must be a positive integer in minor units")
	ErrInsufficientFunds = errors.New("insufficient funds")
	ErrNoRecipient       = errors.New("recipient must not be empty")
)

// A Ledger is a fake in-memory bank: a few accounts with balances, and the
// list of transfers made from them. Recipients are external payees; the
// ledger records them but keeps no balance for them.
//
// A Ledger is safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	balances  map[string]int64 // guarded by mu; account id -> balance in minor units
	transfers []Transfer       // guarded by mu; in the order they were made
}

// A Transfer is one completed transfer.
type Transfer struct {
	ID        string `json:"transaction_id" jsonschema:"the transaction id, txn-0001 for the ledger's first transfer"`
	AccountID string `json:"account_id" jsonschema:"the debited account"`
	Recipient string `json:"recipient" jsonschema:"who received the funds"`
	Amount    int64  `json:"amount" jsonschema:"the amount moved, in minor units"`
	Balance   int64  `json:"new_balance" jsonschema:"the debited account's balance after the transfer, in minor units"`
}

// NewLedger returns a ledger holding the demo accounts: [AccountMain] with
// 100000 and [AccountSavings] with 5000, and no transfers.
func NewLedger() *Ledger {
	return &Ledger{balances: map[string]int64{
		AccountMain:    100000,
		AccountSavings: 5000,
	}}
}

// Balance returns the balance of account id, and whether the account exists.
func (l *Ledger) Balance(id string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.balances[id]
	return b, ok
}

// Transfers returns a copy of the transfers made so far, oldest first.
func (l *Ledger) Transfers() []Transfer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Transfer(nil), l.transfers...)
}

// Transfer debits amount from accountID and pays it to recipient. It fails,
// changing nothing, if the account does not exist, amount is not positive,
// the balance does not cover it, or recipient is blank. Transaction ids are
// sequential: txn-0001, txn-0002, ...
func (l *Ledger) Transfer(accountID string, amount int64, recipient string) (Transfer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	balance, ok := l.balances[accountID]
	switch {
	case !ok:
		return Transfer{}, fmt.Errorf("%w %q", ErrUnknownAccount, accountID)
	case amount <= 0:
		return Transfer{}, fmt.Errorf("%w, got %d", ErrInvalidAmount, amount)
	case strings.TrimSpace(recipient) == "":
		return Transfer{}, ErrNoRecipient
	case amount > balance:
		return Transfer{}, fmt.Errorf("%w: %s holds %d, transfer needs %d", ErrInsufficientFunds, accountID, balance, amount)
	}
	t := Transfer{
		ID:        fmt.Sprintf("txn-%04d", len(l.transfers)+1),
		AccountID: accountID,
		Recipient: recipient,
		Amount:    amount,
		Balance:   balance - amount,
	}
	l.balances[accountID] = t.Balance
	l.transfers = append(l.transfers, t)
	return t, nil
}

// transferInput is the input of transfer_funds.
type transferInput struct {
	AccountID string `json:"account_id" jsonschema:"the account to debit, for example ACC_123"`
	Amount    int64  `json:"amount" jsonschema:"how much to transfer, as a positive integer in minor units (cents)"`
	Recipient string `json:"recipient" jsonschema:"who receives the funds: a name, an IBAN or an account reference"`
}

// addLedgerTools registers transfer_funds.
func (d *demo) addLedgerTools(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{
		Name:  "transfer_funds",
		Title: "Transfer funds",
		Description: "Transfers money from one of the demo bank accounts (ACC_123, ACC_456) to a recipient. " +
			"The amount is an integer in minor units. Returns a receipt with the transaction id and the new balance.",
		InputSchema: inputSchema[transferInput](func(p map[string]*jsonschema.Schema) {
			p["amount"].Minimum = new(1.0)
			p["account_id"].MinLength = new(1)
			p["recipient"].MinLength = new(1)
		}),
		Annotations: &mcp.ToolAnnotations{
			DestructiveHint: new(true),
			OpenWorldHint:   new(true),
		},
	}, d.transferFunds)
}

func (d *demo) transferFunds(ctx context.Context, req *mcp.CallToolRequest, in transferInput) (*mcp.CallToolResult, Transfer, error) {
	t, err := d.ledger.Transfer(in.AccountID, in.Amount, in.Recipient)
	if err != nil {
		return nil, Transfer{}, fmt.Errorf("transfer refused: %w", err)
	}
	receipt := fmt.Sprintf("Transferred %d from %s to %s. Transaction %s; new balance of %s: %d.",
		t.Amount, t.AccountID, t.Recipient, t.ID, t.AccountID, t.Balance)
	d.logger.InfoContext(ctx, "transfer", "txn", t.ID, "account", t.AccountID, "amount", t.Amount, "recipient", t.Recipient)
	// Also tell the client, so that a gateway has a notifications/message to
	// relay. It is sent only if the client asked for logs, and failing to
	// send it must not undo the transfer.
	//lint:ignore SA1019 logging is deprecated from 2026-07-28 but the demo relays log messages on purpose
	_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "notice", Logger: ServerName, Data: receipt})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: receipt}}}, t, nil
}

// reviewTransferPrompt renders the review_transfer prompt for one account.
func (d *demo) reviewTransferPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	id := req.Params.Arguments["account_id"]
	balance, ok := d.ledger.Balance(id)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("review_transfer: %v %q", ErrUnknownAccount, id)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Review the activity on bank account %s before approving any further transfer from it.\n", id)
	fmt.Fprintf(&b, "Current balance: %d (minor units).\n", balance)
	n := 0
	for _, t := range d.ledger.Transfers() {
		if t.AccountID != id {
			continue
		}
		if n == 0 {
			b.WriteString("Transfers so far:\n")
		}
		n++
		fmt.Fprintf(&b, "- %s: %d to %s\n", t.ID, t.Amount, t.Recipient)
	}
	if n == 0 {
		b.WriteString("There have been no transfers from this account.\n")
	}
	b.WriteString("Say whether any transfer looks unexpected, and do not approve a new one the account holder did not ask for.")
	return &mcp.GetPromptResult{
		Description: "Review of account " + id,
		Messages: []*mcp.PromptMessage{{
			Role:    "user",
			Content: &mcp.TextContent{Text: b.String()},
		}},
	}, nil
}
