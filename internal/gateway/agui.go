package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentwarden/warden/internal/aguigw"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/secproc"
	"github.com/agentwarden/warden/internal/transport"
)

// AGUIPath is where the listener serves the AG-UI agents: AGUIPath/<name>.
const AGUIPath = "/agui/"

// AGUISpec is one AG-UI agent behind the gateway, as the configuration
// gives it (gateway.agui[i]; see docs/agui.md).
type AGUISpec struct {
	Name string
	URL  string // where the agent takes RunAgentInput POSTs
	// Headers are sent to the agent with every run (its credentials).
	Headers map[string]string
	// Actions maps a finding category (prompt_injection, exfiltration,
	// file_access, command_injection, privilege_escalation) to flag,
	// quarantine or deny; a category not named gets aguigw.DefaultAction.
	Actions map[string]string
	// MaxHeldBytes bounds the text deltas held per run; 0 is the default.
	MaxHeldBytes int
	// Limits bound the input and each streamed event (gateway.limits);
	// the zero value means the decoder's defaults.
	Limits jsonrpc.Limits
}

// AGUIHandlers builds the AG-UI gateways (internal/aguigw) of specs, each
// with the listener's authentication, the security processor proc (nil:
// secproc's defaults, since AG-UI content is always inspected) and, when
// the audit log is on, its records. Errors name the configuration path
// (gateway.agui[i]).
func AGUIHandlers(proc *secproc.Processor, specs []AGUISpec, auth func(*http.Request) (string, *transport.AuthRefusal), rs *Records, logger *slog.Logger) (map[string]http.Handler, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[string]http.Handler{}
	for i, s := range specs {
		opts := aguigw.Options{Name: s.Name, Upstream: s.URL, Authenticate: auth, Processor: proc,
			MaxHeld: s.MaxHeldBytes, Limits: s.Limits, Logger: logger, Actions: map[secproc.Category]aguigw.Action{}}
		if len(s.Headers) > 0 {
			opts.UpstreamHeader = http.Header{}
			for k, v := range s.Headers {
				opts.UpstreamHeader.Set(k, v)
			}
		}
		for cat, name := range s.Actions {
			a, err := aguigw.ParseAction(name)
			if err != nil {
				return nil, fmt.Errorf("gateway.agui[%d].actions.%s: %w", i, cat, err)
			}
			if !knownCategory(cat) {
				return nil, fmt.Errorf("gateway.agui[%d].actions.%s: not a finding category", i, cat)
			}
			opts.Actions[secproc.Category(cat)] = a
		}
		if rs != nil && rs.Audit != nil {
			opts.Record = aguiRecord(rs.Audit)
		}
		h, err := aguigw.New(opts)
		if err != nil {
			return nil, fmt.Errorf("gateway.agui[%d]: %w", i, err)
		}
		out[s.Name] = h
	}
	return out, nil
}

func knownCategory(name string) bool {
	for _, c := range secproc.Categories {
		if string(c) == name {
			return true
		}
	}
	return false
}

// aguiRecord writes the input and each event of an AG-UI run into the
// gateway's audit log before it leaves: the same chain as MCP's and A2A's.
// Method is the event type ("run_agent_input" for the POST), RequestID the
// run, Tool the thread; a quarantine is recorded as an allow with the rule
// that quarantined.
func aguiRecord(l *audit.Log) func(context.Context, aguigw.Event) error {
	return func(ctx context.Context, e aguigw.Event) error {
		r := audit.Record{Time: time.Now(), Actor: e.Principal, Upstream: "agui:" + e.Upstream, Method: e.Type,
			RequestID: e.RunID, Tool: e.ThreadID, Decision: audit.Allow, Direction: e.Direction, Rule: e.Rule}
		switch e.Decision {
		case "deny":
			r.Decision, r.Stage, r.Reason = audit.Deny, e.Stage, e.Reason
		case "quarantine":
			r.Stage, r.Reason = aguigw.StageSecurity, e.Reason
		}
		_, err := l.Append(context.WithoutCancel(ctx), r)
		return err
	}
}
