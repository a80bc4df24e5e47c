package transport

// The streamable-HTTP listener: HTTP exchanges in, one Conn per MCP session out.
//
//	MCP client                    HTTPServer                                  relay
//	                              Host/Origin check, status codes,
//	POST {initialize} ──────────► body limit, jsonrpc.DecodeBatch ──► new session ──► OnSession(ctx, conn)
//	POST {msgs} + Mcp-Session-Id ─► (same checks) ─────────────────► in (bounded) ──► conn.Read
//	                                                                                      │
//	◄── SSE "<stream>_<seq>" ◄── pump ◄── stream event log ◄── route ◄──────────────── conn.Write
//	GET  (standalone stream;      │        (bounded per session,  response      → its request's stream
//	      Last-Event-ID resumes) ─┘         kept for resumption)  Related/progress → that stream
//	DELETE ──► end session: conn.Read returns io.EOF, OnSession's ctx is cancelled
//
// A session is stateful (created by an initialize POST at a revision before
// 2026-07-28, addressed by its Mcp-Session-Id) or stateless (one per POST
// without a session id, ended once that POST's requests are all answered).
//
// Every POST that carries requests becomes a stream. What the relay writes is
// appended to the event log of the stream it is routed to (see
// httpSession.routeLocked) and written out by the HTTP handler goroutine that
// holds the stream (pump), so Conn.Write never waits on a client's network.
// The stream of a POST with one request opens when its first message comes,
// or after OpenWait: a quick response then leaves with the headers, the
// priming event and the end of the stream in one write.
// A stream outlives its HTTP request until its requests are answered; its
// events outlive it until the session's event buffer needs the room, so a GET
// with Last-Event-ID can pick up where a dropped connection left off. The
// standalone stream's events that no GET has taken yet are the session's
// pending buffer.
//
// Lock order: HTTPServer.mu and httpSession.mu are never held together.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// HTTPServerOptions configures an HTTPServer. The zero value is safe apart
// from OnSession, which is required.
type HTTPServerOptions struct {
	// Limits bound each request body and each message in it.
	Limits jsonrpc.Limits

	// AllowedHosts and AllowedOrigins extend the DNS-rebinding protection.
	// The Host header must be a loopback name (localhost, 127.0.0.1, [::1],
	// any port) or match an AllowedHosts entry ("host" matches any port,
	// "host:port" only that port; case-insensitive). An Origin header, when
	// present, must be a loopback origin (http or https) or equal an
	// AllowedOrigins entry such as "https://app.example.com".
	AllowedHosts   []string
	AllowedOrigins []string

	// InsecureDisableHostCheck turns the Host and Origin checks off.
	// Risk: any web page the user visits can then drive the gateway through
	// DNS rebinding. Use it only behind a proxy that validates Host itself.
	InsecureDisableHostCheck bool

	// Authenticate, if set, authenticates every request (after the Host and
	// Origin checks, before anything is read). It returns the principal, or
	// the refusal to send: its status, its WWW-Authenticate challenge and a
	// message. A stateful session belongs to the principal that opened it;
	// a request on it by anyone else is refused (403).
	Authenticate func(r *http.Request) (principal string, refusal *AuthRefusal)

	// SessionIdleTimeout ends stateful sessions that have had no HTTP
	// request in flight for this long. 0 means 30 minutes.
	SessionIdleTimeout time.Duration

	// Sessions bounds the sessions held at once, overall and per principal
	// (httpserver_limits.go); listeners that share one share the bound. nil
	// means a bound of this listener's own with the defaults. A stateless
	// request counts as a session while it is in flight. A session over
	// the bound is refused with HTTP 503 and Retry-After.
	Sessions *SessionLimits

	// Admit, if set, is asked before each new session starts, once Sessions
	// has room for it. It may refuse the session (503, as for Sessions), or
	// admit it with a release function (may be nil), called once OnSession
	// has returned. A refused session never reaches OnSession.
	Admit func(info SessionInfo) (release func(), refusal *Busy)

	// OnRefuse, if set, is told the rule of each request the listener
	// refuses for a bound (a limit reached, a body too slow), for metrics.
	OnRefuse func(rule string)

	// OnRefused, if set, is told of each request refused before its
	// messages could be decoded and handed to a session (the Host/Origin
	// check, authentication, an invalid message, a header mismatch, a body
	// over the size limit), with the raw bytes' length and SHA-256 when the
	// body was read, before the refusal is answered: the gateway records it
	// in its audit log. The answer waits for it.
	OnRefused OnRefusedFunc

	// BodyTimeout bounds the reading of a POST's body, from the end of its
	// headers; a body that takes longer is answered 408 and its connection
	// closed. It bounds the request only: the response, an SSE stream, may
	// last as long as the relay needs. 0 means DefaultBodyTimeout.
	BodyTimeout time.Duration

	// EventBuffer is how many outbound messages a session keeps for
	// resumption and for delivery to a standalone stream not yet open.
	// 0 means 1024. The buffer also holds at most 16×Limits.MaxBytes bytes.
	EventBuffer int

	// OpenWait is how long the answer to a POST that carries one request
	// may hold its SSE stream back, waiting for the response. A response
	// that comes within it goes out with the headers and the priming event
	// in one write (instead of three: the opening, the event, the end of the
	// stream); a slower one finds the stream open, priming event included,
	// once OpenWait has passed, so that the client can resume it from then
	// on. The bytes are the same either way. 0 means DefaultOpenWait; a
	// negative value opens every stream at once. At the stateless revision
	// 2026-07-28 the answer always waits for its first message, since an
	// error response may set the HTTP status.
	OpenWait time.Duration

	// Logger receives rejections and session lifecycle events. Nil discards.
	Logger *slog.Logger

	// ParamBindings, if set, returns the SEP-2243 x-mcp-header bindings of a
	// tool, as learned from the upstream's tools/list. Requests at 2026-07-28
	// whose Mcp-Param-* headers disagree with their arguments are then refused
	// here with HTTP 400 and code -32020. A tool it does not know is left to
	// the upstream.
	ParamBindings func(tool string) ([]mcp.ParamBinding, bool)

	// HoldInitialize makes the answer to initialize wait for the relay's
	// first message (the upstream's answer) before its stream opens, so that
	// the session id goes out only if the upstream keeps a session: one that
	// keeps none is shown so (SessionlessView). Set it for upstreams that
	// may keep none (streamable HTTP servers); without it the answer opens
	// after OpenWait, as any other.
	HoldInitialize bool

	// Sessionless, if set, reports whether the upstream is known to keep no
	// session (a stateless streamable-HTTP server; see SessionlessView).
	// A GET or DELETE without Mcp-Session-Id is then answered 405 with
	// Allow: POST, as such a server answers it, instead of 400.
	Sessionless func() bool

	// OnSession is called in its own goroutine for each new session
	// (stateful: on initialize; stateless: per POST). The session lasts until
	// OnSession returns or conn is closed; the handler must Close conn when
	// done. ctx is cancelled when the session ends.
	OnSession func(ctx context.Context, conn Conn, info SessionInfo)
}

// AuthRefusal is a request Authenticate refused.
type AuthRefusal struct {
	Status    int    // 401 or 403 (400 for a malformed header)
	Challenge string // the WWW-Authenticate value
	Rule      string
	Message   string
}

// SessionInfo describes a new session to OnSession.
type SessionInfo struct {
	// Principal is who opened the session (Authenticate); "" without it.
	Principal string
	// ID is the Mcp-Session-Id issued to the client; "" when stateless.
	ID        string
	Stateless bool
	// RemoteAddr is the client address of the first request.
	RemoteAddr string
	// Header holds the headers of the first request.
	Header http.Header
	// ProtocolVersion is the revision the client asked for: the
	// protocolVersion of initialize, else the MCP-Protocol-Version header.
	ProtocolVersion string
}

// Defaults for HTTPServerOptions.
const (
	DefaultSessionIdleTimeout = 30 * time.Minute
	DefaultEventBuffer        = 1024
	DefaultOpenWait           = 10 * time.Millisecond
)

const (
	// inboundQueue is how many messages may wait for the relay's Read;
	// further POSTs wait (back-pressure) rather than grow memory.
	inboundQueue = 16
	// maxPendingRequests bounds the unanswered requests of one session.
	maxPendingRequests = 1024
	// MCP error codes (SEP-2575) that set an HTTP status (see rpcStatus).
	codeMissingClientCapabilities  = -32021
	codeUnsupportedProtocolVersion = -32022
	// stageListener names this layer in the Detail of its errors.
	stageListener = "listener"
)

// HTTPServer is an http.Handler serving MCP's streamable HTTP transport
// (mount it at the MCP endpoint, e.g. /mcp). It turns the HTTP exchanges of
// each client session into one Conn, handed to OnSession.
//
// Status codes follow the go-sdk's server: 403 Host/Origin, 415 Content-Type,
// 400 Accept, unknown revision, invalid message or header mismatch, 413 body
// too large, 404 unknown session, 405 method (with Allow), 409 a second
// standalone stream, 202 notifications and responses accepted; at 2026-07-28
// an error response may set the status (rpcStatus). Beyond the go-sdk: 429
// when a session has too many unanswered requests, 503 after Close.
type HTTPServer struct {
	// Immutable after NewHTTPServer.
	onSession      func(context.Context, Conn, SessionInfo)
	authenticate   func(*http.Request) (string, *AuthRefusal)
	paramBindings  func(string) ([]mcp.ParamBinding, bool)
	sessionless    func() bool
	holdInit       bool
	limits         jsonrpc.Limits
	sessionLimits  *SessionLimits
	admitHook      func(SessionInfo) (func(), *Busy)
	onRefuse       func(rule string)
	onRefused      OnRefusedFunc
	bodyTimeout    time.Duration
	idle           time.Duration
	openWait       time.Duration // < 0: open SSE streams at once
	holds          *delayQueue   // the held answers' OpenWait (pump); nil when openWait < 0
	eventBuffer    int
	eventBytes     int
	log            *slog.Logger
	checkHost      bool
	allowedHosts   map[string]bool // lower-cased, as configured
	allowedOrigins map[string]bool // lower-cased, without trailing '/'
	baseCtx        context.Context
	cancelBase     context.CancelFunc

	mu        sync.Mutex // guards the fields below
	closed    bool
	sessions  map[string]*httpSession // stateful sessions by id
	ephemeral map[*httpSession]bool   // stateless sessions
}

// NewHTTPServer returns a listener configured by opts. It panics if
// opts.OnSession is nil.
func NewHTTPServer(opts HTTPServerOptions) *HTTPServer {
	if opts.OnSession == nil {
		panic("transport: HTTPServerOptions.OnSession is nil")
	}
	h := &HTTPServer{
		onSession:      opts.OnSession,
		paramBindings:  opts.ParamBindings,
		sessionless:    opts.Sessionless,
		holdInit:       opts.HoldInitialize,
		limits:         opts.Limits,
		sessionLimits:  opts.Sessions,
		admitHook:      opts.Admit,
		onRefuse:       opts.OnRefuse,
		onRefused:      opts.OnRefused,
		bodyTimeout:    opts.BodyTimeout,
		idle:           opts.SessionIdleTimeout,
		openWait:       opts.OpenWait,
		eventBuffer:    opts.EventBuffer,
		log:            opts.Logger,
		checkHost:      !opts.InsecureDisableHostCheck,
		authenticate:   opts.Authenticate,
		allowedHosts:   make(map[string]bool),
		allowedOrigins: make(map[string]bool),
		sessions:       make(map[string]*httpSession),
		ephemeral:      make(map[*httpSession]bool),
	}
	if h.limits.MaxBytes <= 0 {
		h.limits.MaxBytes = jsonrpc.DefaultMaxBytes
	}
	if h.idle <= 0 {
		h.idle = DefaultSessionIdleTimeout
	}
	if h.sessionLimits == nil {
		h.sessionLimits = NewSessionLimits(0, 0)
	}
	if h.bodyTimeout <= 0 {
		h.bodyTimeout = DefaultBodyTimeout
	}
	if h.eventBuffer <= 0 {
		h.eventBuffer = DefaultEventBuffer
	}
	if h.openWait == 0 {
		h.openWait = DefaultOpenWait
	}
	if h.openWait > 0 {
		h.holds = newDelayQueue(h.openWait)
	}
	h.eventBytes = 16 * h.limits.MaxBytes
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range opts.AllowedHosts {
		h.allowedHosts[strings.ToLower(a)] = true
	}
	for _, o := range opts.AllowedOrigins {
		h.allowedOrigins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	h.baseCtx, h.cancelBase = context.WithCancel(context.Background())
	return h
}

// Close ends every session (their Conns' Read return io.EOF and their
// contexts are cancelled) and refuses new ones with 503. It does not wait
// for OnSession calls to return.
func (h *HTTPServer) Close() error {
	h.mu.Lock()
	h.closed = true
	var all []*httpSession
	for _, s := range h.sessions {
		all = append(all, s)
	}
	for s := range h.ephemeral {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.end("server closed", true)
	}
	h.cancelBase()
	return nil
}

// ServeHTTP implements http.Handler.
func (h *HTTPServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.checkHost {
		if rule, msg := h.checkRebinding(r); rule != "" {
			h.log.Warn("http: request refused", "rule", rule, "host", r.Host,
				"origin", r.Header.Get("Origin"), "remote", r.RemoteAddr)
			rpcErr := jsonrpc.Detail{Stage: stageListener, Rule: rule}.Errorf(jsonrpc.CodeInvalidRequest, msg)
			h.refusedMessage(r, http.StatusForbidden, nil, r.ContentLength, jsonrpc.ID{}, rpcErr)
			writeRPCError(w, http.StatusForbidden, jsonrpc.ID{}, rpcErr)
			return
		}
	}
	if h.authenticate != nil {
		principal, ref := h.authenticate(r)
		if ref != nil {
			h.log.Warn("http: request not authenticated", "rule", ref.Rule, "remote", r.RemoteAddr, "reason", ref.Message)
			rpcErr := jsonrpc.Detail{Stage: "auth", Rule: ref.Rule}.Errorf(jsonrpc.CodeDenied, ref.Message)
			h.refusedMessage(r, ref.Status, nil, r.ContentLength, jsonrpc.ID{}, rpcErr)
			if ref.Challenge != "" {
				w.Header().Set("WWW-Authenticate", ref.Challenge)
			}
			writeRPCError(w, ref.Status, jsonrpc.ID{}, rpcErr)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, principal))
	}
	// As the go-sdk: an unknown legacy revision is refused; newer ones are
	// left to the revision's own rules.
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && v < mcp.Rev20260728 && !mcp.Known(v) {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleProtocolVersion, "Bad Request: unsupported protocol version "+quoteClient(v)+
			" (supported: "+strings.Join(mcp.Revisions, ", ")+")")
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.servePOST(w, r)
	case http.MethodGet:
		h.serveGET(w, r)
	case http.MethodDelete:
		h.serveDELETE(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		h.refuseText(w, r, http.StatusMethodNotAllowed, nil, RuleHTTPMethod, "Method Not Allowed")
	}
}

// servePOST checks and decodes a POST, then hands its messages to the
// session they belong to, creating it if there is none.
func (h *HTTPServer) servePOST(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // the usual value, without parsing
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			h.refuseText(w, r, http.StatusUnsupportedMediaType, nil, RuleContentType, "Content-Type must be 'application/json'")
			return
		}
	}
	if jsonOK, sseOK := accepts(r.Header.Values("Accept")); !jsonOK || !sseOK {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleAccept, "Accept must contain both 'application/json' and 'text/event-stream'")
		return
	}
	if len(r.Header.Values(mcp.HeaderLastEventID)) > 0 {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleLastEventID, "Last-Event-ID is not allowed on POST")
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}

	var sess *httpSession
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid != "" {
		if sess = h.lookup(sid); sess == nil {
			h.refuseText(w, r, http.StatusNotFound, body, RuleUnknownSession, "session not found")
			return
		}
		if !h.owns(w, r, body, sess) {
			return
		}
	}
	allowBatch := sess != nil && mcp.AllowsBatch(sess.negotiated())
	msgs, _, err := jsonrpc.DecodeBatch(body, h.limits, allowBatch)
	if err != nil {
		rpcErr := asRPCError(err)
		h.log.Warn("http: invalid message refused", "error", rpcErr.Message, "session", sid, "remote", r.RemoteAddr)
		id := jsonrpc.PeekID(body)
		h.refusedMessage(r, http.StatusBadRequest, body, -1, id, rpcErr)
		writeRPCError(w, http.StatusBadRequest, id, rpcErr)
		return
	}
	if rpcErr := checkMessageHeaders(r.Header, msgs, h.paramBindings); rpcErr != nil {
		h.log.Warn("http: header mismatch", "error", rpcErr.Message, "session", sid, "remote", r.RemoteAddr)
		h.refusedMessage(r, http.StatusBadRequest, body, -1, msgs[0].ID, rpcErr)
		writeRPCError(w, http.StatusBadRequest, msgs[0].ID, rpcErr)
		return
	}
	hdr := messageHeader(r.Header)
	for i, m := range msgs {
		if i == 0 {
			m.Header = hdr // made for this POST: the first message can own it
		} else {
			m.Header = cloneHeader(hdr)
		}
	}

	created := false
	if sess == nil {
		// initialize starts a session, except at a stateless revision,
		// which has no initialize (the upstream answers it "method not found").
		initialize := len(msgs) == 1 && msgs[0].IsCall() && msgs[0].Method == mcp.MethodInitialize
		stateless := !initialize || mcp.Stateless(r.Header.Get(mcp.HeaderProtocolVersion))
		var busy *Busy
		if sess, busy = h.startSession(r, stateless, requestedVersion(r, msgs)); busy != nil {
			var id jsonrpc.ID
			if len(msgs) == 1 && msgs[0].IsCall() {
				id = msgs[0].ID
			}
			h.refuseBusy(w, r, body, id, busy)
			return
		}
		if sess == nil {
			h.refuseText(w, r, http.StatusServiceUnavailable, body, RuleClosed, "server closed")
			return
		}
		created = true
	}
	if !sess.begin() {
		h.refuseText(w, r, http.StatusNotFound, body, RuleUnknownSession, "session not found")
		return
	}
	defer sess.finish()
	sess.servePOST(w, r, body, msgs, created)
}

// serveGET opens the standalone stream of a session, or resumes a stream
// after the event named by Last-Event-ID.
func (h *HTTPServer) serveGET(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && mcp.Stateless(v) {
		w.Header().Set("Allow", http.MethodPost)
		h.refuseText(w, r, http.StatusMethodNotAllowed, nil, RuleHTTPMethod, "Method Not Allowed: stateless revision "+v+" has no GET stream")
		return
	}
	if _, sseOK := accepts(r.Header.Values("Accept")); !sseOK {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleAccept, "Accept must contain 'text/event-stream' for GET requests")
		return
	}
	sess, ok := h.sessionOf(w, r)
	if !ok {
		return
	}
	defer sess.finish()
	sess.serveGET(w, r)
}

// serveDELETE ends a session at the client's request.
func (h *HTTPServer) serveDELETE(w http.ResponseWriter, r *http.Request) {
	if v := r.Header.Get(mcp.HeaderProtocolVersion); v != "" && mcp.Stateless(v) {
		w.Header().Set("Allow", http.MethodPost)
		h.refuseText(w, r, http.StatusMethodNotAllowed, nil, RuleHTTPMethod, "Method Not Allowed: stateless revision "+v+" has no sessions")
		return
	}
	sess, ok := h.sessionOf(w, r)
	if !ok {
		return
	}
	sess.finish()
	sess.end("deleted by client", true)
	w.WriteHeader(http.StatusNoContent)
}

// sessionOf finds the session named by the request's Mcp-Session-Id and
// marks a request in flight on it (the caller must call finish). It answers
// 400 when the header is missing and 404 when the session is unknown.
func (h *HTTPServer) sessionOf(w http.ResponseWriter, r *http.Request) (*httpSession, bool) {
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid == "" && h.sessionless != nil && h.sessionless() {
		w.Header().Set("Allow", http.MethodPost)
		h.refuseText(w, r, http.StatusMethodNotAllowed, nil, RuleHTTPMethod, "Method Not Allowed: the server keeps no sessions")
		return nil, false
	}
	if sid == "" {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleSessionRequired, "Bad Request: "+r.Method+" requires an Mcp-Session-Id header")
		return nil, false
	}
	sess := h.lookup(sid)
	if sess != nil && !h.owns(w, r, nil, sess) {
		return nil, false
	}
	if sess == nil || !sess.begin() {
		h.refuseText(w, r, http.StatusNotFound, nil, RuleUnknownSession, "session not found")
		return nil, false
	}
	return sess, true
}

// principalKey carries the authenticated principal in a request's context.
type principalKey struct{}

// owns reports whether r comes from the principal that opened sess, and
// answers 403 when not: a session id alone does not make a client. body is
// the POST's body, nil when there is none.
func (h *HTTPServer) owns(w http.ResponseWriter, r *http.Request, body []byte, sess *httpSession) bool {
	if h.authenticate == nil {
		return true
	}
	if principal, _ := r.Context().Value(principalKey{}).(string); principal == sess.principal {
		return true
	}
	h.log.Warn("http: session used by another principal", "session", sess.id, "remote", r.RemoteAddr)
	rpcErr := jsonrpc.Detail{Stage: "auth", Rule: RuleSessionOwner}.Errorf(jsonrpc.CodeDenied, "this session belongs to another principal")
	h.refusedMessage(r, http.StatusForbidden, body, r.ContentLength, jsonrpc.ID{}, rpcErr)
	writeRPCError(w, http.StatusForbidden, jsonrpc.ID{}, rpcErr)
	return false
}

// readBody reads the request body within the size limit and the body
// timeout, answering 413, 408 (with a JSON-RPC error) or 400 itself when it
// cannot.
func (h *HTTPServer) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	// The read deadline bounds the body only: it is lifted once the body is
	// in (net/http does so too on HTTP/1.1), so that the answer's stream
	// may last. After a failure it stays, so that net/http does not wait
	// for the rest of a body it will not use.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(h.bodyTimeout)) == nil
	body, ok := h.readBodyWithin(w, r)
	if ok && deadline {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, ok
}

func (h *HTTPServer) readBodyWithin(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := int64(h.limits.MaxBytes)
	tooLarge := func() ([]byte, bool) {
		rpcErr := jsonrpc.Detail{Stage: stageListener, Rule: "size"}.Errorf(jsonrpc.CodeInvalidRequest,
			"request body larger than "+strconv.FormatInt(limit, 10)+" bytes")
		// The body is not read: its declared length is all there is to record.
		h.refusedMessage(r, http.StatusRequestEntityTooLarge, nil, r.ContentLength, jsonrpc.ID{}, rpcErr)
		writeRPCError(w, http.StatusRequestEntityTooLarge, jsonrpc.ID{}, rpcErr)
		return nil, false
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	if n := r.ContentLength; n >= 0 {
		// The usual case: read exactly the declared length (net/http ends
		// the body there), in one allocation.
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			h.bodyFailed(w, r, err)
			return nil, false
		}
		// Read to its end: closing it spares net/http an attempt to
		// discard the rest after the handler.
		r.Body.Close()
		return body, true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge()
		}
		h.bodyFailed(w, r, err)
		return nil, false
	}
	return body, true
}

// refusedMessage tells OnRefused of a request refused before its messages
// reached a session. body is the raw body, or nil when it was not read;
// length is then its declared length. The session id goes in as such only
// if the listener holds that session (it issued it); any other is cut and
// sanitized (SanitizeSessionID).
func (h *HTTPServer) refusedMessage(r *http.Request, status int, body []byte, length int64, id jsonrpc.ID, e *jsonrpc.Error) {
	if h.onRefused == nil {
		return
	}
	principal, _ := r.Context().Value(principalKey{}).(string)
	ref := Refusal{
		Transport: "http", Principal: principal,
		RemoteAddr: r.RemoteAddr, Status: status, Err: e, ID: id, Length: length,
	}
	if sid := r.Header.Get(mcp.HeaderSessionID); sid != "" {
		if h.lookup(sid) != nil {
			ref.Session = sid
		} else {
			ref.ClaimedSession = SanitizeSessionID(sid)
		}
	}
	if body != nil {
		ref.Length, ref.SHA256 = rawDigest(body)
	}
	h.onRefused(r.Context(), ref)
}

// refuseText answers a request the listener refuses as the go-sdk's server
// does, with status and msg as plain text, once OnRefused has been told of
// it (stage "listener", rule; code -32600 in the record). body is the
// POST's body if it was read, else nil.
func (h *HTTPServer) refuseText(w http.ResponseWriter, r *http.Request, status int, body []byte, rule, msg string) {
	if h.onRefused != nil {
		h.refusedMessage(r, status, body, r.ContentLength, jsonrpc.ID{},
			jsonrpc.Detail{Stage: stageListener, Rule: rule}.Errorf(jsonrpc.CodeInvalidRequest, msg))
	}
	http.Error(w, msg, status)
}

// bodyFailed answers a POST whose body could not be read: 408 and the end of
// the connection when it did not arrive within the body timeout, else 400.
func (h *HTTPServer) bodyFailed(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		h.refuseText(w, r, http.StatusBadRequest, nil, RuleBody, "failed to read body")
		return
	}
	h.log.Warn("http: request body too slow", "rule", RuleBodyTimeout, "remote", r.RemoteAddr, "timeout", h.bodyTimeout)
	h.refused(RuleBodyTimeout)
	rpcErr := jsonrpc.Detail{Stage: stageListener, Rule: RuleBodyTimeout}.Errorf(jsonrpc.CodeInvalidRequest,
		"request body not received within "+h.bodyTimeout.String())
	// Not read whole: the declared length is what there is to record.
	h.refusedMessage(r, http.StatusRequestTimeout, nil, r.ContentLength, jsonrpc.ID{}, rpcErr)
	w.Header().Set("Connection", "close")
	writeRPCError(w, http.StatusRequestTimeout, jsonrpc.ID{}, rpcErr)
}

// lookup returns the live stateful session with id sid, or nil.
func (h *HTTPServer) lookup(sid string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[sid]
}

// startSession registers a new session and starts OnSession for it, unless a
// limit refuses it (Busy). It returns nil, nil once the server is closed.
func (h *HTTPServer) startSession(r *http.Request, stateless bool, version string) (*httpSession, *Busy) {
	id := ""
	if !stateless {
		id = randomHex(16)
	}
	principal, _ := r.Context().Value(principalKey{}).(string)
	info := SessionInfo{
		Principal:       principal,
		ID:              id,
		Stateless:       stateless,
		RemoteAddr:      r.RemoteAddr,
		Header:          r.Header.Clone(),
		ProtocolVersion: version,
	}
	release, busy := h.admit(r, info)
	if busy != nil {
		return nil, busy
	}
	s := newHTTPSession(h, id, stateless, version)
	s.principal = principal // before the session is published
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.cancel()
		release()
		return nil, nil
	}
	if stateless {
		h.ephemeral[s] = true
	} else {
		h.sessions[id] = s
	}
	h.mu.Unlock()

	if !stateless {
		h.log.Info("http: session started", "session", id, "remote", r.RemoteAddr, "version", version)
	}
	go func() {
		defer release() // after Close: the upstream is let go by then
		defer s.Close()
		h.onSession(s.ctx, s, info)
	}()
	return s, nil
}

// forget removes s from the server's tables.
func (h *HTTPServer) forget(s *httpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.stateless {
		delete(h.ephemeral, s)
	} else if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// requestedVersion is the revision a new session's first POST asks for.
func requestedVersion(r *http.Request, msgs []*jsonrpc.Message) string {
	if m := msgs[0]; len(msgs) == 1 && m.Method == mcp.MethodInitialize {
		if raw, ok := jsonrpc.Lookup(m.Params, "protocolVersion"); ok {
			if v, ok := jsonrpc.String(raw); ok {
				return v
			}
		}
	}
	return r.Header.Get(mcp.HeaderProtocolVersion)
}

// accepts reports whether the Accept header values admit JSON and SSE
// responses, matching media ranges as the go-sdk does.
func accepts(values []string) (jsonOK, sseOK bool) {
	for _, v := range values {
		for token := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(token, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

// asRPCError returns err as the *jsonrpc.Error to put on the wire.
func asRPCError(err error) *jsonrpc.Error {
	if e, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return e
	}
	return jsonrpc.Detail{Stage: "wire", Rule: "decode"}.Errorf(jsonrpc.CodeParseError, err.Error())
}

// writeRPCError answers with status and a JSON-RPC error response body.
func writeRPCError(w http.ResponseWriter, status int, id jsonrpc.ID, e *jsonrpc.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.EncodeErrorResponse(id, e))
}

// rpcStatus is the HTTP status with which, from 2026-07-28 on (SEP-2575), a
// POST answers a request whose response is this error, or 0 to stream it as
// usual: 404 for "method not found", 400 for invalid params, an unsupported
// revision or missing client capabilities.
func rpcStatus(e *jsonrpc.Error) int {
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, codeUnsupportedProtocolVersion, codeMissingClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// randomHex returns n (at most 32) random bytes from crypto/rand,
// hex-encoded.
func randomHex(n int) string {
	var b [32]byte
	var x [64]byte
	_, _ = rand.Read(b[:n]) // never fails (crypto/rand, Go 1.24+)
	hex.Encode(x[:], b[:n])
	return string(x[:2*n])
}
