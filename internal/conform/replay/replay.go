// Package replay is AgentConform's second phase: it replays counterexample
// traces (ITF, from package check) against implementations and decides,
// per property, whether the implementation shows the violation.
//
// An adapter maps each IR action of a trace (its id, kind and the concrete
// message template in the state's #meta) to messages on a real wire:
//
//	ITF state #meta.message ──► adapter ──► target ──► answer ──► oracle ──► Outcome
//	  {"method":"tools/call",     MCP: stdio | streamable HTTP, revision profile
//	   "params":{"name":"{tool}"}} A2A: JSON-RPC 0.3 | 1.0     AG-UI: POST + SSE
//
// Steps without a message are abstract: an Adversary step is realised by
// the target's setup (the canary planted in its environment) or, on A2A,
// by replay itself (a card forger in the card's path, a delegation chain
// it signs: a2a_setup.go), a host step
// (a tool result entering the model) by the oracle, which inspects what the
// target answered. A step the adapter cannot drive on a target makes the
// trace Unrealisable there.
//
// Outcomes are Reproduced (the implementation shows the violation),
// Blocked (it refuses explicitly: an error answer, a refusal in the
// result, an HTTP 4xx), Inconclusive (it said nothing in time, or its
// connection ended first), and Unrealisable. Package report combines them with
// the model-check verdict into the triage label of the reference's
// decision table.
//
// Targets are Live (a real SDK or server, or one behind an in-process warden
// gateway) or Mock (an in-process fake of this package, which validates the
// adapters). Every target is driven by one goroutine at a time: Run replays
// the probes of a target one after another, each on a fresh connection, with
// every wait bounded by Options.StepTimeout.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/agentwarden/warden/internal/conform/check"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/transport"
)

// Outcome is what replaying one property on one target showed.
type Outcome string

const (
	Reproduced   Outcome = "reproduced"   // the implementation shows the violation
	Blocked      Outcome = "blocked"      // the implementation refuses it
	Unrealisable Outcome = "unrealisable" // the adapter cannot drive the trace on this target
	// Inconclusive: the target gave no verdict. It said nothing within the
	// step timeout (silence), or its connection ended before it answered (a
	// crash). Only an explicit refusal is Blocked: a server that hangs or
	// dies has defended nothing.
	Inconclusive Outcome = "inconclusive"
)

// Protocols the adapters speak.
const (
	MCP  = "MCP"
	A2A  = "A2A"
	AGUI = "AG-UI"
)

// Tool names a tool of an MCP target and the arguments a probe calls it
// with.
type Tool struct {
	Name string         `json:"name"`
	Args map[string]any `json:"arguments,omitempty"`
}

// Target is an implementation to replay against.
type Target struct {
	Name     string // for reports
	Protocol string // MCP, A2A or AG-UI
	Mode     string // "live" or "mock"
	// Profile is the MCP revision (2025-06-18, 2025-11-25, 2026-07-28) or
	// the A2A version (1.0, 0.3). Empty: the newest stateful MCP revision,
	// A2A 1.0.
	Profile string
	// Dial opens a fresh MCP connection (one per probe): a child process, a
	// streamable HTTP client, a pipe to a fake, or a session through warden.
	Dial func(ctx context.Context) (transport.Conn, error)
	// DialEnv starts a stdio target with the given environment (and the
	// named variables passed from replay's own); nil for any other wire.
	// Env is the environment Dial starts it with.
	DialEnv func(ctx context.Context, env map[string]string, pass []string) (transport.Conn, error)
	Env     map[string]string
	// CredentialEnv names the variable a stdio server takes its credential
	// from (MCP: stdio servers take credentials from the environment). The
	// identity probe starts the server without it; "" leaves the stdio
	// identity probe Unrealisable.
	CredentialEnv string
	// ConsentDial, if set, opens the connection the consent probe uses:
	// behind warden, a gateway that holds the consequential tool for the
	// user's approval. nil: Dial.
	ConsentDial func(ctx context.Context) (transport.Conn, error)
	// URL is the A2A JSON-RPC endpoint or the AG-UI run endpoint.
	URL string
	// HTTP sends A2A and AG-UI requests; nil means a client without redirects.
	HTTP *http.Client
	// Canary is the code the directive planted in data the target's tools
	// read asks for (PlantedDirective): the realisation of the ADV-1 step
	// "directive planted in data the tool reads". On a stdio target the
	// setup puts the directive in the server's environment (DirectiveEnv).
	// A tool result that carries the directive shows unsanitised output.
	// "": nothing is planted, and the P4 probe is Unrealisable.
	Canary string
	// Harmless is a tool any session may call (the lifecycle probe's call).
	Harmless Tool
	// Leak is a tool known to return the server's environment. Zero value:
	// the probe looks for a tool named like *env* in tools/list.
	Leak Tool
	// Sensitive is the consequential tool the identity and consent probes
	// call without credentials or consent. Zero value: Harmless.
	Sensitive Tool
	// Bearer is the credential an A2A client presents for the model's
	// C_authenticate step; "" sends none. The P1 probe never sends it.
	Bearer string
	// CardURL is where an A2A client reads the agent card; "" means the
	// well-known path on URL's origin (then the legacy one).
	CardURL string
	// CardKeys is a JWKS file of the keys that sign the A2A agent's card.
	// Behind warden the card must then carry a signature one of them
	// verifies; without it warden pins the first card it sees.
	CardKeys string
	// BehindWarden says the target is reached through warden's gateway.
	BehindWarden bool
	// AuditLogs are the audit logs of the gateway in front of a
	// BehindWarden target; Run reads them into Report.Gateway.
	AuditLogs []string
	// Notes are facts about the setup shown in reports.
	Notes []string

	// a2a is what replay sets up around an A2A target (a2a_setup.go);
	// nil until Run or BehindWarden starts it.
	a2a *a2aSetup
}

// Trace is a counterexample as replay reads it from ITF.
type Trace struct {
	Model     string      `json:"model"`
	Property  string      `json:"property"`
	Principle string      `json:"principle"`
	Steps     []TraceStep `json:"steps"`
}

// TraceStep is one action of a trace: the #meta of an ITF state after the
// initial one.
type TraceStep struct {
	Action     string          `json:"action"`
	Kind       string          `json:"kind"`
	Adversary  string          `json:"adversary,omitempty"`
	SourceRefs []string        `json:"source_refs,omitempty"`
	Message    json.RawMessage `json:"message,omitempty"`
}

// ParseITF reads a counterexample written by check.Trace.ITF.
func ParseITF(data []byte) (*Trace, error) {
	var doc struct {
		Meta struct {
			Model, Property, Principle string
		} `json:"#meta"`
		States []struct {
			Meta TraceStep `json:"#meta"`
		} `json:"states"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("ITF trace: %w", err)
	}
	if len(doc.States) == 0 || doc.Meta.Property == "" {
		return nil, errors.New("ITF trace: no states or no property")
	}
	t := &Trace{Model: doc.Meta.Model, Property: doc.Meta.Property, Principle: doc.Meta.Principle}
	for _, s := range doc.States[1:] {
		t.Steps = append(t.Steps, s.Meta)
	}
	return t, nil
}

// FromCheck converts a checker counterexample through its ITF form, the
// same path a trace file takes.
func FromCheck(t *check.Trace) (*Trace, error) {
	data, err := t.ITF()
	if err != nil {
		return nil, err
	}
	return ParseITF(data)
}

// Actions lists the trace's action ids.
func (t *Trace) Actions() []string {
	var ids []string
	for _, s := range t.Steps {
		ids = append(ids, s.Action)
	}
	return ids
}

// Step records what replay did for one action of a trace (or for an
// auxiliary step a probe needs, such as tools/list to find a tool).
type Step struct {
	Action string          `json:"action"`
	Kind   string          `json:"kind,omitempty"`
	Sent   json.RawMessage `json:"sent,omitempty"`
	Answer string          `json:"answer,omitempty"`
	Note   string          `json:"note,omitempty"`
}

// Result is the outcome of one property on one target.
type Result struct {
	Protocol  string   `json:"protocol"`
	Model     string   `json:"model"`
	Property  string   `json:"property"`
	Principle string   `json:"principle"`
	Outcome   Outcome  `json:"outcome"`
	Evidence  string   `json:"evidence"`
	Clauses   []string `json:"clauses,omitempty"`
	// Trace says whether the steps replay a counterexample ("counterexample")
	// or a probe of a property the model says holds ("probe").
	Trace string `json:"trace"`
	Steps []Step `json:"steps"`
}

// Report is every result for one target.
type Report struct {
	Target       string   `json:"target"`
	Protocol     string   `json:"protocol"`
	Profile      string   `json:"profile,omitempty"`
	Mode         string   `json:"mode"`
	BehindWarden bool     `json:"behind_warden"`
	Notes        []string `json:"notes,omitempty"`
	Results      []Result `json:"results"`
	// Gateway is, behind warden, what the gateway's audit logs recorded
	// during the run: the evidence that it went through warden.
	Gateway *GatewayEvidence `json:"gateway,omitempty"`
}

// Result returns the result for a property, if it was replayed.
func (r *Report) Result(property string) (Result, bool) {
	for _, res := range r.Results {
		if res.Property == property {
			return res, true
		}
	}
	return Result{}, false
}

// Options bounds a replay.
type Options struct {
	// StepTimeout bounds each wait for an answer; 0 means 10s. A request
	// not answered in time counts as not served.
	StepTimeout time.Duration
	// Spans, if set, records every message replay sends and receives as
	// telemetry, a span per probe and per operation (spans.go).
	Spans *telemetry.Recorder
}

func (o Options) step() time.Duration {
	if o.StepTimeout > 0 {
		return o.StepTimeout
	}
	return 10 * time.Second
}

// probe replays one property of a protocol model on a target. trace is the
// property's counterexample, or nil when the model says it holds.
type probe struct {
	model, property, principle string
	clauses                    []string
	run                        func(ctx context.Context, t *Target, tr *Trace, o Options) Result
}

// Probes lists the model/property pairs replay has an oracle for, per
// protocol.
func Probes(protocol string) []string {
	var out []string
	for _, p := range probesFor(protocol) {
		out = append(out, p.model+"/"+p.property)
	}
	return out
}

func probesFor(protocol string) []probe {
	switch protocol {
	case MCP:
		return mcpProbes
	case A2A:
		return a2aProbes
	case AGUI:
		return aguiProbes
	}
	return nil
}

// Run replays every probe of the target's protocol, in order. traces maps
// "model/property" to the counterexample of a violated property; a probe of
// a property without one replays its own steps (a property the model says
// holds may still fail on an implementation: IMPL-FAIL).
func Run(ctx context.Context, t *Target, traces map[string]*Trace, o Options) (*Report, error) {
	ps := probesFor(t.Protocol)
	if ps == nil {
		return nil, fmt.Errorf("replay: no adapter for protocol %q (want MCP, A2A or AG-UI)", t.Protocol)
	}
	if t.Protocol == MCP && t.Dial == nil || t.Protocol != MCP && t.URL == "" {
		return nil, fmt.Errorf("replay: target %s has no way to reach it", t.Name)
	}
	profile := t.Profile
	switch {
	case profile == "" && t.Protocol == MCP:
		profile = DefaultMCPProfile
	case profile == "" && t.Protocol == A2A:
		profile = A2A10
	}
	if t.Protocol == A2A && t.a2a == nil {
		s, err := newA2ASetup(t)
		if err != nil {
			return nil, err
		}
		defer s.close()
		tt := *t
		tt.a2a = s
		t = &tt
	}
	rep := &Report{Target: t.Name, Protocol: t.Protocol, Profile: profile, Mode: t.Mode,
		BehindWarden: t.BehindWarden, Notes: t.Notes}
	for _, p := range ps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		tr := traces[p.model+"/"+p.property]
		pctx, end := o.startProbe(ctx, t, p)
		r := p.run(pctx, t, tr, o)
		end(r)
		r.Protocol, r.Model, r.Property, r.Principle = t.Protocol, p.model, p.property, p.principle
		r.Clauses = slices.Clone(p.clauses)
		switch {
		case r.Trace != "": // the probe said which it followed
		case tr != nil:
			r.Trace = "counterexample"
		default:
			r.Trace = "probe"
		}
		rep.Results = append(rep.Results, r)
	}
	if t.BehindWarden && len(t.AuditLogs) > 0 {
		ev, err := readGatewayEvidence(t.AuditLogs)
		if err != nil {
			return nil, fmt.Errorf("replay: the gateway's audit log: %w", err)
		}
		rep.Gateway = ev
		rep.Notes = append(slices.Clone(rep.Notes), ev.note())
	}
	return rep, nil
}

// inconclusive is a result for a target that gave no verdict.
func inconclusive(why string, steps ...Step) Result {
	return Result{Outcome: Inconclusive, Evidence: why, Steps: steps}
}

// unrealisable is a result for a step the adapter cannot drive.
func unrealisable(why string, steps ...Step) Result {
	return Result{Outcome: Unrealisable, Evidence: why, Steps: steps}
}

func httpClient(t *Target) *http.Client {
	if t.HTTP != nil {
		return t.HTTP
	}
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
