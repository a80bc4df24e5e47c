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
// A request's progress notifications go to the session whose progress token
// they carry. What cannot be routed on a shared connection is refused: a
// server-to-client request (the stateless revision has none; it uses
// multi-round-trip results instead) is answered with an error, and an
// unaddressed notification is dropped and logged.
//
// mu guards conn, routes, tokens and next. The reader goroutine of a conn
// delivers to sessions after releasing mu.

import (
	"context"
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
	tokens map[string]*sharedConn  // by progress token text; nil when two sessions chose the same token
	owners map[*sharedConn]*owning // what each session has in flight
}

type route struct {
	sess *sharedConn
	orig jsonrpc.ID
}

// owning is what one session has registered, so that it can be removed.
type owning struct {
	ids    map[string]jsonrpc.ID // original id text → id sent upstream
	tokens []string
}

func newSharedUpstream(name string, dial func(context.Context) (transport.Conn, error), log *slog.Logger) *sharedUpstream {
	return &sharedUpstream{name: name, dial: dial, log: log,
		routes: map[string]route{}, tokens: map[string]*sharedConn{}, owners: map[*sharedConn]*owning{}}
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
		s.routes[id.Raw()] = route{sess: c, orig: msg.ID}
		own.ids[msg.ID.Raw()] = id
		if raw, ok := jsonrpc.Lookup(msg.Params, "_meta", "progressToken"); ok {
			tok := jsonrpc.IDFromRaw(raw).Raw()
			if other, taken := s.tokens[tok]; taken && other != c {
				// Two clients chose the same token: routing its progress
				// to either could leak one client's progress to the other.
				s.tokens[tok] = nil
			} else if !taken {
				s.tokens[tok] = c
			}
			own.tokens = append(own.tokens, tok)
		}
		msg = msg.WithID(id)
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
			r.sess.deliver(msg.WithID(r.orig))
		case jsonrpc.KindRequest:
			s.log.Warn("shared upstream: server request refused; stateless sessions cannot answer it", "upstream", s.name, "method", msg.Method)
			_ = conn.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, jsonrpc.Detail{Stage: "relay", Rule: "shared-upstream"}.
				Errorf(jsonrpc.CodeMethodNotFound, "warden: "+msg.Method+" cannot reach a stateless client")))
		default:
			raw, _ := jsonrpc.Lookup(msg.Params, "progressToken")
			s.mu.Lock()
			sess := s.tokens[jsonrpc.IDFromRaw(raw).Raw()]
			s.mu.Unlock()
			if sess == nil {
				s.log.Debug("shared upstream: unaddressed notification dropped", "upstream", s.name, "method", msg.Method)
				continue
			}
			sess.deliver(msg)
		}
	}
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
	s.tokens = map[string]*sharedConn{}
	for _, own := range s.owners {
		clear(own.ids)
		own.tokens = nil
	}
	s.mu.Unlock()
	s.log.Warn("shared upstream ended", "upstream", s.name, "err", err, "pending", len(pending))
	for _, r := range pending {
		r.sess.deliver(jsonrpc.NewErrorResponse(r.orig, jsonrpc.Detail{Stage: "upstream", Rule: "ended"}.
			Errorf(jsonrpc.CodeUpstreamUnavailable, "upstream "+quote(s.name)+" ended")))
	}
}

// release forgets everything session c had in flight.
func (s *sharedUpstream) release(c *sharedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	own := s.owners[c]
	if own == nil {
		return
	}
	for _, id := range own.ids {
		delete(s.routes, id.Raw())
	}
	for _, t := range own.tokens {
		if sess, ok := s.tokens[t]; ok && (sess == c || sess == nil) {
			delete(s.tokens, t)
		}
	}
	delete(s.owners, c)
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
