package transport

// Bounds on what clients can make the listener hold: sessions (overall and
// per principal, shared by the listeners of one gateway), whatever else an
// Admit hook counts (the gateway's child processes per stdio upstream), and
// the time a request's body may take to arrive.
//
// A session counts from the POST that creates it until its OnSession call has
// returned: the relay has then closed its upstream (a child process has
// exited), so the room a refused client waits for is room the gateway
// actually has again. A refused session reaches no OnSession, and so starts
// no child and no upstream session.

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// Defaults of the listener's bounds.
const (
	DefaultMaxSessions             = 4096
	DefaultMaxSessionsPerPrincipal = 256
	DefaultBodyTimeout             = 30 * time.Second
	// RetryAfter is what the Retry-After header of a refused session says.
	RetryAfter = 5 * time.Second
)

// CodeBusy is the JSON-RPC error code of a session refused because a limit
// is reached (HTTP 503 with Retry-After). It belongs to the gateway's block
// of codes documented in docs/errors.md.
const CodeBusy int64 = -32036

// Rules of the listener's refusals for a limit (stage "listener").
const (
	RuleSessionLimit          = "session-limit"           // DefaultMaxSessions, gateway.limits.max_sessions
	RulePrincipalSessionLimit = "principal-session-limit" // gateway.limits.max_sessions_per_principal
	RuleChildLimit            = "child-limit"             // the gateway's Admit: gateway.limits.max_children_per_upstream
	RuleBodyTimeout           = "body-timeout"            // HTTPServerOptions.BodyTimeout
)

// Busy is a new session refused because a limit is reached. The listener
// answers HTTP 503 with a Retry-After header and a JSON-RPC error with code
// CodeBusy, stage "listener" and Rule.
type Busy struct {
	Rule    string
	Message string
}

// SessionLimits bounds the sessions held at once by the listeners that share
// it: overall, and per principal. The principal is the authenticated client
// (HTTPServerOptions.Authenticate); a listener without authentication counts
// per client IP address instead. It is safe for concurrent use.
type SessionLimits struct {
	max, perPrincipal int // immutable

	mu    sync.Mutex // guards the fields below
	total int
	by    map[string]int // sessions per principal key; no zero entries
}

// NewSessionLimits returns a bound of max sessions, perPrincipal of them per
// principal. A value ≤ 0 means its default (DefaultMaxSessions,
// DefaultMaxSessionsPerPrincipal).
func NewSessionLimits(max, perPrincipal int) *SessionLimits {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if perPrincipal <= 0 {
		perPrincipal = DefaultMaxSessionsPerPrincipal
	}
	return &SessionLimits{max: max, perPrincipal: perPrincipal, by: make(map[string]int)}
}

// Open reports the sessions held now, overall.
func (l *SessionLimits) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// acquire counts a session of principal key, or refuses it. release, which
// may be called more than once, uncounts it.
func (l *SessionLimits) acquire(key string) (release func(), refusal *Busy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= l.max:
		return nil, &Busy{Rule: RuleSessionLimit,
			Message: fmt.Sprintf("the gateway holds its maximum of %d sessions; retry later", l.max)}
	case l.by[key] >= l.perPrincipal:
		return nil, &Busy{Rule: RulePrincipalSessionLimit,
			Message: fmt.Sprintf("this client holds its maximum of %d sessions; end one (HTTP DELETE) or retry later", l.perPrincipal)}
	}
	l.total++
	l.by[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.by[key]--; l.by[key] == 0 {
				delete(l.by, key)
			}
		})
	}, nil
}

// admit counts a new session against the server's limits and its Admit
// hook. release undoes both once the session is over.
func (h *HTTPServer) admit(r *http.Request, info SessionInfo) (release func(), refusal *Busy) {
	key := info.Principal
	if h.authenticate == nil {
		key = remoteIP(r.RemoteAddr)
	}
	counted, refusal := h.sessionLimits.acquire(key)
	if refusal != nil {
		return nil, refusal
	}
	if h.admitHook == nil {
		return counted, nil
	}
	more, refusal := h.admitHook(info)
	if refusal != nil {
		counted()
		return nil, refusal
	}
	// Not the named result: a closure calling release would call itself.
	return func() {
		if more != nil {
			more()
		}
		counted()
	}, nil
}

// refuseBusy answers a POST whose session was refused: 503, Retry-After, and
// a JSON-RPC error for id, once OnRefused has been told of it with the
// POST's body.
func (h *HTTPServer) refuseBusy(w http.ResponseWriter, r *http.Request, body []byte, id jsonrpc.ID, b *Busy) {
	h.log.Warn("http: session refused", "rule", b.Rule, "remote", r.RemoteAddr, "reason", b.Message)
	h.refused(b.Rule)
	rpcErr := jsonrpc.Detail{Stage: stageListener, Rule: b.Rule}.Errorf(CodeBusy, b.Message)
	h.refusedMessage(r, http.StatusServiceUnavailable, body, -1, id, rpcErr)
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	writeRPCError(w, http.StatusServiceUnavailable, id, rpcErr)
}

// refused tells OnRefuse, if set, of a request refused for a bound.
func (h *HTTPServer) refused(rule string) {
	if h.onRefuse != nil {
		h.onRefuse(rule)
	}
}

// remoteIP is the IP address of a request's RemoteAddr, without the port.
func remoteIP(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
