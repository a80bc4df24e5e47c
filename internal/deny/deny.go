// Package deny is warden's one refusal type, shared by its three relays:
// MCP (internal/gateway), A2A (internal/a2agw) and AG-UI (internal/aguigw).
//
// A Denial names the stage that refused a message and the rule of that
// stage that decided. The rules are typed constants (rules.go), each
// listed in Catalog with the stage that uses it and its JSON-RPC code, and
// documented on the page of its protocol (docs/errors.md, docs/a2a.md,
// docs/agui.md); the package's test checks every entry against its page.
// Rules that are data (a policy pattern such as `deny "get_*"`, a security
// detector's name, the strict decoder's rules) are converted with Rule(s).
//
//	d := &deny.Denial{Stage: "zero-trust", Rule: deny.RuleTokenMissing, Reason: "..."}
//	jsonrpc.NewErrorResponse(id, d.Error()) // data: {"stage":"zero-trust","rule":"token-missing"}
//
// The package sits just above internal/jsonrpc and below every relay, so
// all of them import it without a cycle.
package deny

import (
	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Rule names the rule of a stage that refused a message.
type Rule string

// Denial is a refusal of one message by one stage.
type Denial struct {
	Stage  string // the stage's name
	Rule   Rule   // which rule of the stage decided, e.g. RuleTokenMissing or `deny "get_*"`
	Reason string // one sentence for the client and the log
	Code   int64  // JSON-RPC code; 0 means jsonrpc.CodeDenied
	// Invariant and Step, for zero-trust and delegation refusals: which
	// invariant of the standard failed (INV-1..7), at which step or check.
	Invariant, Step string
	// Path, for delegation refusals, is the hop that failed.
	Path string
	// Status is the HTTP status of a refusal answered on HTTP by a relay
	// that maps refusals to statuses (AG-UI); 0 means the relay's default.
	Status int
	// AuditID is the audit record of the refusal, when one was written.
	AuditID string
	// Cause is the error behind a refusal that a store or the network
	// caused (a Redis address, a file path): for warden's log and the
	// audit record, never for the client, whose Reason stays generic.
	Cause string
}

// Error returns the JSON-RPC error sent to the client for d. Its code is
// never 0.
func (d *Denial) Error() *jsonrpc.Error {
	code := d.Code
	if code == 0 {
		code = jsonrpc.CodeDenied
	}
	return jsonrpc.Detail{Stage: d.Stage, Rule: string(d.Rule), Invariant: d.Invariant, Step: d.Step,
		Path: d.Path, AuditID: d.AuditID}.Errorf(code, d.Reason)
}

// String renders d as "stage/rule: reason", for logs and Go errors.
func (d *Denial) String() string { return d.Stage + "/" + string(d.Rule) + ": " + d.Reason }
