package transport

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// httpSession is one MCP session of an HTTPServer and the Conn handed to
// OnSession for it.
type httpSession struct {
	// Immutable after newHTTPSession.
	srv       *HTTPServer
	id        string // "" when stateless
	stateless bool
	// viewless: the upstream keeps no session (ShowSessionless), so the
	// client never learns id, and the session ends once initialize is
	// answered, as a stateless one does. Set before the initialize answer
	// opens its stream; read without mu by writeEvents.
	viewless  atomic.Bool
	principal string          // who opened it (HTTPServerOptions.Authenticate); set before OnSession
	ctx       context.Context // OnSession's; cancelled when the session ends
	cancel    context.CancelFunc
	in        chan *jsonrpc.Message // inbound, in order; bounded
	ended     chan struct{}         // closed when the client side ended
	closed    chan struct{}         // closed by Close

	mu         sync.Mutex // guards the fields below
	isEnded    bool
	isClosed   bool
	isLost     bool                       // LoseSession: answer 404 where nothing was sent yet
	version    string                     // negotiated revision once the initialize response went out, else the requested one
	versionSet bool                       // version is the negotiated one
	initID     string                     // raw id of the initialize request awaiting its response
	initFailed bool                       // the initialize request was answered with an error
	idSent     bool                       // the initialize answer went out with the session id
	requests   map[string]*pendingRequest // unanswered client requests by raw id
	progress   map[string]string          // progress token key -> raw id of its request
	open       map[*sseStream]struct{}    // POST streams with unanswered requests
	streams    map[uint64]*sseStream      // streams that hold events or unanswered requests, by id
	standalone *sseStream                 // the GET stream; nil when stateless
	order      []*sseStream               // the stream of each logged event, oldest first
	logBytes   int                        // bytes of the logged events
	active     int                        // HTTP requests in flight for this session
	room       chan struct{}              // closed when a client has read events (markSent) or let go of a stream; nil when no Write waits
	stalled    bool                       // a reading client made no progress for stallWait: Write drops instead of waiting, until it reads again
	lastActive time.Time
	// The idle timer is not stopped and set again around each request, which
	// would wake the runtime's network poller on every call: idleFired
	// checks activity when it fires, and finish sets it only when it is not.
	timer   *time.Timer // idle timer; nil when stateless
	idleSet bool        // timer will fire
}

// pendingRequest is a client request the relay has not answered yet.
type pendingRequest struct {
	stream *sseStream
	token  string // progress token key, "" if none
}

// sseStream is one logical SSE stream: the answer to a POST, or the
// standalone stream. Its fields are guarded by the session's mu.
type sseStream struct {
	id       uint64        // random; written as 16 hex digits (appendEventID)
	post     bool          // opened by a POST (else the standalone stream)
	pending  int           // unanswered requests (POST streams)
	events   []loggedEvent // logged events, oldest first, seqs increasing
	nextSeq  uint64        // seq of the next event; seqs start at 1
	sent     uint64        // every event with seq < sent was written to some client
	attached *attachment   // the HTTP request writing this stream, if any

	// first is the pending record of the stream's first request, so that
	// a POST of one request (the usual case) allocates one for both.
	first pendingRequest
}

type loggedEvent struct {
	seq    uint64
	data   []byte
	status int // rpcStatus of an error response, else 0
	retry  int // SSE "retry:" to send with the event (Message.Retry), else 0
}

// attachment is an HTTP request holding a stream. Its fields other than
// wake are guarded by the session's mu.
type attachment struct {
	cursor uint64        // seq of the next event to write
	wake   chan struct{} // cap 1: new events, or taken
	taken  bool          // another request took the stream over
}

var errSessionEnded = errors.New("session ended")

func newHTTPSession(srv *HTTPServer, id string, stateless bool, version string) *httpSession {
	s := &httpSession{
		srv:        srv,
		id:         id,
		stateless:  stateless,
		in:         make(chan *jsonrpc.Message, inboundQueue),
		ended:      make(chan struct{}),
		closed:     make(chan struct{}),
		version:    version,
		requests:   make(map[string]*pendingRequest),
		progress:   make(map[string]string),
		open:       make(map[*sseStream]struct{}),
		streams:    make(map[uint64]*sseStream),
		lastActive: time.Now(),
	}
	s.ctx, s.cancel = context.WithCancel(srv.baseCtx)
	if !stateless {
		s.standalone = &sseStream{id: randomStreamID(), nextSeq: 1, sent: 1}
		s.streams[s.standalone.id] = s.standalone
		s.timer = time.AfterFunc(srv.idle, s.idleFired)
		s.idleSet = true
	}
	return s
}

// Read returns the next message the client sent. It returns io.EOF once the
// client side has ended the session (DELETE, idle timeout, HTTPServer.Close,
// or a stateless POST fully answered) and the queued messages are taken, and
// ErrClosed after Close. One goroutine at a time may call Read.
func (s *httpSession) Read(ctx context.Context) (*jsonrpc.Message, error) {
	for {
		// In order of precedence: Close, queued messages, the session's end.
		select {
		case <-s.closed:
			return nil, ErrClosed
		default:
		}
		select {
		case m := <-s.in:
			return m, nil
		default:
		}
		select {
		case <-s.ended:
			s.cancel()
			return nil, io.EOF
		default:
		}
		select {
		case m := <-s.in:
			return m, nil
		case <-s.closed:
		case <-s.ended:
		case <-ctx.Done():
			// ctx may be OnSession's, cancelled because the session
			// ended: report the end rather than the cancellation.
			select {
			case <-s.closed:
			case <-s.ended:
			default:
				return nil, ctx.Err()
			}
		}
	}
}

// Write routes msg to the client: a response to the stream of its request; a
// request or notification to the stream of msg.Related, else (progress) of
// the request that issued its progress token, else the standalone stream if a
// GET holds it, else the only POST stream still open, else the pending
// buffer. Write waits for the network only when the session's event buffer
// is full of events a reading client has not read yet (awaitRoomLocked);
// it may be called concurrently.
// It returns ErrClosed after Close and io.ErrClosedPipe once the client side
// has ended the session.
func (s *httpSession) Write(ctx context.Context, msg *jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.isClosed:
		return ErrClosed
	case s.isEnded:
		return io.ErrClosedPipe
	}
	if err := s.awaitRoomLocked(ctx, len(msg.Raw)); err != nil {
		return err
	}
	st := s.routeLocked(msg)
	if msg.Kind == jsonrpc.KindResponse {
		s.answeredLocked(msg)
	}
	if st == nil {
		s.srv.log.Warn("http: outbound message has no stream; dropped", "session", s.id,
			"kind", msg.Kind.String(), "method", msg.Method, "id", msg.ID.String())
		return nil
	}
	status := 0
	if msg.Kind == jsonrpc.KindResponse && msg.Error != nil {
		status = rpcStatus(msg.Error)
	}
	s.appendLocked(st, msg.Raw, status)
	if msg.Retry > 0 {
		st.events[len(st.events)-1].retry = msg.Retry
	}
	return nil
}

var _ SessionLoser = (*httpSession)(nil)

var _ SessionlessView = (*httpSession)(nil)

// ShowSessionless implements SessionlessView: the answer to initialize goes
// out without the session id, and the session ends once that answer is
// written. A stateless session, or one whose id the client already has,
// stays as it is.
func (s *httpSession) ShowSessionless() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stateless && !s.idSent && s.initID != "" {
		s.viewless.Store(true)
	}
}

// keepsNoSession reports whether the client sees no session: stateless, or
// shown so (ShowSessionless). Its streams carry no event ids and no priming
// event, since nothing could resume them.
func (s *httpSession) keepsNoSession() bool {
	return s.stateless || s.viewless.Load()
}

// LoseSession implements SessionLoser: the upstream lost the session, so
// the client must start a new one. The session's id is forgotten at once
// (404 for any request that comes from now on), and a POST whose stream has
// not opened yet (see HTTPServerOptions.OpenWait) is answered 404 too, the
// way the streamable HTTP transport tells a client its session is gone;
// a stream already open gets what the relay writes before Close (the error
// answers of its requests), then ends.
func (s *httpSession) LoseSession() {
	s.mu.Lock()
	if s.isLost || s.isClosed {
		s.mu.Unlock()
		return
	}
	s.isLost = true
	for _, st := range s.streams {
		wakeWriter(st)
	}
	s.mu.Unlock()
	s.srv.forget(s)
	s.srv.log.Info("http: session ended", "session", s.id, "reason", "the upstream lost it")
}

// Close ends the session from the relay's side: its HTTP requests end, its
// id is forgotten (404 from then on), and Read and Write return ErrClosed.
// It is idempotent.
func (s *httpSession) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return nil
	}
	s.isClosed = true
	close(s.closed)
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	s.cancel()
	s.srv.forget(s)
	return nil
}

// end ends the session from the client's side: Read drains what is queued
// and then returns io.EOF. cancelNow also cancels OnSession's context at
// once; otherwise that happens when Read returns io.EOF.
func (s *httpSession) end(reason string, cancelNow bool) {
	s.mu.Lock()
	already := s.isEnded || s.isClosed
	if !s.isEnded {
		s.isEnded = true
		close(s.ended)
		if s.timer != nil {
			s.timer.Stop()
		}
	}
	s.mu.Unlock()
	if cancelNow {
		s.cancel()
	}
	if already {
		return
	}
	s.srv.forget(s)
	if !s.stateless {
		s.srv.log.Info("http: session ended", "session", s.id, "reason", reason)
	}
}

// begin records an HTTP request in flight for the session, which keeps it
// from idling out. It reports false if the session is over.
func (s *httpSession) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isEnded || s.isClosed || s.isLost {
		return false
	}
	s.active++
	return true
}

// finish records the end of an HTTP request begun with begin.
func (s *httpSession) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active == 0 {
		s.lastActive = time.Now()
		if s.timer != nil && !s.idleSet && !s.isEnded && !s.isClosed {
			s.idleSet = true
			s.timer.Reset(s.srv.idle)
		}
	}
}

// idleFired runs when the idle timer expires.
func (s *httpSession) idleFired() {
	s.mu.Lock()
	if s.active > 0 || s.isEnded || s.isClosed {
		s.idleSet = false // finish sets it again
		s.mu.Unlock()
		return
	}
	if left := s.srv.idle - time.Since(s.lastActive); left > 0 { // active since it was set
		s.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.end("idle timeout", true)
}

// negotiated returns the session's revision once the initialize response
// has gone out, else "".
func (s *httpSession) negotiated() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.versionSet {
		return ""
	}
	return s.version
}

// servePOST hands msgs (already validated) to the relay and answers the POST:
// 202 when it carries no request, else an SSE stream carrying everything
// related to its requests until they are all answered. created tells that
// the session was made for this POST; body is the POST's, for the record of
// a refusal.
func (s *httpSession) servePOST(w http.ResponseWriter, r *http.Request, body []byte, msgs []*jsonrpc.Message, created bool) {
	ctx := r.Context()
	var calls []*jsonrpc.Message
	for _, m := range msgs {
		if m.IsCall() {
			calls = append(calls, m)
		}
	}
	// A session made for this POST does not outlive its failure.
	abandon := func(reason string) {
		if created {
			s.end(reason, true)
		}
	}
	if len(calls) == 0 {
		if _, err := s.enqueue(ctx, msgs); err != nil {
			abandon("client gone")
			s.refuseClosing(w, r, body, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		if s.stateless {
			s.end("answered", false)
		}
		return
	}

	st, status, rpcErr := s.openStream(calls)
	if rpcErr != nil {
		s.srv.refusedMessage(r, status, body, -1, rpcErr.id, rpcErr.err)
		abandon("refused")
		writeRPCError(w, status, rpcErr.id, rpcErr.err)
		return
	}
	if n, err := s.enqueue(ctx, msgs); err != nil {
		s.unregister(msgs[n:])
		abandon("client gone")
		s.refuseClosing(w, r, body, err)
		return
	}

	s.mu.Lock()
	att := s.attachLocked(st, 1)
	s.mu.Unlock()
	held := &heldAnswer{wait: s.srv.openWait, version: r.Header.Get(mcp.HeaderProtocolVersion)}
	if created && !s.stateless {
		held.sessionID = s.id
	}
	switch {
	case len(calls) > 1:
		held.wait = 0
	case held.sessionID != "" && s.srv.holdInit:
		// The answer to initialize waits for the upstream's answer: only
		// then is it known whether the upstream keeps a session at all
		// (ShowSessionless), and so whether the client gets an id.
		held.wait = -1
	case mcp.Stateless(held.version):
		// At a stateless revision the answer to one request waits for its
		// first message: an error response may have to go out with its
		// own status.
		held.wait, held.errStatus = -1, true
	case held.wait < 0: // OpenWait < 0: no holding back
		held.wait = 0
	}
	if held.wait == 0 {
		held.open(s, w, st, att, true)
		held = nil
	}
	finished := s.pump(ctx, w, st, att, held)

	switch {
	case s.stateless:
		s.end("answered", !finished)
	case s.viewless.Load():
		s.end("answered; the upstream keeps no session", !finished)
	case created && s.initFailedAfter():
		s.end("initialize failed", true)
	}
}

// serveGET serves the standalone stream, or resumes the stream named by
// Last-Event-ID after that event.
func (s *httpSession) serveGET(w http.ResponseWriter, r *http.Request) {
	st, att, status, rule, msg := s.claimForGET(r)
	if att == nil {
		s.srv.refuseText(w, r, status, nil, rule, msg)
		return
	}
	s.openSSE(w, st, att, "", r.Header.Get(mcp.HeaderProtocolVersion), true)
	s.pump(r.Context(), w, st, att, nil)
}

// claimForGET attaches a GET to the stream it asks for: with Last-Event-ID
// the stream of that event, after it (taking the stream over from a request
// still holding it: a client resuming knows its old connection is dead before
// the server does); without, the standalone stream from its first event no
// client has been sent, unless another GET holds it (409). A refusal comes
// with its status, rule and message.
func (s *httpSession) claimForGET(r *http.Request) (st *sseStream, att *attachment, status int, rule, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(r.Header.Values(mcp.HeaderLastEventID)) == 0 {
		st = s.standalone
		if st.attached != nil {
			return nil, nil, http.StatusConflict, RuleStreamConflict, "Conflict: the session's standalone stream is already open"
		}
		return st, s.attachLocked(st, st.sent), 0, "", ""
	}
	lastID := r.Header.Get(mcp.HeaderLastEventID)
	sid, seq, ok := parseEventID(lastID)
	if ok {
		st = s.streams[sid]
	}
	if st == nil || seq >= st.nextSeq {
		return nil, nil, http.StatusBadRequest, RuleResume, "Bad Request: cannot resume after event " + quoteClient(lastID) + ": unknown or expired"
	}
	if len(st.events) > 0 && st.events[0].seq > seq+1 {
		s.srv.log.Warn("http: resuming a stream some of whose events were dropped", "session", s.id, "stream", streamName(st.id))
	}
	return st, s.attachLocked(st, seq+1), 0, "", ""
}

// refuseClosing answers a POST whose messages could not be queued because
// its session ended meanwhile.
func (s *httpSession) refuseClosing(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	if errors.Is(err, errSessionEnded) {
		s.srv.refuseText(w, r, http.StatusNotFound, body, RuleUnknownSession, "session not found")
	}
	// Otherwise the client went away; there is no one to answer.
}

// enqueue queues msgs for Read, waiting while the queue is full. It returns
// how many were queued.
func (s *httpSession) enqueue(ctx context.Context, msgs []*jsonrpc.Message) (int, error) {
	for i, m := range msgs {
		select {
		case s.in <- m:
		case <-ctx.Done():
			return i, ctx.Err()
		case <-s.ended:
			return i, errSessionEnded
		case <-s.closed:
			return i, errSessionEnded
		}
	}
	return len(msgs), nil
}

// idError is a refusal of a POST: an HTTP status and a JSON-RPC error for id.
type idError struct {
	id  jsonrpc.ID
	err *jsonrpc.Error
}

// openStream registers a POST stream for calls. It refuses a request id that
// is already pending (in this POST or earlier) and more pending requests
// than maxPendingRequests.
func (s *httpSession) openStream(calls []*jsonrpc.Message) (*sseStream, int, *idError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests)+len(calls) > maxPendingRequests {
		return nil, http.StatusTooManyRequests, &idError{calls[0].ID,
			jsonrpc.Detail{Stage: stageListener, Rule: RulePendingRequests}.Errorf(jsonrpc.CodeInvalidRequest,
				"too many unanswered requests in this session")}
	}
	var seen map[string]bool // ids of this POST; only a batch needs it
	if len(calls) > 1 {
		seen = make(map[string]bool, len(calls))
	}
	for _, c := range calls {
		if seen[c.ID.Raw()] || s.requests[c.ID.Raw()] != nil {
			return nil, http.StatusBadRequest, &idError{c.ID,
				jsonrpc.Detail{Stage: stageListener, Rule: RuleDuplicateID}.Errorf(jsonrpc.CodeInvalidRequest,
					"request id "+c.ID.Raw()+" is already in flight")}
		}
		if seen != nil {
			seen[c.ID.Raw()] = true
		}
	}
	st := &sseStream{id: randomStreamID(), post: true, pending: len(calls), nextSeq: 1, sent: 1}
	s.streams[st.id] = st
	s.open[st] = struct{}{}
	for i, c := range calls {
		p := &st.first
		if i > 0 {
			p = new(pendingRequest)
		}
		p.stream = st
		if raw, ok := jsonrpc.Lookup(c.Params, "_meta", "progressToken"); ok {
			p.token = progressKey(raw)
			s.progress[p.token] = c.ID.Raw()
		}
		s.requests[c.ID.Raw()] = p
		if c.Method == mcp.MethodInitialize && !s.stateless {
			s.initID = c.ID.Raw()
		}
	}
	return st, 0, nil
}

// unregister forgets the requests among msgs that never reached the relay,
// so that their stream can finish.
func (s *httpSession) unregister(msgs []*jsonrpc.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if m.IsCall() {
			s.forgetRequestLocked(m.ID.Raw())
		}
	}
}

// routeLocked picks the stream msg goes to, or nil when it has none.
func (s *httpSession) routeLocked(msg *jsonrpc.Message) *sseStream {
	if msg.Kind == jsonrpc.KindResponse {
		if p := s.requests[msg.ID.Raw()]; p != nil {
			return p.stream
		}
		return nil // answers nothing pending: nowhere to go
	}
	if msg.Related.IsValid() {
		if p := s.requests[msg.Related.Raw()]; p != nil {
			return p.stream
		}
	}
	if msg.Method == mcp.NotificationProgress {
		if raw, ok := jsonrpc.Lookup(msg.Params, "progressToken"); ok {
			if p := s.requests[s.progress[progressKey(raw)]]; p != nil {
				return p.stream
			}
		}
	}
	if s.standalone != nil && s.standalone.attached != nil {
		return s.standalone
	}
	if len(s.open) == 1 {
		for st := range s.open {
			return st
		}
	}
	return s.standalone // the pending buffer; nil when stateless
}

// answeredLocked records that the response msg answers its request, and
// learns the negotiated revision from the initialize response.
func (s *httpSession) answeredLocked(msg *jsonrpc.Message) {
	id := msg.ID.Raw()
	if id != "" && id == s.initID {
		s.initID = ""
		if raw, ok := jsonrpc.Lookup(msg.Result, "protocolVersion"); ok {
			if v, ok := jsonrpc.String(raw); ok {
				s.version, s.versionSet = v, true
			}
		} else if msg.Error != nil {
			s.initFailed = true
		}
	}
	s.forgetRequestLocked(id)
}

// forgetRequestLocked removes a pending request and closes its stream once
// that was the last one.
func (s *httpSession) forgetRequestLocked(id string) {
	p := s.requests[id]
	if p == nil {
		return
	}
	delete(s.requests, id)
	if p.token != "" && s.progress[p.token] == id {
		delete(s.progress, p.token)
	}
	st := p.stream
	st.pending--
	if st.pending == 0 {
		delete(s.open, st)
		wakeWriter(st)
		s.collectLocked(st)
	}
}

// stallWait bounds how long Write waits for a client that is attached to a
// stream but reads none of it: after that the client counts as gone, and
// its oldest undelivered events are dropped to make room (appendLocked).
const stallWait = 10 * time.Second

// awaitRoomLocked applies back-pressure: while appending n more bytes would
// drop an event that was never delivered from a stream a client is
// reading, it waits for that client to read (or let go of the stream), for
// the session to end, for ctx, or for stallWait without any progress. The
// writer waits and not the client: an upstream flooding one session holds
// up its own relay goroutine, never another session's, and a client that
// reads every event gets every event. Events of a stream that nobody
// reads (a POST whose client went away and may resume) are dropped oldest
// first as before; they are kept only for resumption. s.mu is held on
// entry and on return, and released while waiting.
func (s *httpSession) awaitRoomLocked(ctx context.Context, n int) error {
	var stall *time.Timer
	defer func() {
		if stall != nil {
			stall.Stop()
		}
	}()
	for s.fullForReaderLocked(n) {
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		if stall == nil {
			stall = time.NewTimer(stallWait)
		} else {
			stall.Reset(stallWait)
		}
		s.mu.Unlock()
		var err error
		timedOut := false
		select {
		case <-room:
		case <-s.closed:
		case <-s.ended:
		case <-ctx.Done():
			err = ctx.Err()
		case <-stall.C:
			timedOut = true
		}
		s.mu.Lock()
		switch {
		case err != nil:
			return err
		case s.isClosed:
			return ErrClosed
		case s.isEnded:
			return io.ErrClosedPipe
		case timedOut:
			s.stalled = true
			s.srv.log.Warn("http: the client reads none of its stream; dropping undelivered messages until it reads again", "session", s.id)
			return nil
		}
	}
	return nil
}

// fullForReaderLocked reports whether appending n bytes would drop the
// session's oldest event while it is undelivered and a client is reading
// its stream.
func (s *httpSession) fullForReaderLocked(n int) bool {
	if s.stalled || len(s.order) == 0 || (len(s.order) < s.srv.eventBuffer && s.logBytes+n <= s.srv.eventBytes) {
		return false
	}
	old := s.order[0]
	return old.attached != nil && len(old.events) > 0 && old.events[0].seq >= old.sent
}

// roomLocked wakes the Writes waiting in awaitRoomLocked.
func (s *httpSession) roomLocked() {
	if s.room != nil {
		close(s.room)
		s.room = nil
	}
}

// appendLocked logs data as the next event of st and wakes its writer,
// dropping the session's oldest events beyond the buffer's bounds.
func (s *httpSession) appendLocked(st *sseStream, data []byte, status int) {
	st.events = append(st.events, loggedEvent{seq: st.nextSeq, data: data, status: status})
	st.nextSeq++
	s.order = append(s.order, st)
	s.logBytes += len(data)
	for len(s.order) > 1 && (len(s.order) > s.srv.eventBuffer || s.logBytes > s.srv.eventBytes) {
		old := s.order[0]
		s.order[0] = nil
		s.order = s.order[1:]
		e := old.events[0]
		old.events[0] = loggedEvent{}
		old.events = old.events[1:]
		s.logBytes -= len(e.data)
		if e.seq >= old.sent {
			s.srv.log.Warn("http: event buffer full; dropped an undelivered message", "session", s.id, "stream", streamName(old.id))
		}
		s.collectLocked(old)
	}
	wakeWriter(st)
}

// collectLocked forgets a POST stream that is answered, written out or
// dropped, and not held by a request.
func (s *httpSession) collectLocked(st *sseStream) {
	if st.post && st.pending == 0 && len(st.events) == 0 && st.attached == nil {
		delete(s.streams, st.id)
	}
}

func wakeWriter(st *sseStream) {
	if st.attached != nil {
		select {
		case st.attached.wake <- struct{}{}:
		default:
		}
	}
}

// attachLocked makes a new request the writer of st from cursor on,
// stopping the request that held it, if any.
func (s *httpSession) attachLocked(st *sseStream, cursor uint64) *attachment {
	if old := st.attached; old != nil {
		old.taken = true
		wakeWriter(st)
	}
	att := &attachment{cursor: cursor, wake: make(chan struct{}, 1)}
	st.attached = att
	return att
}

// openSSE starts an SSE response, with the session id header when sessionID
// is set. From 2025-11-25 on a stateful stream opens with an event that has
// an id and no data, so that the client can resume even if the connection
// drops before the first message; otherwise a comment gets the headers
// through buffering proxies. With flush, all that goes out at once; without,
// it goes out with what follows.
func (s *httpSession) openSSE(w http.ResponseWriter, st *sseStream, att *attachment, sessionID, headerVersion string, flush bool) {
	hdr := w.Header()
	if sessionID != "" {
		hdr.Set(mcp.HeaderSessionID, sessionID)
	}
	hdr["Content-Type"] = sseContentType
	hdr["Cache-Control"] = noCache
	w.WriteHeader(http.StatusOK)
	s.mu.Lock()
	version := s.version
	if version == "" {
		version = headerVersion
	}
	s.mu.Unlock()
	if !s.keepsNoSession() && version >= mcp.Rev20251125 && !mcp.Stateless(version) {
		// The priming event, as WriteEvent(w, Event{ID: ...}) writes it.
		bp := eventBufs.Get().(*[]byte)
		b := append((*bp)[:0], "id: "...)
		b = appendEventID(b, st.id, att.cursor-1)
		b = appendEventData(append(b, '\n'), nil)
		_, _ = w.Write(b)
		*bp = b
		eventBufs.Put(bp)
	} else {
		_, _ = io.WriteString(w, ": stream open\n\n")
	}
	if flush {
		_ = http.NewResponseController(w).Flush()
	}
}

// Header values the listener sets on every answer. net/http copies a
// handler's header map before writing it and never changes a value in place,
// so the slices can be shared.
var (
	sseContentType  = []string{"text/event-stream"}
	jsonContentType = []string{"application/json"}
	noCache         = []string{"no-cache, no-transform"}
)

// heldAnswer is the answer to a POST whose stream waits for its first
// message before it opens (see HTTPServerOptions.OpenWait).
type heldAnswer struct {
	wait      time.Duration // how long the stream may wait; < 0: until the first message
	errStatus bool          // an error response sets the HTTP status (rpcStatus)
	sessionID string        // Mcp-Session-Id to send: the POST made the session
	version   string        // the POST's MCP-Protocol-Version header
}

// open opens the held stream; see openSSE. The session id goes out unless
// the upstream turned out to keep no session (ShowSessionless).
func (h *heldAnswer) open(s *httpSession, w http.ResponseWriter, st *sseStream, att *attachment, flush bool) {
	id := h.sessionID
	if id != "" {
		s.mu.Lock()
		if s.viewless.Load() {
			id = ""
		} else {
			s.idSent = true
		}
		s.mu.Unlock()
	}
	s.openSSE(w, st, att, id, h.version, flush)
}

// pump writes the events of st to w from att.cursor on, until the stream is
// finished (a POST stream whose requests are answered and written: it
// returns true), the request ends, the session ends, or another request
// takes the stream over. A non-nil held answer opens the stream when the
// first event comes or held.wait has passed; except that a stream whose only
// event is an error response with an HTTP status of its own (held.errStatus,
// rpcStatus) is answered with that status and that response alone, as
// application/json. What finishes the stream is not flushed: it goes out
// with the end of the response, in the same write.
func (s *httpSession) pump(ctx context.Context, w http.ResponseWriter, st *sseStream, att *attachment, held *heldAnswer) (finished bool) {
	rc := http.NewResponseController(w)
	defer s.detach(st, att)
	var timeout <-chan struct{}
	if held != nil {
		defer func() {
			if held != nil { // nothing written: still answer with an (empty) stream
				held.open(s, w, st, att, false)
			}
		}()
		if held.wait > 0 { // it is the server's openWait: one timer for all (delay.go)
			e := s.srv.holds.signal()
			defer s.srv.holds.stop(e)
			timeout = e.C
		}
	}
	var buf [4]loggedEvent
	final := false // the session was lost and closed: write what is left, then stop
	for {
		s.mu.Lock()
		if att.taken {
			s.mu.Unlock()
			return false
		}
		if s.isLost && held != nil {
			s.mu.Unlock()
			held = nil
			http.Error(w, "session not found", http.StatusNotFound)
			return false
		}
		i, _ := slices.BinarySearchFunc(st.events, att.cursor, func(e loggedEvent, seq uint64) int {
			return cmp.Compare(e.seq, seq)
		})
		// A copy: dropping old events (appendLocked) clears them in place.
		batch := append(buf[:0], st.events[i:]...)
		next := st.nextSeq
		done := st.post && st.pending == 0
		s.mu.Unlock()

		if held != nil && len(batch) > 0 {
			if e := batch[0]; held.errStatus && e.status != 0 && done && len(batch) == 1 {
				held = nil
				hdr := w.Header()
				hdr["Content-Type"] = jsonContentType
				w.WriteHeader(e.status)
				_, _ = w.Write(e.data)
				s.markSent(st, att, next)
				return true
			}
			held.open(s, w, st, att, !done)
			held = nil
		}
		if len(batch) > 0 {
			if err := s.writeEvents(w, st, batch); err != nil {
				return false
			}
			if !done {
				if err := rc.Flush(); err != nil {
					return false
				}
			}
			s.markSent(st, att, next)
		}
		if done {
			return true
		}
		if final {
			return false
		}
		select {
		case <-att.wake:
		case <-timeout:
			timeout = nil
			if held != nil {
				held.open(s, w, st, att, true)
				held = nil
			}
		case <-ctx.Done():
			return false
		case <-s.ended:
			return false
		case <-s.closed:
			s.mu.Lock()
			final = s.isLost
			s.mu.Unlock()
			if !final {
				return false
			}
		}
	}
}

// writeEvents writes events of st to w, with their ids on stateful
// sessions, in one write.
func (s *httpSession) writeEvents(w io.Writer, st *sseStream, events []loggedEvent) error {
	bp := eventBufs.Get().(*[]byte)
	b := (*bp)[:0]
	noIDs := s.keepsNoSession()
	for _, e := range events {
		if !noIDs {
			b = append(b, "id: "...)
			b = appendEventID(b, st.id, e.seq)
			b = append(b, '\n')
		}
		if e.retry > 0 {
			b = append(b, "retry: "...)
			b = append(strconv.AppendInt(b, int64(e.retry), 10), '\n')
		}
		b = appendEventData(b, e.data)
	}
	_, err := w.Write(b)
	if cap(b) <= maxPooledEvent {
		*bp = b
		eventBufs.Put(bp)
	}
	return err
}

// markSent records that the events of st before next went out on att.
func (s *httpSession) markSent(st *sseStream, att *attachment, next uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	att.cursor = next
	st.sent = max(st.sent, next)
	s.stalled = false
	s.roomLocked()
}

// detach releases st from att, unless another request took it over.
func (s *httpSession) detach(st *sseStream, att *attachment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.attached == att {
		st.attached = nil
		s.collectLocked(st)
		s.roomLocked()
	}
}

// initFailedAfter reports whether the initialize request was answered with
// an error, once its stream is over.
func (s *httpSession) initFailedAfter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initFailed
}

// randomStreamID returns a random stream id from crypto/rand.
func randomStreamID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return binary.LittleEndian.Uint64(b[:])
}

// streamName is a stream id as it appears in event ids, for logs.
func streamName(sid uint64) string {
	return string(appendStreamID(nil, sid))
}

// appendStreamID appends stream id sid to b as 16 lower-case hex digits.
func appendStreamID(b []byte, sid uint64) []byte {
	const digits = "0123456789abcdef"
	for shift := 60; shift >= 0; shift -= 4 {
		b = append(b, digits[sid>>shift&0xf])
	}
	return b
}

// appendEventID appends the SSE id of event seq of stream sid to b:
// "<sid>_<seq>", the stream id in 16 hex digits.
func appendEventID(b []byte, sid, seq uint64) []byte {
	b = appendStreamID(b, sid)
	b = append(b, '_')
	return strconv.AppendUint(b, seq, 10)
}

// parseEventID parses an id made by appendEventID.
func parseEventID(id string) (sid, seq uint64, ok bool) {
	hexID, num, found := strings.Cut(id, "_")
	if !found || len(hexID) != 16 {
		return 0, 0, false
	}
	for i := range len(hexID) {
		c := hexID[i]
		switch {
		case '0' <= c && c <= '9':
			sid = sid<<4 | uint64(c-'0')
		case 'a' <= c && c <= 'f':
			sid = sid<<4 | uint64(c-'a'+10)
		default:
			return 0, 0, false
		}
	}
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return sid, seq, true
}

// tokenKey is the map key of a progress token (raw JSON): strings by value,
// numbers by their text.
func progressKey(raw []byte) string {
	if s, ok := jsonrpc.String(raw); ok {
		return "s" + s
	}
	return "n" + strings.TrimSpace(string(raw))
}
