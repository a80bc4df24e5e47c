package aguigw

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/transport"
)

// Stage names, as they appear in refusals and in Events.
const (
	StageListener  = "listener"         // HTTP method, content type, body
	StageAuth      = "auth"             // Options.Authenticate refused the client
	StageWire      = jsonrpc.StageWire  // strict JSON (the input, each event)
	StageInput     = "input"            // the RunAgentInput's shape
	StageSecurity  = "security"         // secproc findings (P4)
	StageIntegrity = "prompt-integrity" // a system/developer message from the agent side (P4)
	StageAudit     = "audit"            // Options.Record failed
	StageUpstream  = "upstream"         // unreachable, or answered something invalid
)

// Action is what the gateway does about a finding (AASM P4): the security
// processor's one action type, shared with the MCP gateway, of which this
// relay takes Flag, Quarantine and Deny (a stream cannot be held for a
// person's approval). Stronger actions compare greater.
type Action = secproc.Action

// The actions, weakest first. The zero value means "the default".
const (
	ActionDefault = secproc.ActionDefault
	// Flag forwards the content and records the finding.
	Flag = secproc.Flag
	// Quarantine replaces each offending string with an inert marker,
	// keeping the event otherwise identical; on tool-call arguments, which
	// cannot be made inert, it denies.
	Quarantine = secproc.ActionQuarantine
	// Deny refuses the input (403), or ends the run with a RUN_ERROR.
	Deny = secproc.Deny
)

// actions are the actions this relay takes.
var actions = []Action{Flag, Quarantine, Deny}

// ParseAction parses flag, quarantine or deny.
func ParseAction(s string) (Action, error) {
	for _, a := range actions {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("aguigw: unknown action %q (want flag, quarantine or deny)", s)
}

// DefaultAction is a finding's action when Options.Actions does not name
// its category: quarantine for injected instructions; otherwise the
// processor's action, where require_approval becomes deny (a stream cannot
// be held for a person, so fail-secure).
func DefaultAction(f secproc.Finding) Action {
	switch {
	case f.Category == secproc.InjectedInstructions:
		return Quarantine
	case f.Action == secproc.Flag:
		return Flag
	}
	return Deny
}

// Options configure a Handler. Upstream is required; every other zero value
// is the safe setting.
type Options struct {
	// Name identifies the upstream in Events and in secproc sessions; ""
	// is "agui".
	Name string
	// Upstream is the URL the upstream agent takes RunAgentInput POSTs at.
	Upstream string
	// UpstreamHeader is sent with every request to the upstream (its
	// credentials). The client's own headers, Authorization included, are
	// never forwarded.
	UpstreamHeader http.Header
	// Client makes upstream requests; nil means a client that follows no
	// redirects and has no overall timeout (runs are long): a request ends
	// when the client's does.
	Client *http.Client

	// Authenticate, if set, authenticates every POST (AASM P1).
	// internal/authn provides one.
	Authenticate func(r *http.Request) (principal string, refusal *transport.AuthRefusal)

	// Processor inspects untrusted content; nil means a processor with
	// secproc's default configuration.
	Processor *secproc.Processor
	// Actions sets the action per finding category; a category it does not
	// name gets DefaultAction.
	Actions map[secproc.Category]Action

	// Limits bound the input and each streamed event; the zero value means
	// the jsonrpc defaults (4 MiB, depth 64).
	Limits jsonrpc.Limits
	// MaxHeld bounds the bytes of text deltas and tool-call arguments held
	// back at once in one run, waiting for their END event; 0 means the
	// resolved Limits.MaxBytes. A run that needs more is ended.
	MaxHeld int

	// Record, if set, is shown the input and every event before it leaves,
	// and every refusal (the audit log, telemetry). It must be safe for
	// concurrent use. An error refuses the input or ends the run:
	// nothing passes unrecorded (fail-secure).
	Record func(ctx context.Context, e Event) error

	// Logger receives refusals; nil discards.
	Logger *slog.Logger
}

// Event is what the gateway reports about each message it handled.
type Event struct {
	Upstream  string
	Principal string // the authenticated client; "" without Authenticate
	// Direction is "client" (the RunAgentInput) or "upstream" (a streamed
	// event, or the refusal of one).
	Direction       string
	ThreadID, RunID string
	// Type is the event type as the agent sent it ("run_agent_input" for
	// the POST); Canonical is its canonical (1.0, upper-case) name.
	Type, Canonical string
	// Decision is "allow", "quarantine" or "deny"; Stage, Rule and Reason
	// say why a message was denied, or which rule quarantined it.
	Decision            string
	Stage, Rule, Reason string
	// Findings are the security processor's findings on the message,
	// whatever the decision.
	Findings []secproc.Finding
	// Raw is the message as it leaves (nil for refusals); it must not be
	// modified.
	Raw []byte
}

// Handler is the AG-UI gateway for one upstream agent.
//
// Concurrency: ServeHTTP may be called concurrently. Every field is
// immutable after New; the processor has its own lock for its session
// table.
type Handler struct {
	opts    Options
	client  *http.Client
	proc    *secproc.Processor
	log     *slog.Logger
	maxHeld int
}

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	p, err := url.Parse(opts.Upstream)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("aguigw: Upstream %q: want an http:// or https:// URL with a host", opts.Upstream)
	}
	for c, a := range opts.Actions {
		if !slices.Contains(actions, a) {
			return nil, fmt.Errorf("aguigw: Actions[%s]: action %s (%d) is not one of flag, quarantine or deny", c, a, int(a))
		}
	}
	if opts.Name == "" {
		opts.Name = "agui"
	}
	h := &Handler{opts: opts, client: opts.Client, proc: opts.Processor, log: opts.Logger, maxHeld: opts.MaxHeld}
	if h.proc == nil {
		if h.proc, err = secproc.New(secproc.Config{}); err != nil {
			return nil, err
		}
	}
	if h.client == nil {
		// No redirects: the upstream is the configured URL, and a redirect
		// must not carry the input (or UpstreamHeader) elsewhere.
		h.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxHeld <= 0 {
		h.maxHeld, _ = h.limits()
	}
	return h, nil
}

// limits returns the resolved message limits.
func (h *Handler) limits() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = h.opts.Limits.MaxBytes, h.opts.Limits.MaxDepth
	if maxBytes <= 0 {
		maxBytes = jsonrpc.DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = jsonrpc.DefaultMaxDepth
	}
	return maxBytes, maxDepth
}

// action returns what the gateway does about f.
func (h *Handler) action(f secproc.Finding) Action {
	if a, ok := h.opts.Actions[f.Category]; ok && a != ActionDefault {
		return a
	}
	return DefaultAction(f)
}

// record shows e to Options.Record on a context the client cannot cancel,
// and logs refusals.
func (h *Handler) record(ctx context.Context, e Event) error {
	if e.Decision == "deny" {
		h.log.Warn("ag-ui message refused", "upstream", e.Upstream, "principal", e.Principal, "type", e.Type,
			"stage", e.Stage, "rule", e.Rule, "reason", e.Reason)
	}
	if h.opts.Record == nil {
		return nil
	}
	return h.opts.Record(context.WithoutCancel(ctx), e)
}

func auditDenial(err error) *deny.Denial {
	return &deny.Denial{Stage: StageAudit, Rule: deny.RuleWrite, Status: http.StatusServiceUnavailable,
		Reason: "the record of this message could not be kept: " + err.Error()}
}

// ErrorBody is the JSON body of a refused POST.
type ErrorBody struct {
	Error struct {
		Stage   string `json:"stage"`
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers a refused POST with d's status and an ErrorBody.
func writeError(w http.ResponseWriter, d *deny.Denial) {
	var b ErrorBody
	b.Error.Stage, b.Error.Rule, b.Error.Message = d.Stage, string(d.Rule), d.Reason
	data, _ := json.Marshal(b)
	status := d.Status
	if status == 0 {
		status = http.StatusForbidden
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// runError is the RUN_ERROR event the gateway writes to end a run for d.
// Its code is "warden:<stage>:<rule>".
func runError(d *deny.Denial) []byte {
	b, _ := json.Marshal(struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    string `json:"code"`
	}{"RUN_ERROR", "warden: " + d.Stage + " refused the run (" + string(d.Rule) + "): " + d.Reason, "warden:" + d.Stage + ":" + string(d.Rule)})
	return b
}
