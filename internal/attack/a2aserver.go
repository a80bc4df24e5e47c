package attack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// pushTimeout bounds one send_push_notification entry action.
const pushTimeout = 10 * time.Second

// a2aServer is an adversarial A2A agent (OATF §7.2) served over HTTP:
//
//	GET  <endpoint>/.well-known/agent-card.json   the phase's agent_card (also agent.json)
//	POST <endpoint>                               JSON-RPC, A2A 0.3 or 1.0 method names
//
// at /a2a/<actor>, and also at the root (/.well-known/…, POST /) when it is
// the document's only a2a_server actor.
//
//   - message/send and message/stream (SendMessage, SendStreamingMessage)
//     answer from the phase's task_responses: the first entry whose `when`
//     matches the params (in OATF's vocabulary), else the entry without
//     `when`, else the state's `task` (the public library writes that),
//     else a completed Task. A Task lacking id, contextId, status or kind
//     gets them; content that is not an object is sent raw.
//   - A stream sends the Task (without its artifacts), a status-update,
//     then one artifact-update per artifact; a Message is one item. The
//     status-update is final only when no artifact follows it.
//   - tasks/get, tasks/cancel and tasks/resubscribe know the tasks this
//     actor answered; push notification configs are kept per task; the
//     extended card method serves the card.
//   - A 1.0 request is answered in 1.0 form; the trace and the phase
//     machine see OATF's vocabulary either way (see a2a.go).
//
// A request is answered from the state of the phase it arrived in. The card
// is served as the document writes it, with `url` and `supportedInterfaces`
// added, pointing at this actor, only when the document leaves them out.
type a2aServer struct {
	// Immutable after prepare.
	a      *actor
	mux    *http.ServeMux
	single bool   // the document's only a2a_server: also served at the root
	base   string // http://host:port, set by Run before prepare

	mu       sync.Mutex // guards the fields below
	tasks    map[string]*oatf.Value
	push     map[string][]*oatf.Value // push notification configs by task id
	inflight int
	done     bool          // answered a JSON-RPC request that arrived in the terminal phase
	idle     chan struct{} // signalled when a request ends
}

func newA2AServer(a *actor, mux *http.ServeMux, single bool) *a2aServer {
	return &a2aServer{a: a, mux: mux, single: single, tasks: map[string]*oatf.Value{},
		push: map[string][]*oatf.Value{}, idle: make(chan struct{}, 1)}
}

func (s *a2aServer) path() string { return "/a2a/" + s.a.name }

func (s *a2aServer) endpoint() string { return s.base + s.path() }

func (s *a2aServer) prepare(context.Context) error {
	s.mux.Handle(s.path(), s)
	s.mux.Handle(s.path()+"/.well-known/", s)
	if s.single {
		s.mux.Handle(a2aCardPath, s)
		s.mux.Handle(a2aLegacyCardPath, s)
		s.mux.Handle("POST /{$}", s)
	}
	return nil
}

func (s *a2aServer) close() {}

// run enters the first phase and, in a document without client actors,
// returns once the actor has answered a request in its terminal phase and
// none is in flight (A2A over HTTP has no session whose end would say that
// the peer is done).
func (s *a2aServer) run(ctx context.Context) error {
	s.a.start(ctx, nil)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.idle:
			_, _, terminal, _ := s.a.current()
			s.mu.Lock()
			done := terminal && s.done && s.inflight == 0
			s.mu.Unlock()
			if done {
				return nil
			}
		}
	}
}

func (s *a2aServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, a2aCardPath) || strings.HasSuffix(r.URL.Path, a2aLegacyCardPath) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		s.serveCard(w)
		return
	}
	if r.URL.Path != s.path() && (!s.single || r.URL.Path != "/") {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.serveRPC(w, r)
}

func (s *a2aServer) serveCard(w http.ResponseWriter) {
	_, state, _, _ := s.a.current()
	s.a.observe(Request, a2aCardEvent, oatf.NewMap(), true)
	card := s.card(state, nil)
	s.a.observe(Response, a2aCardEvent, card, false)
	writeJSON(w, encodeJSON(card))
}

// card renders the state's agent_card and adds the endpoint fields the
// document leaves out; a card that is not an object is served raw.
func (s *a2aServer) card(state, request *oatf.Value) *oatf.Value {
	card := s.a.interpolate(state.Get("agent_card"), request, nil)
	if card == nil {
		card = oatf.NewMap()
		setString(card, "name", "oatf-agent")
		setString(card, "description", "")
		setString(card, "version", "1.0.0")
		card.Set("capabilities", oatf.FromAny(map[string]any{"streaming": true}))
		card.Set("defaultInputModes", oatf.NewSeq(oatf.NewString("text/plain")))
		card.Set("defaultOutputModes", oatf.NewSeq(oatf.NewString("text/plain")))
		card.Set("skills", oatf.NewSeq())
	}
	if card.Kind != oatf.Map {
		return card
	}
	if !card.Has("url") {
		setString(card, "url", s.endpoint())
	}
	if !card.Has("supportedInterfaces") {
		iface := oatf.NewMap()
		setString(iface, "url", s.endpoint())
		setString(iface, "protocolBinding", "JSONRPC")
		setString(iface, "protocolVersion", "1.0")
		card.Set("supportedInterfaces", oatf.NewSeq(iface))
	}
	return card
}

// serveRPC answers one JSON-RPC request.
func (s *a2aServer) serveRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, jsonrpc.DefaultMaxBytes+1))
	if err != nil {
		return
	}
	msg, err := jsonrpc.Decode(body, jsonrpc.Limits{})
	if err != nil {
		rpcErr := &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()}
		errors.As(err, &rpcErr)
		writeJSON(w, jsonrpc.EncodeErrorResponse(jsonrpc.ID{}, rpcErr))
		return
	}
	name, v10 := a2aOATFMethod(msg.Method)
	params := a2aParamsOATF(name, decodeOrNull(msg.Params))
	if msg.Kind != jsonrpc.KindRequest {
		if msg.Kind == jsonrpc.KindNotification {
			s.a.observe(Request, name, params, true)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	_, state, terminal, _ := s.a.current()
	defer s.finished(terminal)

	s.a.observe(Request, name, params, true)
	if a2aStreaming(name) {
		stream, rpcErr := s.stream(name, params, state)
		if rpcErr != nil {
			s.replyError(w, msg.ID, name, rpcErr)
			return
		}
		// The items are known at once: the stream is written whole, with
		// its length, so that it is on the wire before finished says so.
		var b bytes.Buffer
		for _, it := range stream {
			s.a.observe(Response, name, it, false)
			wire := it
			if v10 {
				wire = a2aResult10(name, it)
			}
			transport.WriteEvent(&b, transport.Event{Data: a2aEnvelope(msg.ID.Raw(), wire)})
		}
		w.Header().Set("Cache-Control", "no-cache")
		writeBody(w, "text/event-stream", b.Bytes())
		return
	}
	result, rpcErr := s.answer(name, params, state)
	if rpcErr != nil {
		s.replyError(w, msg.ID, name, rpcErr)
		return
	}
	s.a.observe(Response, name, result, false)
	if v10 {
		result = a2aResult10(name, result)
	}
	writeJSON(w, a2aEnvelope(msg.ID.Raw(), result))
}

// finished ends a request and wakes run, which may then end the run and
// close the listener: every answer is written with its length and flushed
// (writeBody) before this runs, so that closing cannot cut it short.
func (s *a2aServer) finished(terminal bool) {
	s.mu.Lock()
	s.inflight--
	s.done = s.done || terminal
	s.mu.Unlock()
	select {
	case s.idle <- struct{}{}:
	default:
	}
}

func (s *a2aServer) replyError(w http.ResponseWriter, id jsonrpc.ID, name string, e *jsonrpc.Error) {
	s.a.observe(Response, name, responseContent(jsonrpc.NewErrorResponse(id, e)), false)
	writeJSON(w, jsonrpc.EncodeErrorResponse(id, e))
}

func writeJSON(w http.ResponseWriter, b []byte) { writeBody(w, "application/json", b) }

// writeBody writes a whole answer with its Content-Length and flushes it to
// the connection.
func writeBody(w http.ResponseWriter, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	http.NewResponseController(w).Flush()
}

func errTaskNotFound(id string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: -32001, Message: "Task not found: " + id}
}

// answer computes the result of a non-streaming method.
func (s *a2aServer) answer(name string, params, state *oatf.Value) (*oatf.Value, *jsonrpc.Error) {
	id := params.Get("id").StringOr("")
	switch name {
	case "message/send":
		return s.reply(params, state), nil
	case "tasks/get":
		if t := s.task(id); t != nil {
			return t, nil
		}
		return nil, errTaskNotFound(id)
	case "tasks/cancel":
		t := s.task(id)
		if t == nil {
			return nil, errTaskNotFound(id)
		}
		st := oatf.NewMap()
		setString(st, "state", "canceled")
		t.Set("status", st)
		s.remember(t)
		return t, nil
	case "tasks/pushNotificationConfig/set":
		task := params.Get("taskId").StringOr(id)
		s.mu.Lock()
		s.push[task] = append(s.push[task], params)
		s.mu.Unlock()
		return params, nil
	case "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list":
		s.mu.Lock()
		configs := s.push[id]
		s.mu.Unlock()
		if name == "tasks/pushNotificationConfig/list" {
			return oatf.NewSeq(configs...), nil
		}
		if len(configs) == 0 {
			return nil, errTaskNotFound(id)
		}
		return configs[len(configs)-1], nil
	case "tasks/pushNotificationConfig/delete":
		s.mu.Lock()
		delete(s.push, id)
		s.mu.Unlock()
		return oatf.NewNull(), nil
	case "agent/getAuthenticatedExtendedCard":
		return s.card(state, params), nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found: " + name}
}

// stream computes the items of a streaming method.
func (s *a2aServer) stream(name string, params, state *oatf.Value) ([]*oatf.Value, *jsonrpc.Error) {
	if name == "tasks/resubscribe" {
		id := params.Get("id").StringOr("")
		t := s.task(id)
		if t == nil {
			return nil, errTaskNotFound(id)
		}
		return a2aStreamItems(t), nil
	}
	return a2aStreamItems(s.reply(params, state)), nil
}

// reply dispatches message/send and message/stream on task_responses.
func (s *a2aServer) reply(params, state *oatf.Value) *oatf.Value {
	var content *oatf.Value
	if entry := oatf.SelectResponse(items(state.Get("task_responses")), params); entry != nil {
		content = entry.Get("content")
	} else {
		content = state.Get("task")
	}
	r := a2aReply(s.a.interpolate(content, params, nil), params)
	if r.Kind == oatf.Map && r.Get("kind").StringOr("") == "task" {
		s.remember(r)
	}
	return r
}

func (s *a2aServer) task(id string) *oatf.Value {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tasks[id]; t != nil {
		return t.Clone()
	}
	return nil
}

func (s *a2aServer) remember(t *oatf.Value) {
	if id := t.Get("id").StringOr(""); id != "" {
		s.mu.Lock()
		s.tasks[id] = t.Clone()
		s.mu.Unlock()
	}
}

// a2aReply turns rendered dispatch content into a result in OATF's
// vocabulary. An object is a Message when its kind says so or when it has
// parts and no status or artifacts; otherwise a Task. Missing ids, kind and
// (for a Task) status are added. nil becomes a completed Task; content that
// is not an object is returned as it is.
func a2aReply(content, params *oatf.Value) *oatf.Value {
	if content == nil {
		content = oatf.NewMap()
	}
	if content.Kind != oatf.Map {
		return content
	}
	c := content.Clone()
	kind := c.Get("kind").StringOr("")
	if kind == "message" || (kind == "" && c.Has("parts") && !c.Has("status") && !c.Has("artifacts")) {
		if !c.Has("messageId") {
			setString(c, "messageId", "msg-"+randomID())
		}
		if !c.Has("role") {
			setString(c, "role", "agent")
		}
		if !c.Has("kind") {
			setString(c, "kind", "message")
		}
		return c
	}
	if !c.Has("id") {
		setString(c, "id", "task-"+randomID())
	}
	if !c.Has("contextId") {
		ctxID := params.Get("message").Get("contextId").StringOr("")
		if ctxID == "" {
			ctxID = "ctx-" + randomID()
		}
		setString(c, "contextId", ctxID)
	}
	if !c.Has("status") {
		st := oatf.NewMap()
		setString(st, "state", "completed")
		c.Set("status", st)
	}
	if !c.Has("kind") {
		setString(c, "kind", "task")
	}
	return c
}

// a2aStreamItems splits a result into the items of a stream: a Task
// (without its artifacts), its status-update, then an artifact-update per
// artifact. Anything else is one item.
func a2aStreamItems(r *oatf.Value) []*oatf.Value {
	if r.Kind != oatf.Map || r.Get("kind").StringOr("") != "task" {
		return []*oatf.Value{r}
	}
	task := r.Clone()
	arts := items(task.Get("artifacts"))
	task.Delete("artifacts")
	out := []*oatf.Value{task}
	ids := func(kind string) *oatf.Value {
		u := oatf.NewMap()
		setString(u, "kind", kind)
		u.Set("taskId", r.Get("id"))
		u.Set("contextId", r.Get("contextId"))
		return u
	}
	if st := r.Get("status"); st != nil {
		u := ids("status-update")
		u.Set("status", st)
		u.Set("final", oatf.NewBool(len(arts) == 0 && a2aTerminal(st.Get("state").StringOr(""))))
		out = append(out, u)
	}
	for i, a := range arts {
		u := ids("artifact-update")
		u.Set("artifact", a)
		u.Set("lastChunk", oatf.NewBool(i == len(arts)-1))
		out = append(out, u)
	}
	return out
}

// pushNotification performs a send_push_notification entry action (A2A):
// it POSTs the payload as JSON to the url, and records it in the trace as a
// push_notification/send request.
func (a *actor) pushNotification(ctx context.Context, v *oatf.Value) {
	if a.protocol != "a2a" {
		a.log().Warn("attack: send_push_notification is an A2A action", "mode", a.mode)
		return
	}
	url := v.Get("url").StringOr("")
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		a.log().Warn("attack: send_push_notification needs an http(s) url", "url", url)
		return
	}
	payload := v.Get("payload")
	a.observe(Request, a2aPushEvent, payload, false)
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(encodeJSON(payload)))
	if err != nil {
		a.log().Warn("attack: send_push_notification", "err", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.rt.http.Do(req)
	if err != nil {
		a.log().Warn("attack: send_push_notification", "url", url, "err", err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		a.log().Warn("attack: send_push_notification", "url", url, "err", fmt.Errorf("HTTP %d", resp.StatusCode))
	}
}
