package attack

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// Defaults of the mcp_server binding (OATF §7.1).
const (
	defaultMCPProtocol = "2025-11-25"
	// peerRequestTimeout bounds the wait for a client's answer to a
	// server-initiated request (elicitation, sampling).
	peerRequestTimeout = 60 * time.Second
)

// mcpServer is an adversarial MCP server: it answers from the actor's
// current phase state (tools with response dispatch, resources, prompts),
// sends elicitations and sampling requests when a tool is called, and
// performs on_enter `send` actions (rug pulls through
// notifications/tools/list_changed) on every open session.
type mcpServer struct {
	// Immutable after prepare.
	a      *actor
	mux    *http.ServeMux // nil with stdio
	single bool           // the document's only mcp_server: also served at /mcp
	base   string         // http://host:port, set by Run before prepare
	hs     *transport.HTTPServer
	stdio  transport.Conn

	mu       sync.Mutex // guards the fields below
	sessions map[*mcpSession]struct{}
	// opened and open count the sessions a peer keeps: stdio and stateful
	// HTTP. A stateless POST (a go-sdk client's server/discover probe) is
	// served but ends no run.
	opened, open int
	idle         chan struct{} // signalled when a kept session ends
}

func newMCPServer(a *actor, mux *http.ServeMux, single bool) *mcpServer {
	return &mcpServer{a: a, mux: mux, single: single, sessions: map[*mcpSession]struct{}{}, idle: make(chan struct{}, 1)}
}

func (s *mcpServer) path() string { return "/mcp/" + s.a.name }

func (s *mcpServer) endpoint() string {
	if s.mux == nil {
		return ""
	}
	return s.base + s.path()
}

func (s *mcpServer) prepare(context.Context) error {
	opts := s.a.rt.opts
	if s.mux == nil {
		if opts.Stdin == nil || opts.Stdout == nil {
			return errors.New("stdio server without Stdin and Stdout")
		}
		s.stdio = transport.NewStream(opts.Stdin, opts.Stdout, nil,
			transport.StreamOptions{ReplyInvalid: true, Logger: s.a.rt.log, Name: s.a.name})
		return nil
	}
	s.hs = transport.NewHTTPServer(transport.HTTPServerOptions{Logger: s.a.rt.log,
		OnSession: func(ctx context.Context, conn transport.Conn, info transport.SessionInfo) {
			s.serve(ctx, conn, !info.Stateless)
		}})
	s.mux.Handle(s.path(), s.hs)
	if s.single {
		s.mux.Handle("/mcp", s.hs)
	}
	return nil
}

func (s *mcpServer) run(ctx context.Context) error {
	s.a.start(ctx, s.sendAll)
	if s.stdio != nil {
		s.serve(ctx, s.stdio, true)
		return ctx.Err()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.idle:
			_, _, terminal, _ := s.a.current()
			s.mu.Lock()
			done := terminal && s.opened > 0 && s.open == 0
			s.mu.Unlock()
			if done {
				return nil
			}
		}
	}
}

func (s *mcpServer) close() {
	if s.hs != nil {
		s.hs.Close()
	}
	if s.stdio != nil {
		s.stdio.Close()
	}
}

// sendAll performs an on_enter send: a notification to every open session.
func (s *mcpServer) sendAll(ctx context.Context, method string, params *oatf.Value) {
	s.mu.Lock()
	list := make([]*mcpSession, 0, len(s.sessions))
	for ss := range s.sessions {
		list = append(list, ss)
	}
	s.mu.Unlock()
	for _, ss := range list {
		ss.notify(ctx, method, params)
	}
	if len(list) == 0 {
		s.a.log().Info("attack: send with no open session", "method", method)
	}
}

// serve answers one session until its peer goes away. kept says whether
// the session is one the peer keeps (stdio, stateful HTTP), whose end may
// end the run.
func (s *mcpServer) serve(ctx context.Context, conn transport.Conn, kept bool) {
	ss := &mcpSession{s: s, conn: conn, pending: map[string]chan *jsonrpc.Message{}}
	s.mu.Lock()
	s.sessions[ss] = struct{}{}
	if kept {
		s.opened++
		s.open++
	}
	s.mu.Unlock()
	defer func() {
		conn.Close()
		s.mu.Lock()
		delete(s.sessions, ss)
		if kept {
			s.open--
		}
		s.mu.Unlock()
		if !kept {
			return
		}
		select {
		case s.idle <- struct{}{}:
		default:
		}
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		switch msg.Kind {
		case jsonrpc.KindRequest:
			wg.Add(1)
			go func() { defer wg.Done(); ss.handle(ctx, msg) }()
		case jsonrpc.KindNotification:
			s.a.observe(Request, msg.Method, decodeOrNull(msg.Params), true)
		default:
			ss.deliver(msg)
		}
	}
}

// mcpSession is one client connection to an mcpServer.
type mcpSession struct {
	s    *mcpServer
	conn transport.Conn

	mu      sync.Mutex // guards nextID and pending
	nextID  int64
	pending map[string]chan *jsonrpc.Message // by request id
}

func (ss *mcpSession) notify(ctx context.Context, method string, params *oatf.Value) {
	var raw []byte
	if params != nil {
		raw = encodeJSON(params)
	}
	ss.s.a.observe(Request, method, params, false)
	if err := ss.conn.Write(ctx, jsonrpc.NewNotification(method, raw)); err != nil {
		ss.s.a.log().Warn("attack: send failed", "method", method, "err", err)
	}
}

func (ss *mcpSession) deliver(msg *jsonrpc.Message) {
	ss.mu.Lock()
	ch := ss.pending[msg.ID.Raw()]
	delete(ss.pending, msg.ID.Raw())
	ss.mu.Unlock()
	if ch != nil {
		ch <- msg
	}
}

// call sends a server-initiated request and records the client's answer
// under the request's method, as a response event.
func (ss *mcpSession) call(ctx context.Context, method string, params *oatf.Value) {
	ss.mu.Lock()
	ss.nextID++
	id := jsonrpc.StringID("warden-" + strconv.FormatInt(ss.nextID, 10))
	ch := make(chan *jsonrpc.Message, 1)
	ss.pending[id.Raw()] = ch
	ss.mu.Unlock()
	ss.s.a.observe(Request, method, params, false)
	if err := ss.conn.Write(ctx, jsonrpc.NewRequest(id, method, encodeJSON(params))); err != nil {
		ss.s.a.log().Warn("attack: request to client failed", "method", method, "err", err)
		return
	}
	t := time.NewTimer(peerRequestTimeout)
	defer t.Stop()
	select {
	case msg := <-ch:
		ss.s.a.observe(Response, method, responseContent(msg), true)
	case <-t.C:
		ss.s.a.log().Warn("attack: client did not answer", "method", method)
	case <-ctx.Done():
	}
}

// responseContent is what indicators and triggers see of a response: its
// result, or its error object.
func responseContent(msg *jsonrpc.Message) *oatf.Value {
	if msg.Error != nil {
		m := oatf.NewMap()
		m.Set("code", oatf.NewInt(msg.Error.Code))
		m.Set("message", oatf.NewString(msg.Error.Message))
		if d := decodeOrNull(msg.Error.Data); d != nil {
			m.Set("data", d)
		}
		return m
	}
	return decodeOrNull(msg.Result)
}

// handle answers one request from the state of the phase it arrived in.
func (ss *mcpSession) handle(ctx context.Context, msg *jsonrpc.Message) {
	a := ss.s.a
	params := decodeOrNull(msg.Params)
	if params == nil {
		params = oatf.NewMap()
	}
	_, state, _, _ := a.current()
	a.observe(Request, msg.Method, params, true)
	result, rpcErr := ss.answer(ctx, msg.Method, params, state)
	if rpcErr != nil {
		a.observe(Response, msg.Method, responseContent(jsonrpc.NewErrorResponse(msg.ID, rpcErr)), false)
		ss.conn.Write(ctx, jsonrpc.NewErrorResponse(msg.ID, rpcErr))
		return
	}
	a.observe(Response, msg.Method, result, false)
	if err := ss.conn.Write(ctx, jsonrpc.NewResult(msg.ID, encodeJSON(result))); err != nil {
		a.log().Warn("attack: write response", "method", msg.Method, "err", err)
	}
}

func (ss *mcpSession) answer(ctx context.Context, method string, params, state *oatf.Value) (*oatf.Value, *jsonrpc.Error) {
	a := ss.s.a
	render := func(v *oatf.Value) *oatf.Value { return a.interpolate(v, params, nil) }
	switch method {
	case "initialize":
		r := oatf.NewMap()
		version := state.Get("protocol_version").StringOr("")
		if version == "" {
			version = params.Get("protocolVersion").StringOr(defaultMCPProtocol)
		}
		r.Set("protocolVersion", oatf.NewString(version))
		if c := state.Get("capabilities"); c != nil {
			r.Set("capabilities", render(c))
		} else {
			caps := oatf.NewMap()
			lc := oatf.NewMap()
			lc.Set("listChanged", oatf.NewBool(true))
			caps.Set("tools", lc)
			caps.Set("resources", oatf.NewMap())
			caps.Set("prompts", oatf.NewMap())
			r.Set("capabilities", caps)
		}
		info := state.Get("server_info")
		if info == nil {
			info = oatf.NewMap()
			info.Set("name", oatf.NewString("oatf-server"))
			info.Set("version", oatf.NewString("1.0.0"))
		}
		r.Set("serverInfo", render(info))
		if in := state.Get("instructions"); in != nil {
			r.Set("instructions", render(in))
		}
		return r, nil
	case "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe":
		return oatf.NewMap(), nil
	case "tools/list":
		return listOf("tools", state.Get("tools"), render, "responses"), nil
	case "resources/list":
		return listOf("resources", state.Get("resources"), render, "content"), nil
	case "resources/templates/list":
		return listOf("resourceTemplates", state.Get("resource_templates"), render), nil
	case "prompts/list":
		return listOf("prompts", state.Get("prompts"), render, "responses"), nil
	case "completion/complete":
		r, c := oatf.NewMap(), oatf.NewMap()
		c.Set("values", oatf.NewSeq())
		r.Set("completion", c)
		return r, nil
	case "tools/call":
		tool := findNamed(state.Get("tools"), "name", params.Get("name").StringOr(""))
		if tool == nil {
			return nil, &jsonrpc.Error{Code: -32602, Message: "Unknown tool: " + params.Get("name").StringOr("")}
		}
		ss.peerRequests(ctx, "elicitation/create", state.Get("elicitations"), params)
		ss.peerRequests(ctx, "sampling/createMessage", state.Get("sampling_requests"), params)
		entry := oatf.SelectResponse(items(tool.Get("responses")), params)
		return render(toolResult(entry)), nil
	case "resources/read":
		uri := params.Get("uri").StringOr("")
		res := findNamed(state.Get("resources"), "uri", uri)
		if res == nil {
			return nil, &jsonrpc.Error{Code: -32002, Message: "Resource not found: " + uri}
		}
		item := oatf.NewMap()
		item.Set("uri", oatf.NewString(uri))
		if mt := res.Get("mimeType"); mt != nil {
			item.Set("mimeType", mt)
		}
		for _, m := range pairs(res.Get("content")) {
			item.Set(m.Key, m.Value)
		}
		r := oatf.NewMap()
		r.Set("contents", oatf.NewSeq(item))
		return render(r), nil
	case "prompts/get":
		p := findNamed(state.Get("prompts"), "name", params.Get("name").StringOr(""))
		if p == nil {
			return nil, &jsonrpc.Error{Code: -32602, Message: "Unknown prompt: " + params.Get("name").StringOr("")}
		}
		entry := oatf.SelectResponse(items(p.Get("responses")), params)
		if entry == nil {
			entry = oatf.NewMap()
			entry.Set("messages", oatf.NewSeq())
		} else if c := entry.Get("content"); c != nil && c.Kind == oatf.Map {
			entry = c
		}
		return render(entry), nil
	}
	return nil, &jsonrpc.Error{Code: -32601, Message: "Method not found: " + method}
}

// peerRequests sends each entry whose `when` matches the tool call as a
// server-initiated request (elicitations, sampling), waiting for each answer.
func (ss *mcpSession) peerRequests(ctx context.Context, method string, list, params *oatf.Value) {
	if list == nil {
		return
	}
	for _, e := range items(list) {
		if w := e.Get("when"); w != nil && !oatf.EvaluatePredicate(w, params) {
			continue
		}
		p := e.Clone()
		p.Delete("when")
		ss.call(ctx, method, ss.s.a.interpolate(p, params, nil))
	}
}

// toolResult turns a dispatch entry into a CallToolResult: its content is
// the whole result; a bare list is the result's content list. An isError
// written beside the content (as the public library does) marks the result
// an error unless the content sets isError itself.
func toolResult(entry *oatf.Value) *oatf.Value {
	r := oatf.NewMap()
	if entry == nil {
		r.Set("content", oatf.NewSeq())
		return r
	}
	c := entry.Get("content")
	switch {
	case c == nil:
		r.Set("content", oatf.NewSeq())
	case c.Kind == oatf.Seq:
		r.Set("content", c)
	case c.Kind == oatf.Map:
		r = c.Clone()
	default:
		t := oatf.NewMap()
		t.Set("type", oatf.NewString("text"))
		t.Set("text", c)
		r.Set("content", oatf.NewSeq(t))
	}
	if e := entry.Get("isError"); e != nil && !r.Has("isError") {
		r.Set("isError", e)
	}
	return r
}

// listOf builds {key: [items without the OATF-only fields]}.
func listOf(key string, items *oatf.Value, render func(*oatf.Value) *oatf.Value, drop ...string) *oatf.Value {
	out := oatf.NewSeq()
	if items != nil {
		for _, it := range items.Items {
			c := it.Clone()
			for _, d := range drop {
				c.Delete(d)
			}
			out.Items = append(out.Items, render(c))
		}
	}
	r := oatf.NewMap()
	r.Set(key, out)
	return r
}

func findNamed(list *oatf.Value, key, name string) *oatf.Value {
	if list == nil {
		return nil
	}
	for _, it := range items(list) {
		if it.Get(key).StringOr("") == name {
			return it
		}
	}
	return nil
}
