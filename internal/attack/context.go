package attack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
)

// Defaults for ContextOptions.
const (
	DefaultContextTurns     = 8
	DefaultContextMaxTokens = 1024
	DefaultContextTimeout   = 2 * time.Minute
	DefaultContextBudget    = 200_000
)

// ContextOptions run a document in context mode: warden plays the agent
// host in front of a model, instead of attacking an agent someone else
// wrote. The document's ag_ui_client actor is the user; its server actors
// (mcp_server, a2a_server) are the model's tools; the model is any
// OpenAI-compatible chat-completions endpoint. The indicators are judged
// on the same trace as in any run.
type ContextOptions struct {
	// BaseURL is the API's base, to which /chat/completions is appended
	// (https://api.openai.com/v1, http://127.0.0.1:11434/v1, ...).
	BaseURL string
	// Model is the model name sent in each request.
	Model string
	// APIKey is sent as a bearer token; empty sends no Authorization.
	APIKey string
	// System is the gen_ai.system of the run's chat spans; "" means
	// "openai" (the API the endpoint speaks).
	System string
	// NoStream asks for whole completions instead of SSE chunks.
	NoStream bool
	// MaxTurns bounds the model calls of one AG-UI run (each tool result
	// fed back is a turn). 0 means DefaultContextTurns.
	MaxTurns int
	// MaxTokens bounds each completion (max_tokens). 0 means
	// DefaultContextMaxTokens.
	MaxTokens int
	// TokenBudget bounds the tokens (input and output, as the endpoint
	// reports them) of all the model calls of one document: once it is
	// used up the host calls the model no more, and a verdict that is not
	// exploited is error. 0 means DefaultContextBudget.
	TokenBudget int64
	// Timeout bounds each model call. 0 means DefaultContextTimeout.
	Timeout time.Duration
	// SystemPrompt is the host's system message; "" means
	// DefaultContextSystemPrompt.
	SystemPrompt string
	// HTTPClient calls the model and the actors. Nil means a client that
	// does not follow redirects.
	HTTPClient *http.Client
}

// Validate reports the first problem of the options, naming the field.
func (c *ContextOptions) Validate() error {
	if c.BaseURL == "" {
		return errors.New("context mode needs the model endpoint's base URL")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("context mode: model base URL %q is not an http(s) URL", c.BaseURL)
	}
	if c.Model == "" {
		return errors.New("context mode needs a model name")
	}
	if c.MaxTurns < 0 || c.MaxTokens < 0 || c.Timeout < 0 || c.TokenBudget < 0 {
		return errors.New("context mode: max turns, max tokens, token budget and timeout cannot be negative")
	}
	return nil
}

// checkContext is CheckEndpoints for context mode: the document needs an
// ag_ui_client actor, whose messages are the user's turn.
func checkContext(doc *oatf.Document) error {
	actors := items(doc.Attack().Get("execution").Get("actors"))
	for _, av := range actors {
		if av.Get("mode").StringOr("") == "ag_ui_client" {
			return nil
		}
	}
	name := "-"
	if len(actors) > 0 {
		name = actors[0].Get("name").StringOr("default")
	}
	return &EndpointError{Actor: name, Mode: "context", Need: "an ag_ui_client actor to speak as the user (context mode drives the model from it)"}
}

// runContext runs doc with warden's agent host in front of the model: it
// serves the host on a loopback port, points the ag_ui_client actors at it,
// gives it the server actors' endpoints when they are ready, and runs the
// document as any other. A model that could not be reached, or failed in
// the middle of a run, makes a verdict that is not exploited an error.
func runContext(ctx context.Context, doc *oatf.Document, opts Options) (*Result, error) {
	c := *opts.Context
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := checkContext(doc); err != nil {
		return nil, err
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host := &agentHost{
		model: &chatClient{url: strings.TrimRight(c.BaseURL, "/") + "/chat/completions", model: c.Model, key: c.APIKey,
			stream: !c.NoStream, maxTokens: cmpOr(c.MaxTokens, DefaultContextMaxTokens), http: hc},
		opts: c, modes: map[string]string{}, spans: opts.Spans, log: log, http: hc,
		toolName: regexp.MustCompile(`[^A-Za-z0-9_-]`),
	}
	for _, av := range items(doc.Attack().Get("execution").Get("actors")) {
		host.modes[av.Get("name").StringOr("default")] = av.Get("mode").StringOr("")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("context mode: agent host: %w", err)
	}
	srv := &http.Server{Handler: host, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	opts.Context = nil
	opts.AGUIURL = "http://" + ln.Addr().String() + "/agui"
	onReady := opts.OnReady
	opts.OnReady = func(eps map[string]string) error {
		host.setEndpoints(eps)
		if onReady != nil {
			return onReady(eps)
		}
		return nil
	}
	res, err := Run(ctx, doc, opts)
	if err != nil {
		return nil, err
	}
	host.mu.Lock()
	calls, in, out := host.calls, host.in, host.out
	host.mu.Unlock()
	log.Info("context: run done", "model", c.Model, "model_calls", calls, "input_tokens", in, "output_tokens", out)
	if f := host.Failure(); f != nil && !slices.Contains([]string{oatf.Exploited, oatf.Partial}, res.Verdict.Result) {
		// The model never answered all it was asked: no indicator
		// matching proves nothing.
		why := "context mode: " + f.Error()
		if !strings.Contains(res.Error, f.Error()) {
			res.Error = strings.TrimPrefix(res.Error+"; "+why, "; ")
		}
		res.Verdict.Result = oatf.Error
	}
	return res, nil
}

// sortedKeys returns a map's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
