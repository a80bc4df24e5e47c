package transport

// The streamable-HTTP client: how warden talks to an HTTP upstream MCP server.
//
//	Write(msg) ──POST msg.Raw──────────────► upstream
//	   │  a request: in its own goroutine, once the POST before it is written;
//	   │  anything else: at once, returning when the response headers arrive
//	   ▼
//	202 ───────────── nothing to deliver
//	200 json ───────► readJSON ─────┐
//	200 sse ────────► followPOST ───┤   (resumes with GET + Last-Event-ID)
//	4xx/5xx, error ─► synthesized ──┤
//	                  error         ├──► in (bounded) ──► Read
//	standalone GET ─► runStandalone ┘   (opened after notifications/initialized)
//	                                └──► or, after Push, the pushed function, one call at a time
//
// Every message from the upstream passes jsonrpc.Decode before it is queued;
// one that does not is logged and dropped. A message that arrived on a
// request's POST stream carries that request's id in Related; the standalone
// stream's messages carry the zero ID. When a request's POST cannot produce a
// response (connection error, HTTP error status, a stream that ended and
// could not be resumed), a synthesized error response for that id is queued
// instead, so a caller waiting on the id always gets an answer; an HTTP error
// whose body is a valid JSON-RPC error response for the request (as
// 2026-07-28 sends for some errors) is relayed instead. The exception is a
// 404 to the session id: the upstream lost the session, and the conn ends
// (Read returns ErrSessionLost) rather than answer each request in vain.
//
// The goroutines that feed the queue block when it is full: a slow reader
// slows the upstream streams down rather than growing memory. With Push they
// call the pushed function themselves instead, one at a time, which spares
// a goroutine hand-off per message; a slow function slows them down alike.
//
// Keep-alive matters on this path: a POST costs one write (the body goes
// out with the headers), and a POST stream is read to its end after its
// response (drainStream), since net/http drops a connection whose body was
// closed early; otherwise the next call would dial a new connection.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// HTTPClientOptions configures an HTTPClientConn. The zero value of every
// field other than URL is a safe default.
type HTTPClientOptions struct {
	// URL is the upstream's MCP endpoint.
	URL string
	// Client sends the requests. Nil means a client of warden's own
	// (UpstreamHTTPClient): it bounds connecting, the TLS handshake and the
	// wait for response headers (5 minutes; an upstream that answers in
	// application/json sends its headers only with the result), sets no
	// overall timeout (streams last as long as they need), honours the proxy
	// environment variables as net/http does, and does not follow
	// redirects, so that the static Header is never sent to another URL. A
	// client made by UpstreamHTTPClient can be shared by the conns of one
	// upstream; any other caller-supplied Client is used as it is, redirects
	// included.
	Client *http.Client
	// Header holds static headers configured for this upstream, such as an
	// API key. They go on every request. Entries named Mcp-*, Last-Event-Id,
	// Content-Type or Accept are ignored: the transport sets those. The MCP
	// client's own Authorization header never reaches the upstream; only
	// this configured Header does.
	Header http.Header
	// Limits bound every message decoded from the upstream. An SSE event's
	// data and an application/json body may be at most Limits.MaxBytes long.
	Limits jsonrpc.Limits
	// Logger receives dropped messages and stream failures. Nil discards.
	Logger *slog.Logger
	// Name names the upstream in logs and in synthesized error messages.
	// Empty means the URL's host.
	Name string
	// Credential, if set, is called for every request (POST, GET, DELETE)
	// and returns a header that goes on it, replacing a Header entry of the
	// same name: a credential that belongs to this conn's session and may be
	// renewed while it lasts. An error fails the request; it never goes
	// without the credential.
	Credential func() (name, value string, err error)
}

// Bounds on the transport's own behaviour.
const (
	httpQueueLen           = 64               // messages waiting for Read
	httpHeaderTimeout      = 5 * time.Minute  // default client: wait for response headers
	httpDialTimeout        = 10 * time.Second // default client: TCP connect
	httpDeleteTimeout      = 2 * time.Second  // Close: the session DELETE
	httpMaxResumes         = 3                // POST stream: reconnects without progress
	httpMaxStandaloneFail  = 5                // standalone stream: failed attempts in a row
	httpRetryInitial       = 250 * time.Millisecond
	httpRetryMax           = 10 * time.Second       // cap on backoff and on the server's retry:
	httpStandaloneHealthy  = 10 * time.Second       // a standalone stream open this long was fine
	httpStandaloneOpenWait = time.Second            // how long notifications/initialized waits for the GET's answer (startStandalone)
	httpMaxIdleConns       = 100                    // UpstreamHTTPClient: idle keep-alive connections
	httpDrainWait          = 100 * time.Millisecond // a POST stream's end after its response (drainStream)
	httpDrainBytes         = 64 << 10
)

var _ Pusher = (*HTTPClientConn)(nil)

// HTTPClientConn is a Conn to an upstream MCP server over the streamable HTTP
// transport (revisions 2025-03-26 to 2025-11-25 with sessions, 2026-07-28
// without). Make one with NewHTTPClient.
//
// Read returns ErrClosed after Close and never io.EOF: an HTTP upstream has
// no stream whose clean end would mean "no more messages".
type HTTPClientConn struct {
	// Immutable after NewHTTPClient.
	url       string
	target    *url.URL // url, parsed; nil if it does not parse. Shared by every request, never modified
	client    *http.Client
	ownClient bool            // client was made here; Close closes its idle connections
	rt        *http.Transport // the Transport of an UpstreamHTTPClient, which requests go to directly (see do)
	header    http.Header
	cred      func() (name, value string, err error) // HTTPClientOptions.Credential
	lim       jsonrpc.Limits
	maxBytes  int
	log       *slog.Logger
	name      string
	in        chan *jsonrpc.Message // bounded queue feeding Read
	done      chan struct{}         // closed by Close
	ctx       context.Context       // cancelled by Close; parent of every request
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // goroutines that feed in; Add only under mu while !closed
	pushing   chan struct{}  // one-slot semaphore: one call of push at a time
	lost      chan struct{}  // closed by lose: the upstream forgot our session
	loseOnce  sync.Once

	modeMu sync.Mutex // guards mode and push
	mode   deliveryMode
	push   func(*jsonrpc.Message) // set by Push

	mu         sync.Mutex
	closed     bool          // Close has begun; no new goroutines
	sessionID  string        // from the initialize response's Mcp-Session-Id
	version    string        // protocolVersion of the initialize result
	sessionHdr []string      // {sessionID}, shared by the requests that carry it
	versionHdr []string      // {version}, likewise
	stateful   bool          // an initialize request was answered with 2xx
	expired    bool          // the upstream answered 404 to our session id (lost is closed)
	standalone bool          // the standalone GET stream has been started
	lastCall   chan struct{} // closed once the last request sent in the background (writeCall) is written
}

// NewHTTPClient returns a Conn that sends each message written to it as an
// HTTP POST to opts.URL. It makes no request until the first Write.
func NewHTTPClient(opts HTTPClientOptions) *HTTPClientConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &HTTPClientConn{
		url:      opts.URL,
		client:   opts.Client,
		header:   staticHeader(opts.Header),
		cred:     opts.Credential,
		lim:      opts.Limits,
		maxBytes: opts.Limits.MaxBytes,
		log:      opts.Logger,
		name:     opts.Name,
		in:       make(chan *jsonrpc.Message, httpQueueLen),
		pushing:  make(chan struct{}, 1),
		done:     make(chan struct{}),
		lost:     make(chan struct{}),
		ctx:      ctx,
		cancel:   cancel,
	}
	if c.client == nil {
		c.client, c.ownClient = UpstreamHTTPClient(), true
	}
	if t, ok := c.client.Transport.(upstreamTransport); ok && c.client.Jar == nil && c.client.Timeout == 0 {
		c.rt = t.Transport
	}
	if u, err := url.Parse(opts.URL); err == nil {
		u.Host = strings.TrimSuffix(u.Host, ":") // as http.NewRequest does
		c.target = u
	}
	if c.maxBytes <= 0 {
		c.maxBytes = jsonrpc.DefaultMaxBytes
	}
	if c.name == "" {
		c.name = "http"
		if u, err := url.Parse(opts.URL); err == nil && u.Host != "" {
			c.name = u.Host // never the whole URL: it may carry a key
		}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("upstream", c.name)
	return c
}

// UpstreamHTTPClient returns the HTTP client warden uses for upstreams: it
// never follows redirects (a redirect would carry the upstream's configured
// headers, such as an API key, to another server; Go strips only
// Authorization and cookies), bounds dialing and the wait for response
// headers, and sets no overall timeout, since SSE streams are long. Share
// one per upstream so that its sessions share a keep-alive pool: it keeps up
// to 100 idle connections to its host (net/http's default of 2 would make
// concurrent sessions dial and close a connection for many of their calls).
//
// Use it as it is: an HTTPClientConn sends its requests to the client's
// Transport directly, relying on the policy above (no redirects, no cookie
// jar, no overall timeout), without the copy of every request's headers that
// http.Client makes.
func UpstreamHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: httpDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = httpHeaderTimeout
	t.MaxIdleConns = httpMaxIdleConns
	t.MaxIdleConnsPerHost = httpMaxIdleConns
	return &http.Client{
		Transport: upstreamTransport{t},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// upstreamTransport marks the Transport of a client made by
// UpstreamHTTPClient.
type upstreamTransport struct{ *http.Transport }

// staticHeader copies h without the headers the transport owns.
func staticHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		k = http.CanonicalHeaderKey(k)
		switch {
		case strings.HasPrefix(k, "Mcp-"), k == mcp.HeaderLastEventID,
			k == "Content-Type", k == "Accept":
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

// forwardedHeader reports whether a header that travels with a message
// (Message.Header, from the MCP client) goes on to the upstream. Only the MCP
// request-description headers do; in particular the client's Mcp-Session-Id
// (its session with warden, not ours with the upstream) and Authorization
// never do.
func forwardedHeader(k string) bool {
	switch k {
	case mcp.HeaderProtocolVersion, mcp.HeaderMethod, mcp.HeaderName:
		return true
	}
	return strings.HasPrefix(k, mcp.HeaderParamPrefix)
}

// ErrSessionLost is returned by an HTTPClientConn's Read and Write once the
// upstream has answered HTTP 404 to the session id it gave (it restarted, or
// expired the session): the session is over, and with it the conn. The
// client must start a new session; see SessionLoser.
var ErrSessionLost = errors.New("transport: the upstream ended the session (HTTP 404 for its session id)")

// A SessionLoser is a client-side Conn that can tell its client, in its
// transport's own terms, that the session is gone and a new one must be
// started: the HTTP listener answers the requests of the session 404 Not
// Found from then on, as the streamable HTTP transport prescribes for a
// session the server no longer has. The relay calls LoseSession when the
// upstream lost the session (ErrSessionLost), before it answers the pending
// requests and closes the conn.
type SessionLoser interface {
	LoseSession()
}

// An Upstream Conn that is a Sessionless can tell, once its initialize
// request has been answered, whether the upstream keeps a session: a
// streamable-HTTP server that answers initialize without an Mcp-Session-Id
// keeps none, and takes each later POST on its own.
type Sessionless interface {
	Sessionless() bool
}

// A SessionlessView is a client-side Conn that can show its client the
// upstream's own view of the session when the upstream keeps none: the HTTP
// listener then answers initialize without an Mcp-Session-Id, so that the
// client sees a stateless server as stateless (no session id, no standalone
// stream, nothing to DELETE). The relay calls ShowSessionless before it
// writes the initialize response; it has no effect once that response's
// stream has opened.
type SessionlessView interface {
	ShowSessionless()
}

var _ Sessionless = (*HTTPClientConn)(nil)

// Sessionless implements Sessionless: the upstream answered initialize with
// 2xx and no Mcp-Session-Id.
func (c *HTTPClientConn) Sessionless() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stateful && c.sessionID == ""
}

// Read returns the next message from the upstream, in the order the stream
// goroutines queued it. It returns ErrClosed after Close, even if messages
// were still queued, ErrSessionLost once the upstream lost the session and
// the messages queued before are taken, and ctx.Err() when ctx ends first.
// After Push it returns only these errors. One goroutine at a time may call
// Read.
func (c *HTTPClientConn) Read(ctx context.Context) (*jsonrpc.Message, error) {
	select {
	case <-c.done:
		return nil, ErrClosed
	default:
	}
	if c.pushTo() != nil { // the messages go to push: wait for the end
		select {
		case <-c.done:
			return nil, ErrClosed
		case <-c.lost:
			return nil, ErrSessionLost
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select { // what was queued comes before the session's loss
	case m := <-c.in:
		return m, nil
	default:
	}
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, ErrClosed
	case <-c.lost:
		return nil, ErrSessionLost
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write POSTs msg.Raw to the upstream. Messages reach the upstream in the
// order they were written: each POST is sent once the one before it has been
// written to its connection. Write may be called from several goroutines at
// once.
//
// A request other than initialize is sent in the background: Write returns
// at once, and the response (its body read in the background too) comes
// from Read. That keeps the caller free to send other messages while a long
// call runs (a ping, or the cancellation of that very call); a server may
// hold its response headers until the call ends. Any other message (initialize,
// a notification, a response) is sent before Write returns, which waits for
// the response headers (bounded by ctx) and reports their failure.
//
// For a request, Write returning nil means exactly one response for its id
// will be read from Read (unless the conn is closed first, or Read reports
// ErrSessionLost first): the upstream's, or, when the POST fails
// (connection error, HTTP error status, a stream that ended without the
// response), a synthesized error response. For a notification or a
// response, Write returns the failure. Write returns ErrClosed after Close,
// ErrSessionLost once the upstream lost the session, and ctx.Err() if ctx
// ended before the headers came; when Write returns an error, nothing is
// delivered for msg.
func (c *HTTPClientConn) Write(ctx context.Context, msg *jsonrpc.Message) error {
	if c.isClosed() {
		return ErrClosed
	}
	select {
	case <-c.lost:
		return ErrSessionLost
	default:
	}
	init := msg.Kind == jsonrpc.KindRequest && msg.Method == mcp.MethodInitialize
	if msg.IsCall() && !init {
		return c.writeCall(msg)
	}
	st := &streamState{init: init}
	if msg.IsCall() {
		st.related = msg.ID
	}
	if err := c.afterLastCall(ctx); err != nil {
		return err
	}
	// The request lives as long as its stream, not as long as ctx; ctx may
	// only abandon the wait for headers.
	reqCtx, cancel := context.WithCancel(c.ctx)
	req, err := c.newPOST(reqCtx, msg, st)
	if err != nil {
		cancel()
		return fmt.Errorf("upstream %s: %w", c.name, err)
	}
	stop := context.AfterFunc(ctx, cancel)
	resp, err := c.do(req)
	callerGone := !stop()
	if err == nil && callerGone {
		resp.Body.Close()
	}
	if err != nil || callerGone {
		cancel()
		switch {
		case c.isClosed():
			return ErrClosed
		case callerGone:
			return ctx.Err()
		case msg.IsCall():
			c.log.Warn("upstream request failed", "method", msg.Method, "id", msg.ID, "error", errText(err))
			c.spawn(func() { c.deliverError(st, "connection", "unreachable: "+netReason(err)) })
			return nil
		}
		return fmt.Errorf("upstream %s: %s: %s", c.name, describe(msg), errText(err))
	}
	if st.init && resp.StatusCode/100 == 2 {
		c.mu.Lock()
		c.sessionID = resp.Header.Get(mcp.HeaderSessionID)
		c.sessionHdr = []string{c.sessionID}
		c.stateful, c.expired = true, false
		c.mu.Unlock()
	}
	if !msg.IsCall() {
		defer cancel()
		return c.finishOneWay(msg, resp, st)
	}
	if !c.spawn(func() { defer cancel(); c.consume(resp, st) }) {
		resp.Body.Close()
		cancel()
		return ErrClosed
	}
	return nil
}

// writeCall sends a request other than initialize in the background, after
// the request sent before it has been written (see Write). The POST and its
// stream run in their own goroutine, which delivers the response or an error.
func (c *HTTPClientConn) writeCall(msg *jsonrpc.Message) error {
	p := &postCall{wrote: make(chan struct{}), st: streamState{related: msg.ID}}
	st := &p.st
	p.trace.WroteRequest = p.wroteRequest
	// The request lives as long as its stream, until Close.
	req, err := c.newPOST(httptrace.WithClientTrace(c.ctx, &p.trace), msg, st)
	if err != nil {
		return fmt.Errorf("upstream %s: %w", c.name, err)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	prev := c.lastCall
	c.lastCall = p.wrote
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer p.markWritten()
		if prev != nil {
			select {
			case <-prev:
			case <-c.done:
				return
			}
		}
		resp, err := c.do(req)
		if err != nil {
			if c.isClosed() {
				return
			}
			c.log.Warn("upstream request failed", "method", msg.Method, "id", msg.ID, "error", errText(err))
			c.deliverError(st, "connection", "unreachable: "+netReason(err))
			return
		}
		c.consume(resp, st)
	}()
	return nil
}

// afterLastCall waits until the last request sent in the background has
// been written, so that a message sent now reaches the upstream after it.
func (c *HTTPClientConn) afterLastCall(ctx context.Context) error {
	c.mu.Lock()
	prev := c.lastCall
	c.mu.Unlock()
	if prev == nil {
		return nil
	}
	select {
	case <-prev:
		return nil
	case <-c.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// postCall is a request writeCall sends in the background.
type postCall struct {
	wrote  chan struct{} // closed once the request is written, or its POST is over
	closed atomic.Bool   // wrote is closed
	trace  httptrace.ClientTrace
	st     streamState // its stream, owned by the goroutine that sends it
}

func (p *postCall) wroteRequest(httptrace.WroteRequestInfo) { p.markWritten() }

func (p *postCall) markWritten() {
	if p.closed.CompareAndSwap(false, true) {
		close(p.wrote)
	}
}

// Header values set on every POST; see newPOST.
var (
	postContentType = []string{"application/json"}
	postAccept      = []string{"application/json, text/event-stream"}
)

// newPOST builds the POST for msg, with ctx, and records in st what it was
// sent with.
//
// It allocates little, since it runs for every message: the request's URL is
// the one parsed by NewHTTPClient, and the header values are shared with the
// static Header, msg.Header and the conn's own, never copied. That is safe
// because nothing changes a request's URL or a header value in place
// (net/http does not; Set and Add replace or grow the slice).
func (c *HTTPClientConn) newPOST(ctx context.Context, msg *jsonrpc.Message, st *streamState) (*http.Request, error) {
	if c.target == nil {
		return nil, errors.New("invalid upstream URL") // never the URL itself: it may carry a key
	}
	h := make(http.Header, len(c.header)+len(msg.Header)+4)
	for k, v := range c.header {
		h[k] = v
	}
	h["Content-Type"] = postContentType
	h["Accept"] = postAccept
	for k, v := range msg.Header {
		if k = http.CanonicalHeaderKey(k); forwardedHeader(k) {
			h[k] = v
		}
	}
	// initialize starts a new session: it carries no id or version of an
	// earlier one.
	if !st.init {
		c.mu.Lock()
		st.sessionID = c.sessionID
		if st.sessionID != "" {
			h[mcp.HeaderSessionID] = c.sessionHdr
		}
		if h.Get(mcp.HeaderProtocolVersion) == "" && c.version != "" {
			h[mcp.HeaderProtocolVersion] = c.versionHdr
		}
		c.mu.Unlock()
	}
	if msg.Method != "" {
		deriveHeaders(h, msg)
	}
	st.version = h.Get(mcp.HeaderProtocolVersion)
	raw := msg.Raw
	req := &http.Request{
		Method:        http.MethodPost,
		URL:           c.target,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          newBody(raw),
		GetBody:       func() (io.ReadCloser, error) { return newBody(raw), nil },
		ContentLength: int64(len(raw)),
		Host:          c.target.Host,
	}
	return req.WithContext(ctx), nil
}

// newBody is a request body over a message's bytes. It must be an
// io.NopCloser of a *bytes.Reader: net/http knows that body is in memory and
// writes it with the headers, in one write, where for a body of another type
// it flushes the headers first (two writes).
func newBody(raw []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(raw)) }

// do sends req. With a client made by UpstreamHTTPClient the request goes to
// its Transport directly: that client follows no redirects and has no cookie
// jar or overall timeout, so http.Client would only add a copy of the
// headers. Any other Client is used as it is.
func (c *HTTPClientConn) do(req *http.Request) (*http.Response, error) {
	if c.cred != nil {
		name, value, err := c.cred()
		if err != nil {
			return nil, fmt.Errorf("session credential: %w", err)
		}
		req.Header[http.CanonicalHeaderKey(name)] = []string{value} // req.Header is the request's own map
	}
	if c.rt != nil {
		return c.rt.RoundTrip(req)
	}
	return c.client.Do(req)
}

// deriveHeaders fills in, from the validated body, the request-description
// headers that neither msg.Header nor the session supplied (an MCP client on
// stdio sends none): MCP-Protocol-Version from the per-request _meta and, on
// the stateless revisions that require them, Mcp-Method and Mcp-Name. A header
// already set is never replaced. Mcp-Param-* headers are not derived: that
// needs the tool's input schema.
func deriveHeaders(h http.Header, msg *jsonrpc.Message) {
	if h.Get(mcp.HeaderProtocolVersion) == "" {
		if v := lookupString(msg.Params, "_meta", mcp.MetaProtocolVersion); v != "" {
			h.Set(mcp.HeaderProtocolVersion, v)
		}
	}
	if !mcp.Stateless(h.Get(mcp.HeaderProtocolVersion)) {
		return
	}
	if h.Get(mcp.HeaderMethod) == "" {
		h.Set(mcp.HeaderMethod, msg.Method)
	}
	if h.Get(mcp.HeaderName) != "" {
		return
	}
	var name string
	switch msg.Method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		name = lookupString(msg.Params, "name")
	case mcp.MethodResourcesRead:
		name = lookupString(msg.Params, "uri")
	}
	if name != "" {
		h.Set(mcp.HeaderName, name)
	}
}

// lookupString returns the string at path in value, or "".
func lookupString(value []byte, path ...string) string {
	if value == nil {
		return ""
	}
	raw, ok := jsonrpc.Lookup(value, path...)
	if !ok {
		return ""
	}
	s, _ := jsonrpc.String(raw)
	return s
}

// finishOneWay handles the response to a POST that expects no answer (a
// notification or a response): 2xx is success, anything else an error.
func (c *HTTPClientConn) finishOneWay(msg *jsonrpc.Message, resp *http.Response, st *streamState) error {
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		if c.sessionGone(resp, st) {
			return ErrSessionLost
		}
		text := ""
		ct := mediaType(resp.Header.Get("Content-Type"))
		if data, ok := c.readErrorBody(resp, ct); ok {
			text = c.upstreamText(data, ct)
		}
		if text != "" {
			text = ": " + text
		}
		return fmt.Errorf("upstream %s: %s: HTTP %s%s", c.name, describe(msg), resp.Status, text)
	}
	// MCP answers a notification or a response with 202 and no body; any
	// body there carries nothing for anyone, so it is closed unread. An
	// upstream that answered with a stream it never ends would otherwise
	// hold this Write, and every message of the session behind it, forever.
	resp.Body.Close()
	if msg.Method == mcp.NotificationInitialized {
		c.startStandalone()
	}
	return nil
}

// consume reads the response to a request's POST and queues what it carries.
func (c *HTTPClientConn) consume(resp *http.Response, st *streamState) {
	switch ct := mediaType(resp.Header.Get("Content-Type")); {
	case resp.StatusCode/100 != 2:
		c.consumeFailure(resp, st)
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		resp.Body.Close()
		c.deliverStatus(st, resp.StatusCode, "", "answered a request with HTTP "+resp.Status+" and no response")
	case ct == "application/json":
		c.readJSON(resp, st)
	case ct == "text/event-stream":
		c.followPOST(resp, st)
	default:
		resp.Body.Close()
		c.deliverStatus(st, resp.StatusCode, "", fmt.Sprintf("answered HTTP %s with unexpected Content-Type %q", resp.Status, ct))
	}
}

// consumeFailure handles an HTTP error status for a request. An upstream that
// answers with a JSON-RPC error response for the request in the body (as
// revision 2026-07-28 requires for some errors) has that response relayed.
// A 404 to our session id ends the conn (lose): the session is gone.
// Otherwise a synthesized error is queued that carries the status and the
// upstream's own words: the message of a JSON-RPC error in the body (one
// with another id, or none, as SDKs send for a refused request), else the
// body's text, bounded and cleaned (upstreamText).
func (c *HTTPClientConn) consumeFailure(resp *http.Response, st *streamState) {
	defer resp.Body.Close()
	if c.sessionGone(resp, st) {
		return
	}
	ct := mediaType(resp.Header.Get("Content-Type"))
	data, ok := c.readErrorBody(resp, ct)
	if ok && ct == "application/json" {
		if m, err := jsonrpc.Decode(data, c.lim); err == nil && m.Kind == jsonrpc.KindResponse && m.ID == st.related && m.Error != nil {
			c.deliver(m, st.related)
			return
		}
	}
	text := ""
	if ok {
		text = c.upstreamText(data, ct)
	}
	c.log.Warn("upstream refused request", "id", st.related, "status", resp.StatusCode, "upstream_message", text)
	msg := "answered HTTP " + resp.Status
	if text != "" {
		msg += ": " + text
	}
	c.deliverStatus(st, resp.StatusCode, text, msg)
}

// sessionGone reports whether resp is the upstream saying that the session
// id the request carried no longer exists; if it is the conn's current
// session, the conn is over (lose).
func (c *HTTPClientConn) sessionGone(resp *http.Response, st *streamState) bool {
	if resp.StatusCode != http.StatusNotFound || st.sessionID == "" {
		return false
	}
	c.mu.Lock()
	current := c.sessionID == st.sessionID
	c.mu.Unlock()
	if current {
		c.lose()
	}
	return true
}

// lose ends the conn because the upstream lost the session: Read and Write
// return ErrSessionLost from now on, no request is answered in the
// upstream's place for it (the client must start again, and is told so by
// the relay), and Close sends no DELETE.
func (c *HTTPClientConn) lose() {
	c.mu.Lock()
	c.expired = true
	c.mu.Unlock()
	c.loseOnce.Do(func() {
		c.log.Warn("upstream lost the session (HTTP 404 for its session id); the session ends")
		close(c.lost)
	})
}

// startStandalone opens the standalone GET stream once, in a stateful
// session. It returns once the upstream has answered the GET (or after
// httpStandaloneOpenWait), so that the GET reaches the upstream before the
// requests written after notifications/initialized, as from a client that
// talks to the upstream directly: a server that took a late standalone GET
// for a stream's reconnection would otherwise see it without Last-Event-ID
// and too early (the conformance suite's sse-retry scenario did, under load).
func (c *HTTPClientConn) startStandalone() {
	c.mu.Lock()
	start := c.stateful && !c.expired && !c.standalone && !c.closed
	c.standalone = c.standalone || start
	c.mu.Unlock()
	if !start {
		return
	}
	opened := make(chan struct{})
	if !c.spawn(func() { c.runStandalone(opened) }) {
		return
	}
	t := time.NewTimer(httpStandaloneOpenWait)
	defer t.Stop()
	select {
	case <-opened:
	case <-t.C:
	case <-c.done:
	}
}

// Close stops every stream, ends the upstream session with a DELETE if there
// is one (best effort, bounded by a short timeout; 405 means the upstream
// does not support it), and waits for the stream goroutines to finish. After
// Close, Read and Write return ErrClosed. Close may be called more than once
// and from any goroutine; it always returns nil, logging a failed DELETE.
func (c *HTTPClientConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		sid, version, expired := c.sessionID, c.version, c.expired
		c.mu.Unlock()
		close(c.done)
		c.cancel()
		if sid != "" && !expired {
			c.deleteSession(sid, version)
		}
		c.wg.Wait()
		if c.ownClient {
			c.client.CloseIdleConnections()
		}
	})
	return nil
}

func (c *HTTPClientConn) deleteSession(sid, version string) {
	ctx, cancel := context.WithTimeout(context.Background(), httpDeleteTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header = c.header.Clone()
	req.Header.Set(mcp.HeaderSessionID, sid)
	if version != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, version)
	}
	resp, err := c.do(req)
	if err != nil {
		c.log.Warn("upstream session DELETE failed", "error", errText(err))
		return
	}
	discard(resp.Body, 4<<10)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		c.log.Warn("upstream session DELETE refused", "status", resp.StatusCode)
	}
}

func (c *HTTPClientConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// spawn runs f in a goroutine that Close waits for, unless Close has begun.
func (c *HTTPClientConn) spawn(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// Push implements Pusher: the goroutines that read the upstream's answers
// call deliver with each message, one call at a time, instead of queueing it
// for Read. Messages of one stream are delivered in order; Close waits for
// a call of deliver in progress. Push reports false if Read was called
// first, Push already was, or a message was already queued for Read.
func (c *HTTPClientConn) Push(deliver func(*jsonrpc.Message)) bool {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	if c.mode != modeUndecided {
		return false
	}
	c.mode, c.push = modePush, deliver
	return true
}

// pushTo returns the function Push gave, or nil once messages go to Read;
// called before the first message is queued or read, it settles that they
// do.
func (c *HTTPClientConn) pushTo() func(*jsonrpc.Message) {
	c.modeMu.Lock()
	defer c.modeMu.Unlock()
	if c.mode == modeUndecided {
		c.mode = modeRead
	}
	return c.push
}

// deliver queues m for Read with Related set to related, blocking while the
// queue is full, or after Push hands it to the pushed function, waiting for
// its turn. It returns false if the conn was closed first.
func (c *HTTPClientConn) deliver(m *jsonrpc.Message, related jsonrpc.ID) bool {
	m.Related = related
	push := c.pushTo()
	if push == nil {
		select {
		case c.in <- m:
			return true
		case <-c.done:
			return false
		}
	}
	select {
	case c.pushing <- struct{}{}:
	case <-c.done:
		return false
	}
	defer func() { <-c.pushing }()
	select {
	case <-c.done:
		return false
	default:
	}
	push(m)
	return true
}

// deliverError queues a synthesized error response for the request of st.
// A stream that dropped an invalid message and then ended without a response
// is reported as CodeUpstreamInvalid (the response may have been the invalid
// message); every other failure as CodeUpstreamUnavailable.
func (c *HTTPClientConn) deliverError(st *streamState, rule, text string) {
	code := jsonrpc.CodeUpstreamUnavailable
	if rule == "stream-ended" && st.invalid {
		code, rule = jsonrpc.CodeUpstreamInvalid, "invalid-response"
		text = "sent an invalid message and no valid response; the invalid message was dropped"
	}
	e := jsonrpc.Detail{Stage: "upstream", Rule: rule}.Errorf(code, "upstream "+c.name+": "+text)
	c.deliver(jsonrpc.NewErrorResponse(st.related, e), st.related)
}

// statusDetail is the data of the error that answers a request the upstream
// refused with an HTTP status: jsonrpc.Detail's stage and rule, the status,
// and what the upstream said, if anything.
type statusDetail struct {
	Stage           string `json:"stage"`
	Rule            string `json:"rule"`
	Status          int    `json:"status"`
	UpstreamMessage string `json:"upstream_message,omitempty"`
}

// deliverStatus queues the error response (rule http-status) for the
// request of st that the upstream answered with an HTTP status other than
// a response: status and the upstream's own text go into error.data, and
// the message says the same in words.
func (c *HTTPClientConn) deliverStatus(st *streamState, status int, upstreamText, text string) {
	data, _ := json.Marshal(statusDetail{Stage: "upstream", Rule: "http-status", Status: status, UpstreamMessage: upstreamText})
	e := &jsonrpc.Error{Code: jsonrpc.CodeUpstreamUnavailable, Message: "upstream " + c.name + ": " + text, Data: data}
	c.deliver(jsonrpc.NewErrorResponse(st.related, e), st.related)
}

// Bounds on what an upstream's HTTP error body contributes to an error.
const (
	httpErrorBodyMax = 4 << 10 // read at most this much of a body other than JSON
	httpErrorTextMax = 256     // and pass on at most this many bytes of text
)

// httpErrorBodyWait bounds the wait for an HTTP error's body: an upstream
// that sends an error's head and then withholds its body gets its error
// without the text, instead of holding the message (or, for a notification
// or a response, the session's writes) until the conn closes. A variable so
// a test can shorten it.
var httpErrorBodyWait = 5 * time.Second

// readErrorBody reads an HTTP error response's body: a JSON one whole, up to
// the message size limit (it may be the JSON-RPC answer to relay), any
// other only its start.
func (c *HTTPClientConn) readErrorBody(resp *http.Response, contentType string) ([]byte, bool) {
	n := int64(httpErrorBodyMax)
	if contentType == "application/json" {
		n = int64(c.maxBytes)
	}
	wait := time.AfterFunc(httpErrorBodyWait, func() { resp.Body.Close() })
	data, err := io.ReadAll(io.LimitReader(resp.Body, n))
	wait.Stop()
	if err != nil && len(data) == 0 {
		return nil, false
	}
	return data, true
}

// upstreamText is what an upstream said in the body of an HTTP error, fit
// to go to the MCP client: the message of a JSON-RPC error (whatever its
// id), else the body as text (a JSON body other than a JSON-RPC error, or an
// HTML page, is not text: nothing). Control and format characters become
// spaces, runs of white space one space, invalid UTF-8 is replaced, it is cut to
// httpErrorTextMax bytes, and any value of the upstream's configured headers
// (an API key the upstream echoes) is masked.
func (c *HTTPClientConn) upstreamText(data []byte, contentType string) string {
	var text string
	switch contentType {
	case "application/json":
		raw, ok := jsonrpc.Lookup(data, "error", "message")
		if !ok {
			return ""
		}
		if text, ok = jsonrpc.String(raw); !ok {
			return ""
		}
	case "text/plain", "":
		text = string(data)
	default:
		return ""
	}
	text = strings.ToValidUTF8(text, "\uFFFD")
	text = strings.Join(strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) // Cf: bidi overrides and the like
	}), " ")
	for _, vs := range c.header {
		for _, v := range vs {
			if len(v) >= 4 {
				text = strings.ReplaceAll(text, v, "[redacted]")
			}
		}
	}
	if len(text) > httpErrorTextMax {
		cut := httpErrorTextMax
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}

// describe names msg in error messages.
func describe(msg *jsonrpc.Message) string {
	if msg.Method != "" {
		return msg.Kind.String() + " " + msg.Method
	}
	return "response " + msg.ID.String()
}

// errText is err's text without the request URL that net/http adds (it may
// carry a key) — synthesized errors go back to the MCP client.
func errText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// netReason names what went wrong with a connection to an upstream without
// saying where: the client learns that the upstream is unreachable and
// why, never the address, port or resolver of warden's side (the log has
// the full error).
func netReason(err error) string {
	var dns *net.DNSError
	var tlsErr *tls.RecordHeaderError
	var cert *tls.CertificateVerificationError
	var ne net.Error
	switch {
	case err == nil:
		return "no answer"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the upstream"
	case errors.As(err, &dns):
		return "its name does not resolve"
	case errors.As(err, &cert), errors.As(err, &tlsErr):
		return "TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	}
	return "network error"
}

// mediaType returns the media type of a Content-Type value, lower-cased,
// without parameters.
func mediaType(v string) string {
	v, _, _ = strings.Cut(v, ";")
	return strings.ToLower(strings.TrimSpace(v))
}

// discard reads and closes body, reading at most n bytes so that a
// connection with a short body can be reused.
func discard(body io.ReadCloser, n int) {
	io.Copy(io.Discard, io.LimitReader(body, int64(n)))
	body.Close()
}
