package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/mcp"
)

// hsSession is what OnSession received, handed to the test, which plays the
// relay on conn.
type hsSession struct {
	ctx  context.Context
	conn Conn
	info SessionInfo
}

// hsListener is an HTTPServer behind an httptest server on 127.0.0.1 whose
// sessions the test drives directly.
type hsListener struct {
	srv      *HTTPServer
	ts       *httptest.Server
	sessions chan hsSession
	done     chan struct{} // closed at cleanup: OnSession returns
}

func newHSListener(t *testing.T, opts HTTPServerOptions) *hsListener {
	t.Helper()
	l := &hsListener{sessions: make(chan hsSession, 64), done: make(chan struct{})}
	// Like a relay, OnSession closes conn when it is done; the test, playing
	// the relay, decides when the session is over.
	opts.OnSession = func(ctx context.Context, conn Conn, info SessionInfo) {
		l.sessions <- hsSession{ctx, conn, info}
		<-l.done
		conn.Close()
	}
	l.srv = NewHTTPServer(opts)
	l.ts = httptest.NewServer(l.srv)
	t.Cleanup(func() {
		close(l.done)
		l.srv.Close()
		l.ts.Close()
	})
	return l
}

// session returns the next session the listener started.
func (l *hsListener) session(t *testing.T) hsSession {
	t.Helper()
	select {
	case s := <-l.sessions:
		return s
	case <-time.After(waitTimeout):
		t.Fatal("no session started")
		return hsSession{}
	}
}

// noSession fails if a session starts within a short while.
func (l *hsListener) noSession(t *testing.T) {
	t.Helper()
	select {
	case s := <-l.sessions:
		t.Fatalf("unexpected session %+v", s.info)
	case <-time.After(50 * time.Millisecond):
	}
}

// request sends an HTTP request with the headers an MCP client sends for
// method; hdr adds to them or, with value "", removes one.
func (l *hsListener) request(t *testing.T, ctx context.Context, method, sid, body string, hdr map[string]string) *http.Response {
	t.Helper()
	resp, err := l.ts.Client().Do(l.newRequest(t, ctx, method, sid, body, hdr))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

func (l *hsListener) newRequest(t *testing.T, ctx context.Context, method, sid, body string, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, l.ts.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if h := hdr["Host"]; h != "" {
		req.Host = h
	}
	return req
}

// postAsync sends a POST in the background and returns a function that
// waits for its response: at a stateless revision the response headers wait
// for the relay's first message.
func (l *hsListener) postAsync(t *testing.T, body string, hdr map[string]string) func() *http.Response {
	t.Helper()
	req := l.newRequest(t, context.Background(), http.MethodPost, "", body, hdr)
	type result struct {
		resp *http.Response
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		resp, err := l.ts.Client().Do(req)
		ch <- result{resp, err}
	}()
	return func() *http.Response {
		t.Helper()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("POST: %v", r.err)
			}
			return r.resp
		case <-time.After(waitTimeout):
			t.Fatal("no response to POST")
			return nil
		}
	}
}

func (l *hsListener) post(t *testing.T, sid, body string, hdr map[string]string) *http.Response {
	t.Helper()
	return l.request(t, context.Background(), http.MethodPost, sid, body, hdr)
}

// initialize opens a stateful session at revision version, answering the
// initialize as the relay, and returns its id and relay side.
func (l *hsListener) initialize(t *testing.T, version string) (string, hsSession) {
	t.Helper()
	resp := l.post(t, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"`+version+
		`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("initialize: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	sid := resp.Header.Get("Mcp-Session-Id")
	if len(sid) != 32 {
		t.Fatalf("session id %q: want 32 hex digits", sid)
	}
	s := l.session(t)
	if s.info.ID != sid || s.info.Stateless || s.info.ProtocolVersion != version {
		t.Fatalf("SessionInfo %+v for session %s", s.info, sid)
	}
	m := mustRead(t, s.conn)
	hsWrite(t, s.conn, jsonrpc.NewResult(m.ID, []byte(`{"protocolVersion":"`+version+`","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)))
	evs := hsEvents(t, resp.Body, 1)
	if !strings.Contains(string(evs[0].Data), `"serverInfo"`) {
		t.Fatalf("initialize response event %s", evs[0].Data)
	}
	return sid, s
}

func hsWrite(t *testing.T, c Conn, m *jsonrpc.Message) {
	t.Helper()
	if err := c.Write(context.Background(), m); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func hsMsg(t *testing.T, raw string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Decode([]byte(raw), jsonrpc.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

// hsSSE reads the data-carrying events of an SSE body.
type hsSSE struct {
	events chan Event
	errc   chan error
}

func newHSSSE(body io.Reader) *hsSSE {
	s := &hsSSE{events: make(chan Event, 64), errc: make(chan error, 1)}
	go func() {
		er := NewEventReader(body, 1<<20)
		for {
			ev, err := er.Next()
			if err != nil {
				s.errc <- err
				close(s.events)
				return
			}
			if len(ev.Data) > 0 { // skip priming events
				s.events <- ev
			}
		}
	}()
	return s
}

// next returns the next event.
func (s *hsSSE) next(t *testing.T) Event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("stream ended: %v", <-s.errc)
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("no event")
		return Event{}
	}
}

// end waits for the stream to end cleanly, failing on any further event.
func (s *hsSSE) end(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %s", ev.Data)
		}
		if err := <-s.errc; err != io.EOF {
			t.Fatalf("stream ended with %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("stream did not end")
	}
}

// quiet fails if an event arrives within a short while.
func (s *hsSSE) quiet(t *testing.T) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if ok {
			t.Fatalf("unexpected event %s", ev.Data)
		}
		t.Fatalf("stream ended: %v", <-s.errc)
	case <-time.After(50 * time.Millisecond):
	}
}

// hsEvents reads n events and then the end of the stream.
func hsEvents(t *testing.T, body io.Reader, n int) []Event {
	t.Helper()
	s := newHSSSE(body)
	var evs []Event
	for range n {
		evs = append(evs, s.next(t))
	}
	s.end(t)
	return evs
}

// hsRPCError decodes a JSON-RPC error response body.
func hsRPCError(t *testing.T, resp *http.Response) (id string, code int64, rule string) {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code int64          `json:"code"`
			Data jsonrpc.Detail `json:"data"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("error body: %v", err)
	}
	return string(body.ID), body.Error.Code, body.Error.Data.Rule
}

func hsStatus(t *testing.T, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %s (%s), want %d", resp.Status, strings.TrimSpace(string(b)), want)
	}
}

const hsNotification = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`

func TestHTTPServerRebindingProtection(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{
		AllowedHosts:   []string{"mcp.internal", "gw.example.com:8443"},
		AllowedOrigins: []string{"https://app.example.com"},
	})
	for _, tc := range []struct {
		name, host, origin string
		rule               string // "" when allowed
	}{
		{"evil host", "evil.example.com", "", "host"},
		{"evil host with port", "evil.example.com:80", "", "host"},
		{"evil origin", "", "http://evil.example.com", "origin"},
		{"both", "evil.example.com", "http://evil.example.com", "host"},
		{"null origin", "", "null", "origin"},
		{"loopback origin, other port", "", "http://localhost:3000", ""},
		{"localhost", "localhost:9", "", ""},
		{"LOCALHOST", "LOCALHOST", "", ""},
		{"ipv6 loopback", "[::1]:8080", "http://[::1]:8080", ""},
		{"allowed host, any port", "MCP.internal:1234", "", ""},
		{"allowed host:port", "gw.example.com:8443", "", ""},
		{"allowed host, other port", "gw.example.com:9999", "", "host"},
		{"allowed origin", "", "https://app.example.com", ""},
		{"origin scheme matters", "", "http://app.example.com", "origin"},
		{"localhost as a subdomain", "localhost.evil.example.com", "", "host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{"Host": tc.host, "Origin": tc.origin}
			resp := l.post(t, "", hsNotification, hdr)
			if tc.rule == "" {
				hsStatus(t, resp, http.StatusAccepted)
				resp.Body.Close()
				l.session(t)
				return
			}
			hsStatus(t, resp, http.StatusForbidden)
			id, code, rule := hsRPCError(t, resp)
			if id != "null" || code != jsonrpc.CodeInvalidRequest || rule != tc.rule {
				t.Fatalf("error id=%s code=%d rule=%q, want null -32600 %q", id, code, rule, tc.rule)
			}
			l.noSession(t)
		})
	}

	t.Run("GET and DELETE too", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodDelete} {
			resp := l.request(t, context.Background(), m, "x", "", map[string]string{"Host": "evil.example.com"})
			hsStatus(t, resp, http.StatusForbidden)
			resp.Body.Close()
		}
	})

	t.Run("InsecureDisableHostCheck", func(t *testing.T) {
		l := newHSListener(t, HTTPServerOptions{InsecureDisableHostCheck: true})
		resp := l.post(t, "", hsNotification, map[string]string{"Host": "evil.example.com", "Origin": "http://evil.example.com"})
		hsStatus(t, resp, http.StatusAccepted)
		resp.Body.Close()
	})
}

func TestHTTPServerStatusCodes(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{Limits: jsonrpc.Limits{MaxBytes: 1024}})
	sid, _ := l.initialize(t, "2025-11-25")
	ctx := context.Background()
	for _, tc := range []struct {
		name, method, sid, body string
		hdr                     map[string]string
		want                    int
		allow                   string
	}{
		{"wrong Content-Type", "POST", sid, hsNotification, map[string]string{"Content-Type": "text/plain"}, 415, ""},
		{"Accept without SSE", "POST", sid, hsNotification, map[string]string{"Accept": "application/json"}, 400, ""},
		{"Accept without JSON", "POST", sid, hsNotification, map[string]string{"Accept": "text/event-stream"}, 400, ""},
		{"Accept */*", "POST", sid, hsNotification, map[string]string{"Accept": "*/*"}, 202, ""},
		{"Content-Type with charset", "POST", sid, hsNotification, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 202, ""},
		{"unknown session", "POST", "0123456789abcdef0123456789abcdef", hsNotification, nil, 404, ""},
		{"unknown legacy revision", "POST", sid, hsNotification, map[string]string{"Mcp-Protocol-Version": "2024-01-01"}, 400, ""},
		{"Last-Event-ID on POST", "POST", sid, hsNotification, map[string]string{"Last-Event-ID": "a_1"}, 400, ""},
		{"GET without session", "GET", "", "", nil, 400, ""},
		{"GET unknown session", "GET", "nope", "", nil, 404, ""},
		{"GET without SSE Accept", "GET", sid, "", map[string]string{"Accept": "application/json"}, 400, ""},
		{"GET at a stateless revision", "GET", "", "", map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, 405, "POST"},
		{"GET with a bad Last-Event-ID", "GET", sid, "", map[string]string{"Last-Event-ID": "garbage"}, 400, ""},
		{"DELETE without session", "DELETE", "", "", nil, 400, ""},
		{"DELETE unknown session", "DELETE", "nope", "", nil, 404, ""},
		{"PUT", "PUT", sid, "", nil, 405, "GET, POST, DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := l.request(t, ctx, tc.method, tc.sid, tc.body, tc.hdr)
			defer resp.Body.Close()
			hsStatus(t, resp, tc.want)
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow %q, want %q", got, tc.allow)
			}
		})
	}

	t.Run("oversize body", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","method":"m","params":{"p":"` + strings.Repeat("x", 2048) + `"}}`
		resp := l.post(t, sid, big, nil)
		hsStatus(t, resp, http.StatusRequestEntityTooLarge)
		if id, code, rule := hsRPCError(t, resp); id != "null" || code != jsonrpc.CodeInvalidRequest || rule != "size" {
			t.Fatalf("error id=%s code=%d rule=%q", id, code, rule)
		}
	})
}

func TestHTTPServerInvalidMessages(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")
	reads := readAsync(context.Background(), s.conn)

	for _, tc := range []struct {
		name, sid, body, wantID string
	}{
		{"duplicate key", sid, `{"jsonrpc":"2.0","id":7,"method":"tools/call","method":"tools/list"}`, "7"},
		{"malformed", sid, `{"jsonrpc":"2.0","id":"a",`, `"a"`},
		{"batch after 2025-03-26", sid, `[{"jsonrpc":"2.0","method":"m"}]`, "null"},
		{"wrong version member", sid, `{"jsonrpc":"1.0","id":1,"method":"m"}`, "1"},
		{"no session, duplicate key", "", `{"jsonrpc":"2.0","id":3,"method":"initialize","method":"tools/call"}`, "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := l.post(t, tc.sid, tc.body, nil)
			hsStatus(t, resp, http.StatusBadRequest)
			id, code, _ := hsRPCError(t, resp)
			if id != tc.wantID || (code != jsonrpc.CodeParseError && code != jsonrpc.CodeInvalidRequest) {
				t.Fatalf("error id=%s code=%d, want id %s and a parse or invalid-request code", id, code, tc.wantID)
			}
		})
	}
	assertBlocked(t, reads, 50*time.Millisecond) // the relay saw none of them
	l.noSession(t)

	// The session is still usable.
	resp := l.post(t, sid, hsNotification, nil)
	hsStatus(t, resp, http.StatusAccepted)
	resp.Body.Close()
	if r := awaitRead(t, reads, "valid message"); r.err != nil || string(r.msg.Raw) != hsNotification {
		t.Fatalf("Read: %v %s", r.err, r.msg.Raw)
	}
}

func TestHTTPServerHeaderChecks(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	call := func(method, params string) string {
		return `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":` + params + `}`
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	toolsCall := call("tools/call", `{"name":"echo",`+meta+`}`)
	for _, tc := range []struct {
		name, body string
		hdr        map[string]string
		ok         bool
	}{
		{"Mcp-Method mismatch", toolsCall, map[string]string{"Mcp-Method": "tools/list", "Mcp-Name": "echo"}, false},
		{"Mcp-Method missing", toolsCall, map[string]string{"Mcp-Name": "echo"}, false},
		{"Mcp-Name mismatch", toolsCall, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "rm"}, false},
		{"Mcp-Name missing", toolsCall, map[string]string{"Mcp-Method": "tools/call"}, false},
		{"resources/read uri", call("resources/read", `{"uri":"file:///a",`+meta+`}`), map[string]string{"Mcp-Method": "resources/read", "Mcp-Name": "file:///b"}, false},
		{"_meta version mismatch", call("tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`), map[string]string{"Mcp-Method": "tools/list"}, false},
		{"matching", toolsCall, map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "echo"}, true},
		{"prompts/get matching", call("prompts/get", `{"name":"p",`+meta+`}`), map[string]string{"Mcp-Method": "prompts/get", "Mcp-Name": "p"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.hdr["Mcp-Protocol-Version"] = "2026-07-28"
			tc.hdr["Mcp-Param-Region"] = "eu"
			wait := l.postAsync(t, tc.body, tc.hdr)
			if !tc.ok {
				resp := wait()
				hsStatus(t, resp, http.StatusBadRequest)
				id, code, rule := hsRPCError(t, resp)
				if id != "5" || code != mcp.CodeHeaderMismatch || rule != "header-mismatch" {
					t.Fatalf("error id=%s code=%d rule=%q", id, code, rule)
				}
				l.noSession(t)
				return
			}
			s := l.session(t)
			if !s.info.Stateless || s.info.ID != "" || s.info.ProtocolVersion != "2026-07-28" {
				t.Fatalf("SessionInfo %+v", s.info)
			}
			m := mustRead(t, s.conn)
			want := map[string][]string{
				"Mcp-Protocol-Version": {"2026-07-28"},
				"Mcp-Method":           {tc.hdr["Mcp-Method"]},
				"Mcp-Name":             {tc.hdr["Mcp-Name"]},
				"Mcp-Param-Region":     {"eu"},
			}
			if len(m.Header) != len(want) {
				t.Fatalf("message Header %v, want %v", m.Header, want)
			}
			for k, v := range want {
				if got := m.Header[k]; len(got) != 1 || got[0] != v[0] {
					t.Fatalf("message Header[%s] = %v, want %v", k, got, v)
				}
			}
			hsWrite(t, s.conn, jsonrpc.NewResult(m.ID, []byte(`{}`)))
			resp := wait()
			hsStatus(t, resp, http.StatusOK)
			defer resp.Body.Close()
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Fatal("stateless POST got a session id")
			}
			hsEvents(t, resp.Body, 1)
			// All requests answered: the stateless session ends.
			if r := awaitRead(t, readAsync(context.Background(), s.conn), "after answer"); !errors.Is(r.err, io.EOF) {
				t.Fatalf("Read after the answer: %v, want io.EOF", r.err)
			}
			select {
			case <-s.ctx.Done():
			case <-time.After(waitTimeout):
				t.Fatal("OnSession's context not cancelled after io.EOF")
			}
		})
	}

	t.Run("missing _meta", func(t *testing.T) {
		resp := l.post(t, "", call("tools/list", `{}`), map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"})
		hsStatus(t, resp, http.StatusBadRequest)
		if id, code, rule := hsRPCError(t, resp); id != "5" || code != jsonrpc.CodeInvalidParams || rule != "request-meta" {
			t.Fatalf("error id=%s code=%d rule=%q", id, code, rule)
		}
		l.noSession(t)
	})
}

// At a stateless revision some error responses set the HTTP status of the
// POST (SEP-2575), as the go-sdk server does; others stream as usual.
func TestHTTPServerStatelessErrorStatus(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	meta := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`
	for _, tc := range []struct {
		method string
		code   int64
		status int
	}{
		{"initialize", jsonrpc.CodeMethodNotFound, http.StatusNotFound}, // no initialize, and no session, at this revision
		{"unknown/method", jsonrpc.CodeMethodNotFound, http.StatusNotFound},
		{"server/discover", codeUnsupportedProtocolVersion, http.StatusBadRequest},
		{"tools/list", jsonrpc.CodeInvalidParams, http.StatusBadRequest},
		{"tools/list", jsonrpc.CodeInternalError, http.StatusOK},
	} {
		t.Run(tc.method, func(t *testing.T) {
			wait := l.postAsync(t, `{"jsonrpc":"2.0","id":9,"method":"`+tc.method+`","params":`+meta+`}`,
				map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": tc.method})
			s := l.session(t)
			if !s.info.Stateless {
				t.Fatalf("SessionInfo %+v", s.info)
			}
			m := mustRead(t, s.conn)
			hsWrite(t, s.conn, jsonrpc.NewErrorResponse(m.ID, &jsonrpc.Error{Code: tc.code, Message: "no"}))
			resp := wait()
			defer resp.Body.Close()
			hsStatus(t, resp, tc.status)
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Fatal("session id issued at a stateless revision")
			}
			if tc.status == http.StatusOK {
				if ev := hsEvents(t, resp.Body, 1)[0]; !strings.Contains(string(ev.Data), `"code":-32603`) {
					t.Fatalf("event %s", ev.Data)
				}
				return
			}
			var body struct {
				ID    int `json:"id"`
				Error struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.ID != 9 || body.Error.Code != tc.code {
				t.Fatalf("body %+v (%v)", body, err)
			}
		})
	}
}

func TestHTTPServerStatelessNotification(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	resp := l.post(t, "", hsNotification, nil)
	hsStatus(t, resp, http.StatusAccepted)
	resp.Body.Close()
	s := l.session(t)
	if !s.info.Stateless || s.info.ID != "" {
		t.Fatalf("SessionInfo %+v", s.info)
	}
	if m := mustRead(t, s.conn); string(m.Raw) != hsNotification {
		t.Fatalf("got %s", m.Raw)
	}
	if _, err := s.conn.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("second Read: %v, want io.EOF", err)
	}
	if err := s.conn.Write(context.Background(), hsMsg(t, hsNotification)); err == nil {
		t.Fatal("Write after the session ended succeeded")
	}
}
