package a2agw

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentwarden/warden/internal/deny"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/transport"
)

// Stage names, as they appear in the "stage" of refusals and in Events.
const (
	StageListener   = "listener"        // HTTP method, content type
	StageAuth       = "auth"            // Options.Authenticate refused the client
	StageWire       = jsonrpc.StageWire // the strict decoder
	StageMethod     = "method-policy"   // unknown, denied or not allowed methods
	StageCard       = "card"            // the upstream's card is not attested
	StageDelegation = "delegation"      // INV-7
	StageTaint      = "taint"           // Options.Flow refused untrusted content
	StageConsent    = "consent"         // Options.Flow: no person approved the request
	StageAudit      = "audit"           // Options.Record failed
	StageUpstream   = "upstream"        // unreachable, or answered something invalid
)

// Permitter decides whether a method is allowed and names the rule that
// decided (`deny "tasks/*"`, "not in allow list"). config.List implements it.
type Permitter interface {
	Permits(name string) (ok bool, rule string)
}

// Options configure a Handler. Upstream and PublicURL are required; every
// other zero value is the safe setting.
type Options struct {
	// Name identifies the upstream in Events and in the pin store; "" is "a2a".
	Name string
	// Upstream is the URL of the upstream agent's JSON-RPC endpoint.
	Upstream string
	// CardURL is where the upstream's agent card is fetched; "" means
	// CardPath on Upstream's origin, then LegacyCardPath if that is 404.
	CardURL string
	// PublicURL is the URL at which clients reach this handler's JSON-RPC
	// endpoint: the served card points there.
	PublicURL string
	// UpstreamHeader is sent with every request to the upstream (its
	// credentials), and with the card request when the card is on the
	// upstream's origin. The client's own Authorization is never forwarded.
	UpstreamHeader http.Header
	// Client makes upstream requests; nil means a client that follows no
	// redirects and has no overall timeout (streams are long): a request
	// ends when the client's does.
	Client *http.Client

	// Authenticate, if set, authenticates every JSON-RPC request (the card
	// stays public, as A2A requires). The principal is the root of
	// delegation chains. internal/authn provides one.
	Authenticate func(r *http.Request) (principal string, refusal *transport.AuthRefusal)

	// Methods, if set, is an allow/deny list of JSON-RPC methods, checked
	// after the built-in rule that only A2A methods pass.
	Methods Permitter
	// AllowInternalWebhooks lets push notification configs name any
	// webhook URL. Risk: a client can then make the agent POST to
	// loopback, private and link-local addresses (the cloud metadata
	// service, internal admin endpoints) and to other schemes: SSRF from
	// the agent's network (push.go).
	AllowInternalWebhooks bool
	// AllowExtendedCard lets GetExtendedAgentCard (0.3:
	// agent/getAuthenticatedExtendedCard) through. Risk: the extended card
	// is neither verified, pinned nor rewritten, so it can point clients
	// straight at the upstream.
	AllowExtendedCard bool

	// CardKeys are the public keys trusted to sign the upstream's card. A
	// signed card that none of them verifies is refused.
	CardKeys []jose.JSONWebKey
	// RequireSignedCard refuses an unsigned card.
	RequireSignedCard bool
	// CardSigner, if set, signs the card the gateway serves (private JWK;
	// Algorithm names the JWS alg, default EdDSA).
	CardSigner *jose.JSONWebKey
	// Pins keeps the pinned card hash; nil means a new MemoryPins.
	Pins PinStore
	// CardTTL is how long a fetched card is used before it is fetched and
	// checked again; 0 means 5 minutes.
	CardTTL time.Duration

	// Delegation configures the delegation stage (P3, INV-7).
	Delegation DelegationOptions

	// Flow, if set, follows content across protocols (composition safety):
	// it is asked about each request after the delegation stage, and shown
	// each answer and streamed event before the client gets it.
	Flow Flow

	// Limits bound each message (and each streamed event); the zero value
	// means the jsonrpc defaults.
	Limits jsonrpc.Limits

	// Record, if set, is shown every message and refusal before it leaves
	// (the audit log, telemetry). It must be safe for concurrent use. An
	// error refuses the message: nothing passes unrecorded (fail-secure).
	Record func(ctx context.Context, e Event) error

	// Logger receives refusals; nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// A Flow decides on requests the gateway's policy holds beyond the
// protocol: consent (AASM P5) and untrusted content (AgentRFC CS). It must
// be safe for concurrent use.
type Flow interface {
	// Check decides on a request before it is forwarded: nil lets it pass;
	// a refusal whose Stage is "" is StageTaint's. It may block, to wait for a person, until ctx ends.
	Check(ctx context.Context, principal, method string, params []byte) *deny.Denial
	// Observe is shown the result of each answer and streamed event, with
	// the params of the request it answers.
	Observe(ctx context.Context, principal, method string, params, result []byte)
}

// Event is what the gateway reports about each message it handled.
type Event struct {
	Upstream  string
	Principal string // the authenticated client; "" without Authenticate
	// Direction is "client" (a request), "upstream" (an answer or a
	// streamed event) or "card" (the agent card was served or refused).
	Direction string
	Method    string     // the request's method; "agent-card" for the card
	ID        jsonrpc.ID // the request's id
	TaskID    string     // the A2A task, when the message names one
	// Decision is "allow" or "deny"; Stage, Rule and Reason say why a
	// message was denied, or (Reason) why an allowed one was changed.
	Decision            string
	Stage, Rule, Reason string
	// Withheld, on the answer to a ListTasks that the task-owner stage
	// filtered, is how many of the agent's entries the client did not get.
	Withheld int
	// Delegation is the verified chain the request carried, if any.
	Delegation *Chain
	// CardHash is the pin of the card, and CardKey the kid of the trusted
	// key that verified its signature ("" if unsigned), for card events.
	CardHash, CardKey string
	// Raw is the message as it leaves (nil for refusals that are not
	// sent on); it must not be modified.
	Raw []byte
}

// Handler is the A2A gateway for one upstream agent: it serves the
// attested card at CardPath and LegacyCardPath and relays JSON-RPC POSTs.
//
// Concurrency: ServeHTTP may be called concurrently. The fields above mu
// are immutable after New. mu guards the card state; it is held while the
// card is fetched, so concurrent requests wait for one fetch rather than
// start their own. Nothing else is locked while it is held except the pin
// store's own lock.
type Handler struct {
	opts      Options
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger
	owned     owners // the task-owner stage's ids; safe for concurrent use
	listState        // the key of ListTasks page tokens; safe for concurrent use

	mu      sync.Mutex
	state   *cardState  // nil: never fetched, or invalidated
	pending *cardChange // the last changed card refused, for ApproveCard
}

// cardState is the outcome of one fetch of the card.
type cardState struct {
	at     time.Time
	denial *deny.Denial // nil when the card is attested
	served []byte       // the rewritten card, when attested
	hash   string       // CardHash of the upstream's card
	name   string       // the card's "name"
	kid    string       // the key that verified its signature; "" if unsigned
}

// cardChange is a card that differs from the pin.
type cardChange struct {
	hash, pinned string
	card         []byte
}

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	for _, u := range []struct{ name, v string }{{"Upstream", opts.Upstream}, {"PublicURL", opts.PublicURL}, {"CardURL", opts.CardURL}} {
		if u.v == "" && u.name == "CardURL" {
			continue
		}
		p, err := url.Parse(u.v)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("a2agw: %s %q: want an http:// or https:// URL with a host", u.name, u.v)
		}
	}
	if opts.Name == "" {
		opts.Name = "a2a"
	}
	if opts.Pins == nil {
		opts.Pins = &MemoryPins{}
	}
	if opts.CardTTL <= 0 {
		opts.CardTTL = 5 * time.Minute
	}
	for _, k := range opts.CardKeys {
		if !k.Valid() {
			return nil, errors.New("a2agw: an invalid card key")
		}
	}
	for iss, keys := range opts.Delegation.Keys {
		for _, k := range keys {
			if !k.Valid() {
				return nil, fmt.Errorf("a2agw: an invalid delegation key for %q", iss)
			}
		}
	}
	h := &Handler{opts: opts, client: opts.Client, now: opts.Now, log: opts.Logger}
	if h.client == nil {
		// No redirects: the upstream is the configured URL, and a redirect
		// must not carry messages (or UpstreamHeader) elsewhere.
		h.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h, nil
}

// ServeHTTP serves the card (GET on a path ending in CardPath or
// LegacyCardPath) and relays JSON-RPC (POST on any other path).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, CardPath) || strings.HasSuffix(r.URL.Path, LegacyCardPath) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			d := &deny.Denial{Stage: StageListener, Rule: deny.RuleHTTPMethod,
				Code: jsonrpc.CodeInvalidRequest, Reason: "the agent card is read with GET, not " + httpMethod(r)}
			if err := h.record(r.Context(), Event{Upstream: h.opts.Name, Direction: "card", Method: "agent-card",
				Decision: "deny", Stage: d.Stage, Rule: string(d.Rule), Reason: d.Reason}); err != nil {
				d = auditDenial(err)
			}
			writeError(w, http.StatusMethodNotAllowed, jsonrpc.ID{}, d)
			return
		}
		h.serveCard(w, r)
		return
	}
	h.relay(w, r)
}

// serveCard answers with the attested, rewritten card, or 502 with the
// reason it is refused.
func (h *Handler) serveCard(w http.ResponseWriter, r *http.Request) {
	st := h.card(r.Context())
	e := Event{Upstream: h.opts.Name, Direction: "card", Method: "agent-card", Decision: "allow", CardHash: st.hash, CardKey: st.kid, Raw: st.served}
	if st.denial != nil {
		e.Decision, e.Stage, e.Rule, e.Reason, e.Raw = "deny", st.denial.Stage, string(st.denial.Rule), st.denial.Reason, nil
	}
	if err := h.record(r.Context(), e); err != nil {
		writeError(w, http.StatusServiceUnavailable, jsonrpc.ID{}, auditDenial(err))
		return
	}
	if st.denial != nil {
		writeError(w, http.StatusBadGateway, jsonrpc.ID{}, st.denial)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(st.served)
}

// card returns the current card state, fetching and checking the card when
// it is older than CardTTL.
func (h *Handler) card(ctx context.Context) *cardState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := h.state; st != nil && h.now().Sub(st.at) < h.opts.CardTTL {
		return st
	}
	// The fetch outlives a client that hangs up: its result serves others.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	st := h.check(fctx)
	st.at = h.now()
	// An unreachable upstream is asked again on the next request; any
	// other outcome holds for CardTTL.
	if st.denial == nil || st.denial.Rule != deny.RuleUnavailable {
		h.state = st
	}
	if st.denial != nil {
		h.log.Warn("a2a agent card refused", "upstream", h.opts.Name, "rule", st.denial.Rule, "reason", st.denial.Reason)
	}
	return st
}

// check fetches the card and attests it. Called with mu held.
func (h *Handler) check(ctx context.Context) *cardState {
	refuse := func(rule deny.Rule, format string, args ...any) *cardState {
		return &cardState{denial: &deny.Denial{Stage: StageCard, Rule: rule, Reason: fmt.Sprintf(format, args...)}}
	}
	raw, err := h.fetchCard(ctx)
	if err != nil {
		return refuse(deny.RuleUnavailable, "the upstream's agent card could not be fetched: %v", err)
	}
	hash, err := CardHash(raw)
	if err != nil {
		return refuse(deny.RuleInvalid, "the upstream's agent card is not acceptable JSON: %v", err)
	}
	st := &cardState{hash: hash}
	if name, ok := jsonrpc.Lookup(raw, "name"); ok {
		st.name, _ = jsonrpc.String(name)
	}
	st.kid, err = VerifyCard(raw, h.opts.CardKeys)
	switch {
	case errors.Is(err, errUnsigned) && h.opts.RequireSignedCard:
		return refuse(deny.RuleUnsigned, "the upstream's agent card is not signed, and a signed card is required")
	case errors.Is(err, errUnsigned):
	case err != nil:
		st.denial = &deny.Denial{Stage: StageCard, Rule: deny.RuleSignature, Reason: "agent card signature: " + err.Error()}
		return st
	}
	pinned, _, err := h.opts.Pins.Pin(ctx, h.opts.Name, hash)
	if err != nil {
		st.denial = &deny.Denial{Stage: StageCard, Rule: deny.RuleStore, Reason: "the card pin could not be read: " + err.Error()}
		return st
	}
	if pinned != hash {
		h.pending = &cardChange{hash: hash, pinned: pinned, card: raw}
		st.denial = &deny.Denial{Stage: StageCard, Rule: deny.RuleChanged, Reason: "the upstream's agent card changed (pinned " +
			short(pinned) + ", now " + short(hash) + "); it is refused until an operator approves it"}
		return st
	}
	served, err := rewriteCard(raw, h.opts.PublicURL)
	if err == nil && h.opts.CardSigner != nil {
		served, err = SignCard(served, h.opts.CardSigner)
	}
	if err != nil {
		st.denial = &deny.Denial{Stage: StageCard, Rule: deny.RuleRewrite, Reason: "the agent card could not be rewritten: " + err.Error()}
		return st
	}
	st.served = served
	return st
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// PendingCard returns the last card refused because it differed from the
// pin: its hash and bytes, for an operator to review.
func (h *Handler) PendingCard() (hash string, card []byte, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending == nil {
		return "", nil, false
	}
	return h.pending.hash, h.pending.card, true
}

// ApproveCard pins the pending card whose hash is given (see PendingCard)
// and makes the next request fetch the card again.
func (h *Handler) ApproveCard(ctx context.Context, hash string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending == nil || h.pending.hash != hash {
		return fmt.Errorf("a2agw: no pending agent card with hash %q", hash)
	}
	if err := h.opts.Pins.Approve(ctx, h.opts.Name, hash); err != nil {
		return err
	}
	h.pending, h.state = nil, nil
	return nil
}

// RefreshCard fetches and checks the card now (for instance on a signal
// that it changed). It returns the refusal, if the card is refused.
func (h *Handler) RefreshCard(ctx context.Context) error {
	h.mu.Lock()
	h.state = nil
	h.mu.Unlock()
	if st := h.card(ctx); st.denial != nil {
		return errors.New(st.denial.Reason)
	}
	return nil
}

// record shows e to Options.Record on a context that the client cannot
// cancel, so that a client hanging up cannot drop its record.
func (h *Handler) record(ctx context.Context, e Event) error {
	if e.Decision == "deny" {
		h.log.Info("a2a refused", "upstream", e.Upstream, "direction", e.Direction, "method", e.Method,
			"stage", e.Stage, "rule", e.Rule, "reason", e.Reason)
	}
	if h.opts.Record == nil {
		return nil
	}
	return h.opts.Record(context.WithoutCancel(ctx), e)
}

func auditDenial(err error) *deny.Denial {
	return &deny.Denial{Stage: StageAudit, Rule: deny.RuleWrite, Code: jsonrpc.CodeInternalError,
		Reason: "the record of this message could not be kept: " + err.Error()}
}

// httpMethod is r's method as a refusal's reason may quote it: a client
// chooses it, so anything but a short token is not repeated.
func httpMethod(r *http.Request) string {
	m := r.Method
	if len(m) > 16 || strings.IndexFunc(m, func(c rune) bool { return c < 'A' || c > 'Z' }) >= 0 {
		return "another method"
	}
	return m
}

// writeError writes a JSON-RPC error response for d with the HTTP status.
func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, d *deny.Denial) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.EncodeErrorResponse(id, d.Error()))
}
