package gateway

// A stateless (2026-07-28) request carries everything it needs, so the
// stateless requests of many clients can share one upstream connection. For a
// stdio upstream that is the difference between one child process for all of
// them and one child per request. sharedUpstream multiplexes them, renumbering
// request ids so that clients cannot collide:
//
//	session A: id 1 ─┐                    ┌─ id 1 ◄── A
//	session B: id 1 ─┼─► w1, w2, w3 ─► upstream ─► routes ─┼─ id 1 ◄── B
//	session C: id 7 ─┘                    └─ id 7 ◄── C
//
// Renumbering changes the id member of a request's bytes and nothing else
// (jsonrpc.Message.WithID); answers get their original id back the same way.
// A request's progress token is renumbered too: it becomes the request's
// upstream id, so that two clients that chose the same token each get their
// own progress. Notifications find their session by what names their
// request:
//
//	notifications/progress  params.progressToken                         w2 ─► B, token restored
//	anything else           params._meta["io.modelcontextprotocol/      w3 ─► C, id restored
//	                        subscriptionId"] (a subscriptions/listen)
//
// Each rewrite replaces one JSON value in the bytes and nothing else.
// What cannot be routed on a shared connection is refused: a
// server-to-client request (the stateless revision has none; it uses
// multi-round-trip results instead) is answered with an error, and an
// unaddressed notification is dropped and logged. A session that ends with
// requests in flight (a client that closed its listen stream) has them
// cancelled upstream.
//
// mu guards conn, routes, owners and next. The reader goroutine of a conn
// delivers to sessions after releasing mu.

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
)

// sharedUpstream is one upstream connection shared by the stateless
// sessions of an upstream. It dials lazily and again after the connection
// ends.
type sharedUpstream struct {
	// Immutable after newSharedUpstream.
	name string
	dial func(context.Context) (transport.Conn, error)
	log  *slog.Logger

	mu     sync.Mutex
	conn   transport.Conn          // nil until first use and after it ends
	next   int64                   // last id sent upstream
	routes map[string]route        // by the id text warden sent upstream
	owners map[*sharedConn]*owning // what each session has in flight
}

// metaSubscriptionID is the _meta member by which a 2026-07-28 server names
// the subscriptions/listen request a notification belongs to: the request's
// id, as the server received it.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// route is one request in flight upstream.
type route struct {
	sess   *sharedConn
	orig   jsonrpc.ID
	token  []byte // the client's progress token as it wrote it; nil without one
	listen bool   // a subscriptions/listen: notifications name it by its id
}

// owning is what one session has registered, so that it can be removed.
type owning struct {
	ids map[string]jsonrpc.ID // original id text → id sent upstream
}

func newSharedUpstream(name string, dial func(context.Context) (transport.Conn, error), log *slog.Logger) *sharedUpstream {
	return &sharedUpstream{name: name, dial: dial, log: log,
		routes: map[string]route{}, owners: map[*sharedConn]*owning{}}
}

// session returns a Conn for one stateless session.
func (s *sharedUpstream) session() transport.Conn {
	c := &sharedConn{shared: s, in: make(chan *jsonrpc.Message, 16), done: make(chan struct{})}
	s.mu.Lock()
	s.owners[c] = &owning{ids: map[string]jsonrpc.ID{}}
	s.mu.Unlock()
	return c
}

// connLocked returns the shared connection, dialling it if needed.
func (s *sharedUpstream) connLocked(ctx context.Context) (transport.Conn, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	conn, err := s.dial(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	s.conn = conn
	go s.read(conn)
	return conn, nil
}

// send writes msg from session c upstream, renumbered when it is a request.
func (s *sharedUpstream) send(ctx context.Context, c *sharedConn, msg *jsonrpc.Message) error {
	s.mu.Lock()
	conn, err := s.connLocked(ctx)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	own := s.owners[c]
	if own == nil {
		s.mu.Unlock()
		return transport.ErrClosed
	}
	switch {
	case msg.Kind == jsonrpc.KindRequest:
		s.next++
		id := jsonrpc.IntID(s.next)
		r := route{sess: c, orig: msg.ID, listen: msg.Method == mcp.MethodSubscriptionsListen}
		up := msg.WithID(id)
		if tok, ok := jsonrpc.Lookup(up.Raw, "params", "_meta", "progressToken"); ok {
			// The upstream id is unique on this connection, the client's
			// token only in its own session.
			r.token = bytes.Clone(tok)
			if up, err = replaced(up, tok, []byte(id.Raw())); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		s.routes[id.Raw()] = r
		own.ids[msg.ID.Raw()] = id
		msg = up
	case msg.Method == mcp.NotificationCancelled:
		// The upstream knows the request by the id warden gave it.
		raw, _ := jsonrpc.Lookup(msg.Params, "requestId")
		id, ok := own.ids[jsonrpc.IDFromRaw(raw).Raw()]
		if !ok {
			s.mu.Unlock()
			return nil // nothing of this session's to cancel
		}
		msg = jsonrpc.NewNotification(mcp.NotificationCancelled, []byte(`{"requestId":`+id.Raw()+`}`))
	case msg.Kind == jsonrpc.KindResponse:
		s.mu.Unlock()
		return nil // no upstream request is ever routed to a stateless session
	}
	s.mu.Unlock()
	return conn.Write(ctx, msg)
}

// read routes what the shared connection sends until it ends, then fails
// every request still waiting on it.
func (s *sharedUpstream) read(conn transport.Conn) {
	ctx := context.Background()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			s.ended(conn, err)
			return
		}
		switch msg.Kind {
		case jsonrpc.KindResponse:
			s.mu.Lock()
			r, ok := s.routes[msg.ID.Raw()]
			delete(s.routes, msg.ID.Raw())
			if own := s.owners[r.sess]; ok && own != nil {
				delete(own.ids, r.orig.Raw())
			}
			s.mu.Unlock()
			if !ok {
				s.log.Warn("shared upstream: response to no pending request dropped", "upstream", s.name, "id", msg.ID.Raw())
				continue
			}
			r.sess.deliver(routedAnswer(msg, r, s.log))
		case jsonrpc.KindRequest:
			s.log.Warn("shared upstream: server request refused; stateless sessions cannot answer it", "upstream", s.name, "method", msg.Method)
			_ = conn.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, jsonrpc.Detail{Stage: "relay", Rule: "shared-upstream"}.
				Errorf(jsonrpc.CodeMethodNotFound, "warden: "+msg.Method+" cannot reach a stateless client")))
		default:
			sess, out := s.address(msg)
			if sess == nil {
				s.log.Debug("shared upstream: unaddressed notification dropped", "upstream", s.name, "method", msg.Method)
				continue
			}
			sess.deliver(out)
		}
	}
}

// routedAnswer gives the response msg to route r its client's id back, and to a
// subscriptions/listen's result its subscription id.
func routedAnswer(msg *jsonrpc.Message, r route, log *slog.Logger) *jsonrpc.Message {
	up := msg.ID
	out := msg.WithID(r.orig)
	if !r.listen {
		return out
	}
	at, ok := jsonrpc.Lookup(out.Raw, "result", "_meta", metaSubscriptionID)
	if !ok || jsonrpc.IDFromRaw(at).Raw() != up.Raw() {
		return out
	}
	restored, err := replaced(out, at, []byte(r.orig.Raw()))
	if err != nil {
		log.Warn("shared upstream: subscription id left as sent", "err", err)
		return out
	}
	return restored
}

// address returns the session the notification msg is for, and msg as that
// session's client must see it: with its own progress token, or its own
// listen request's id. It returns nil when msg names no request in flight.
func (s *sharedUpstream) address(msg *jsonrpc.Message) (*sharedConn, *jsonrpc.Message) {
	progress := msg.Method == mcp.NotificationProgress
	var at []byte
	var ok bool
	if progress {
		at, ok = jsonrpc.Lookup(msg.Raw, "params", "progressToken")
	} else {
		at, ok = jsonrpc.Lookup(msg.Raw, "params", "_meta", metaSubscriptionID)
	}
	if !ok {
		return nil, nil
	}
	s.mu.Lock()
	r, ok := s.routes[jsonrpc.IDFromRaw(at).Raw()]
	s.mu.Unlock()
	var restore []byte
	switch {
	case !ok:
		return nil, nil
	case progress && r.token != nil:
		restore = r.token
	case !progress && r.listen:
		restore = []byte(r.orig.Raw())
	default:
		return nil, nil
	}
	out, err := replaced(msg, at, restore)
	if err != nil {
		s.log.Warn("shared upstream: notification dropped", "upstream", s.name, "method", msg.Method, "err", err)
		return nil, nil
	}
	out.Related = r.orig
	return r.sess, out
}

// replaced returns a copy of msg whose JSON value at, a sub-slice of
// msg.Raw found by jsonrpc.Lookup(msg.Raw, ...), is replaced by with, a JSON
// value; the rest of the bytes are msg's. (Params and Result are views whose
// capacity ends with them, so a value found in them has no offset in Raw.) The copy is decoded again, so that its views are right; it keeps
// msg's Header and Related.
func replaced(msg *jsonrpc.Message, at, with []byte) (*jsonrpc.Message, error) {
	off := cap(msg.Raw) - cap(at)
	if len(at) == 0 || off < 0 || off+len(at) > len(msg.Raw) || &msg.Raw[off] != &at[0] {
		return nil, errors.New("warden: the value to replace is not in the message")
	}
	raw := make([]byte, 0, len(msg.Raw)-len(at)+len(with))
	raw = append(append(append(raw, msg.Raw[:off]...), with...), msg.Raw[off+len(at):]...)
	// The message passed the configured limits already; the new value
	// adds no depth, and the size is what it is.
	out, err := jsonrpc.Decode(raw, jsonrpc.Limits{MaxBytes: len(raw), MaxDepth: len(raw)})
	if err != nil {
		return nil, err
	}
	out.Header, out.Related = msg.Header, msg.Related
	return out, nil
}

// ended forgets a connection that ended and answers its pending requests.
func (s *sharedUpstream) ended(conn transport.Conn, err error) {
	s.mu.Lock()
	if s.conn != conn {
		s.mu.Unlock()
		return
	}
	s.conn = nil
	pending := s.routes
	s.routes = map[string]route{}
	for _, own := range s.owners {
		clear(own.ids)
	}
	s.mu.Unlock()
	s.log.Warn("shared upstream ended", "upstream", s.name, "err", err, "pending", len(pending))
	for _, r := range pending {
		r.sess.deliver(jsonrpc.NewErrorResponse(r.orig, jsonrpc.Detail{Stage: "upstream", Rule: "ended"}.
			Errorf(jsonrpc.CodeUpstreamUnavailable, "upstream "+quote(s.name)+" ended")))
	}
}

// release forgets everything session c had in flight, and tells the
// upstream to stop working on it, since nobody is left to answer; except
// a subscriptions/listen, which stays open in the child until a later
// listen replaces it or the child ends.
func (s *sharedUpstream) release(c *sharedConn) {
	s.mu.Lock()
	own := s.owners[c]
	if own == nil {
		s.mu.Unlock()
		return
	}
	cancels := make([]*jsonrpc.Message, 0, len(own.ids))
	for _, id := range own.ids {
		r, ok := s.routes[id.Raw()]
		delete(s.routes, id.Raw())
		if ok && r.listen {
			// Not cancelled: a server that keeps one subscription per
			// session (go-sdk) ends the current one on a listen's
			// cancellation, which may already be the next client's. Its
			// notifications are dropped here, having no route.
			continue
		}
		cancels = append(cancels, jsonrpc.NewNotification(mcp.NotificationCancelled,
			[]byte(`{"requestId":`+id.Raw()+`,"reason":"warden: the client went away"}`)))
	}
	delete(s.owners, c)
	conn := s.conn
	s.mu.Unlock()
	if conn == nil || len(cancels) == 0 {
		return
	}
	// A child that does not read its stdin must not hold up the session's
	// end: the writes wait, at most until the connection closes.
	go func() {
		for _, m := range cancels {
			if err := conn.Write(context.Background(), m); err != nil {
				return
			}
		}
	}()
}

// Close ends the shared connection.
func (s *sharedUpstream) Close() {
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	s.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// sharedConn is one stateless session's view of a sharedUpstream.
type sharedConn struct {
	shared *sharedUpstream
	in     chan *jsonrpc.Message
	done   chan struct{}
	once   sync.Once
}

// deliver hands msg to the session, or drops it if the session has ended.
func (c *sharedConn) deliver(msg *jsonrpc.Message) {
	select {
	case c.in <- msg:
	case <-c.done:
	}
}

// Read implements transport.Conn.
func (c *sharedConn) Read(ctx context.Context) (*jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.done:
		return nil, transport.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements transport.Conn.
func (c *sharedConn) Write(ctx context.Context, msg *jsonrpc.Message) error {
	select {
	case <-c.done:
		return transport.ErrClosed
	default:
	}
	return c.shared.send(ctx, c, msg)
}

// Close implements transport.Conn. It ends this session only; the shared
// connection stays for the others.
func (c *sharedConn) Close() error {
	c.once.Do(func() {
		close(c.done)
		c.shared.release(c)
	})
	return nil
}
