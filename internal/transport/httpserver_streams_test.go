package transport

// Tests of the streams of stateful sessions: routing of what the relay
// writes, the pending buffer, resumption, and how sessions end.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

func TestHTTPServerRouting(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")
	ctx := context.Background()

	get := l.request(t, ctx, http.MethodGet, sid, "", nil)
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	standalone := newHSSSE(get.Body)
	second := l.request(t, ctx, http.MethodGet, sid, "", nil)
	hsStatus(t, second, http.StatusConflict) // one standalone stream per session
	second.Body.Close()

	respA := l.post(t, sid, `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}`, nil)
	defer respA.Body.Close()
	reqA := mustRead(t, s.conn)
	if reqA.Header["Mcp-Protocol-Version"] != nil {
		t.Fatalf("Header %v: the client sent no MCP headers", reqA.Header)
	}
	respB := l.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"other"}}`, nil)
	defer respB.Body.Close()
	reqB := mustRead(t, s.conn)
	streamA, streamB := newHSSSE(respA.Body), newHSSSE(respB.Body)

	related := hsMsg(t, `{"jsonrpc":"2.0","id":900,"method":"elicitation/create","params":{"message":"?"}}`)
	related.Related = reqA.ID
	hsWrite(t, s.conn, related)
	hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}}`))
	hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`))
	hsWrite(t, s.conn, jsonrpc.NewResult(reqB.ID, []byte(`{"b":true}`)))

	if ev := streamA.next(t); !strings.Contains(string(ev.Data), `"elicitation/create"`) {
		t.Fatalf("stream A got %s, want the related request", ev.Data)
	}
	if ev := streamA.next(t); !strings.Contains(string(ev.Data), `"progressToken":"tok"`) {
		t.Fatalf("stream A got %s, want the progress notification", ev.Data)
	}
	if ev := standalone.next(t); !strings.Contains(string(ev.Data), "list_changed") {
		t.Fatalf("standalone stream got %s", ev.Data)
	}
	if ev := streamB.next(t); !strings.Contains(string(ev.Data), `"b":true`) {
		t.Fatalf("stream B got %s", ev.Data)
	}
	streamB.end(t) // its only request is answered

	// The client answers the related request on a POST of its own: 202,
	// and the relay reads it.
	ack := l.post(t, sid, `{"jsonrpc":"2.0","id":900,"result":{"action":"accept"}}`, nil)
	hsStatus(t, ack, http.StatusAccepted)
	ack.Body.Close()
	if m := mustRead(t, s.conn); m.Kind != jsonrpc.KindResponse || m.ID.Raw() != "900" {
		t.Fatalf("relay read %s", m.Raw)
	}

	hsWrite(t, s.conn, jsonrpc.NewResult(reqA.ID, []byte(`{"a":true}`)))
	if ev := streamA.next(t); !strings.Contains(string(ev.Data), `"a":true`) || !strings.HasSuffix(ev.ID, "_3") {
		t.Fatalf("stream A got %s (id %s), want the response as event 3", ev.Data, ev.ID)
	}
	streamA.end(t)

	// A response to nothing pending goes nowhere; the session carries on.
	hsWrite(t, s.conn, jsonrpc.NewResult(reqA.ID, []byte(`{"again":true}`)))
	standalone.quiet(t)
}

func TestHTTPServerPendingBuffer(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{EventBuffer: 4})
	sid, s := l.initialize(t, "2025-06-18")
	note := func(i int) *jsonrpc.Message {
		return hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"i":`+jsonNum(i)+`}}`)
	}

	// One POST stream open and no GET: unrelated messages go to that stream.
	resp := l.post(t, sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	defer resp.Body.Close()
	req1 := mustRead(t, s.conn)
	only := newHSSSE(resp.Body)
	hsWrite(t, s.conn, note(0))
	if ev := only.next(t); !strings.Contains(string(ev.Data), `"i":0`) {
		t.Fatalf("only POST stream got %s", ev.Data)
	}

	// Two POST streams open: they wait in the pending buffer, which keeps
	// the newest EventBuffer of them.
	resp2 := l.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil)
	defer resp2.Body.Close()
	req2 := mustRead(t, s.conn)
	other := newHSSSE(resp2.Body)
	for i := 1; i <= 6; i++ {
		hsWrite(t, s.conn, note(i))
	}
	only.quiet(t)
	other.quiet(t)

	get := l.request(t, context.Background(), http.MethodGet, sid, "", nil)
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	standalone := newHSSSE(get.Body)
	for i := 3; i <= 6; i++ {
		if ev := standalone.next(t); !strings.Contains(string(ev.Data), `"i":`+jsonNum(i)) {
			t.Fatalf("pending message %d: got %s", i, ev.Data)
		}
	}
	standalone.quiet(t)
	hsWrite(t, s.conn, jsonrpc.NewResult(req1.ID, []byte(`{}`)))
	hsWrite(t, s.conn, jsonrpc.NewResult(req2.ID, []byte(`{}`)))
	only.next(t)
	only.end(t)
	other.next(t)
	other.end(t)
}

func TestHTTPServerResumption(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")

	ctx, drop := context.WithCancel(context.Background())
	resp := l.request(t, ctx, http.MethodPost, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long"}}`, nil)
	req := mustRead(t, s.conn)
	first := newHSSSE(resp.Body)
	hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":1}}`))
	ev := first.next(t)
	if !strings.Contains(string(ev.Data), `"n":1`) || ev.ID == "" {
		t.Fatalf("first event %s (id %q)", ev.Data, ev.ID)
	}
	drop() // the connection breaks
	resp.Body.Close()

	hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":2}}`))
	hsWrite(t, s.conn, jsonrpc.NewResult(req.ID, []byte(`{"done":true}`)))

	get := l.request(t, context.Background(), http.MethodGet, sid, "", map[string]string{"Last-Event-ID": ev.ID})
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	rest := hsEvents(t, get.Body, 2) // and then the stream ends: its request is answered
	if !strings.Contains(string(rest[0].Data), `"n":2`) || !strings.Contains(string(rest[1].Data), `"done":true`) {
		t.Fatalf("resumed events %s, %s", rest[0].Data, rest[1].Data)
	}

	// Replaying again from the start of the stream works too.
	sidOf, _, _ := strings.Cut(ev.ID, "_")
	again := l.request(t, context.Background(), http.MethodGet, sid, "", map[string]string{"Last-Event-ID": sidOf + "_0"})
	hsStatus(t, again, http.StatusOK)
	defer again.Body.Close()
	if evs := hsEvents(t, again.Body, 3); evs[0].ID != ev.ID {
		t.Fatalf("replay from 0 starts at %q, want %q", evs[0].ID, ev.ID)
	}

	unknown := l.request(t, context.Background(), http.MethodGet, sid, "", map[string]string{"Last-Event-ID": "feedfeedfeedfeed_1"})
	hsStatus(t, unknown, http.StatusBadRequest)
	unknown.Body.Close()
}

// hsWriteCounter counts the writes made on the connections it accepts.
type hsWriteCounter struct {
	net.Listener
	writes *atomic.Int64
}

func (l hsWriteCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return hsCountingConn{c, l.writes}, nil
}

type hsCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c hsCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// The answer to a POST carrying one request holds its stream back for
// OpenWait: a response that comes within it goes out in one write, with the
// headers and the priming event, and the bytes are those of a stream opened
// at once (which takes two writes: the opening, then the response with the
// end of the stream).
func TestHTTPServerHeldAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wait   time.Duration
		writes int64
	}{
		{"held", waitTimeout, 1},
		{"opened at once", -1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var writes atomic.Int64
			sessions := make(chan hsSession, 4)
			done := make(chan struct{})
			srv := NewHTTPServer(HTTPServerOptions{OpenWait: tc.wait, OnSession: func(ctx context.Context, conn Conn, info SessionInfo) {
				sessions <- hsSession{ctx, conn, info}
				<-done
				conn.Close()
			}})
			ts := httptest.NewUnstartedServer(srv)
			ts.Listener = hsWriteCounter{ts.Listener, &writes}
			ts.Start()
			t.Cleanup(func() { close(done); srv.Close(); ts.Close() })
			l := &hsListener{srv: srv, ts: ts, sessions: sessions}

			// post sends body and plays the relay, answering with reply;
			// it returns the whole answer and the writes it took.
			var s *hsSession
			post := func(sid, body string, reply func(*jsonrpc.Message) []*jsonrpc.Message) (*http.Response, string, int64) {
				t.Helper()
				before := writes.Load()
				wait := l.postAsync(t, body, map[string]string{"Mcp-Session-Id": sid})
				if s == nil {
					ns := l.session(t)
					s = &ns
				}
				for _, m := range reply(mustRead(t, s.conn)) {
					hsWrite(t, s.conn, m)
				}
				resp := wait()
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Fatalf("Content-Type %q", ct)
				}
				return resp, string(data), writes.Load() - before
			}

			initResult := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
			resp, body, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
				func(*jsonrpc.Message) []*jsonrpc.Message { return []*jsonrpc.Message{hsMsg(t, initResult)} })
			sid := resp.Header.Get("Mcp-Session-Id")
			if len(sid) != 32 {
				t.Fatalf("session id %q", sid)
			}
			stream, _, _ := strings.Cut(strings.TrimPrefix(body, "id: "), "_")
			if want := "id: " + stream + "_0\ndata: \n\nid: " + stream + "_1\ndata: " + initResult + "\n\n"; body != want {
				t.Fatalf("initialize answer\n%q\nwant\n%q", body, want)
			}

			result := `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
			_, body, n := post(sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
				func(*jsonrpc.Message) []*jsonrpc.Message { return []*jsonrpc.Message{hsMsg(t, result)} })
			stream, _, _ = strings.Cut(strings.TrimPrefix(body, "id: "), "_")
			if want := "id: " + stream + "_0\ndata: \n\nid: " + stream + "_1\ndata: " + result + "\n\n"; body != want {
				t.Fatalf("answer\n%q\nwant\n%q", body, want)
			}
			if n != tc.writes {
				t.Errorf("the answer took %d writes, want %d", n, tc.writes)
			}
		})
	}
}

// Once OpenWait has passed without an answer, the stream opens, priming
// event first, so that the client can resume it.
func TestHTTPServerOpenWaitExpires(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{OpenWait: time.Millisecond})
	sid, s := l.initialize(t, "2025-11-25") // answered after the headers came: SSE
	resp := l.post(t, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long"}}`, nil)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	body := bufio.NewReader(resp.Body)
	if first, err := body.ReadString('\n'); err != nil || !strings.HasPrefix(first, "id: ") {
		t.Fatalf("stream starts with %q (%v), want the priming event's id", first, err)
	}
	req := mustRead(t, s.conn)
	hsWrite(t, s.conn, jsonrpc.NewResult(req.ID, []byte(`{"done":true}`)))
	if ev := hsEvents(t, body, 1)[0]; !strings.Contains(string(ev.Data), `"done":true`) {
		t.Fatalf("event %s", ev.Data)
	}
}

func TestHTTPServerDelete(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")
	reads := readAsync(context.Background(), s.conn)
	resp := l.request(t, context.Background(), http.MethodDelete, sid, "", nil)
	hsStatus(t, resp, http.StatusNoContent)
	resp.Body.Close()
	if r := awaitRead(t, reads, "after DELETE"); !errors.Is(r.err, io.EOF) {
		t.Fatalf("Read after DELETE: %v, want io.EOF", r.err)
	}
	select {
	case <-s.ctx.Done():
	case <-time.After(waitTimeout):
		t.Fatal("OnSession's context not cancelled")
	}
	again := l.post(t, sid, hsNotification, nil)
	hsStatus(t, again, http.StatusNotFound)
	again.Body.Close()
}

func TestHTTPServerIdleTimeout(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{SessionIdleTimeout: 100 * time.Millisecond})
	sid, s := l.initialize(t, "2025-11-25")

	// An open stream keeps the session alive past the timeout.
	get := l.request(t, context.Background(), http.MethodGet, sid, "", nil)
	hsStatus(t, get, http.StatusOK)
	reads := readAsync(context.Background(), s.conn)
	assertBlocked(t, reads, 300*time.Millisecond)
	get.Body.Close()

	if r := awaitRead(t, reads, "idle"); !errors.Is(r.err, io.EOF) {
		t.Fatalf("Read after idle timeout: %v, want io.EOF", r.err)
	}
	resp := l.post(t, sid, hsNotification, nil)
	hsStatus(t, resp, http.StatusNotFound)
	resp.Body.Close()
}

func TestHTTPServerCloseEndsSessions(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	_, s := l.initialize(t, "2025-11-25")
	reads := readAsync(context.Background(), s.conn)
	l.srv.Close()
	if r := awaitRead(t, reads, "after Close"); !errors.Is(r.err, io.EOF) {
		t.Fatalf("Read after HTTPServer.Close: %v, want io.EOF", r.err)
	}
	resp := l.post(t, "", hsNotification, nil)
	hsStatus(t, resp, http.StatusServiceUnavailable)
	resp.Body.Close()
}

func TestHTTPServerConnClose(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")
	resp := l.post(t, sid, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	defer resp.Body.Close()
	mustRead(t, s.conn)
	stream := newHSSSE(resp.Body)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { s.conn.Close() })
	}
	wg.Wait()
	stream.end(t) // the relay gave up: the open stream ends
	if _, err := s.conn.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v, want ErrClosed", err)
	}
	if err := s.conn.Write(context.Background(), hsMsg(t, hsNotification)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v, want ErrClosed", err)
	}
	again := l.post(t, sid, hsNotification, nil)
	hsStatus(t, again, http.StatusNotFound)
	again.Body.Close()
}

func TestHTTPServerConcurrentWrites(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-06-18")
	get := l.request(t, context.Background(), http.MethodGet, sid, "", nil)
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	stream := newHSSSE(get.Body) // the GET holds the standalone stream once its headers are out

	const writers, each = 8, 50
	msgs := make([][]*jsonrpc.Message, writers)
	for w := range writers {
		for i := range each {
			msgs[w] = append(msgs[w], hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"w":`+
				jsonNum(w)+`,"i":`+jsonNum(i)+`}}`))
		}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, m := range msgs[w] {
				if err := s.conn.Write(context.Background(), m); err != nil {
					t.Error(err)
				}
			}
		})
	}
	seen := make(map[string]bool)
	for range writers * each {
		ev := stream.next(t)
		if seen[string(ev.Data)] {
			t.Fatalf("duplicate event %s", ev.Data)
		}
		seen[string(ev.Data)] = true
	}
	wg.Wait()
}

func jsonNum(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestHTTPServerBatch(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-03-26") // the one revision with batches
	resp := l.post(t, sid, `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},`+
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}},`+
		`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}]`, nil)
	hsStatus(t, resp, http.StatusOK)
	defer resp.Body.Close()
	var got []*jsonrpc.Message
	for range 3 {
		got = append(got, mustRead(t, s.conn))
	}
	if got[0].Method != "tools/list" || got[1].Kind != jsonrpc.KindNotification || got[2].Method != "prompts/list" {
		t.Fatalf("relay read %s, %s, %s", got[0].Raw, got[1].Raw, got[2].Raw)
	}

	// A request id already in flight is refused.
	dup := l.post(t, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, nil)
	hsStatus(t, dup, http.StatusBadRequest)
	if id, code, rule := hsRPCError(t, dup); id != "2" || code != jsonrpc.CodeInvalidRequest || rule != "duplicate-id" {
		t.Fatalf("error id=%s code=%d rule=%q", id, code, rule)
	}

	stream := newHSSSE(resp.Body)
	hsWrite(t, s.conn, jsonrpc.NewResult(got[2].ID, []byte(`{"prompts":[]}`)))
	if ev := stream.next(t); !strings.Contains(string(ev.Data), "prompts") {
		t.Fatalf("got %s", ev.Data)
	}
	stream.quiet(t) // one request still unanswered
	hsWrite(t, s.conn, jsonrpc.NewResult(got[0].ID, []byte(`{"tools":[]}`)))
	stream.next(t)
	stream.end(t)
}

// A client resuming a stream takes it over from a request the server still
// thinks is connected.
func TestHTTPServerResumeTakesOver(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{})
	sid, s := l.initialize(t, "2025-11-25")
	resp := l.post(t, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long"}}`, nil)
	defer resp.Body.Close()
	req := mustRead(t, s.conn)
	old := newHSSSE(resp.Body)
	hsWrite(t, s.conn, hsMsg(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":1}}`))
	ev := old.next(t)

	get := l.request(t, context.Background(), http.MethodGet, sid, "", map[string]string{"Last-Event-ID": ev.ID})
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	resumed := newHSSSE(get.Body)
	old.end(t) // the old request lets go

	hsWrite(t, s.conn, jsonrpc.NewResult(req.ID, []byte(`{"done":true}`)))
	if ev := resumed.next(t); !strings.Contains(string(ev.Data), `"done":true`) {
		t.Fatalf("resumed stream got %s", ev.Data)
	}
	resumed.end(t)
}

// Event ids are "<16 hex digits>_<seq>" and parse back; anything else (as a
// client may send in Last-Event-ID) names no stream.
func TestEventIDs(t *testing.T) {
	const sid = 0x0123456789abcdef
	id := string(appendEventID(nil, sid, 42))
	if id != "0123456789abcdef_42" {
		t.Fatalf("event id %q", id)
	}
	if s, seq, ok := parseEventID(id); !ok || s != sid || seq != 42 {
		t.Fatalf("parseEventID(%q) = %x, %d, %t", id, s, seq, ok)
	}
	for _, bad := range []string{"", "_1", "0123456789abcdef", "0123456789ABCDEF_1", "123456789abcdef_1",
		"00123456789abcdef_1", "0123456789abcdeg_1", "0123456789abcdef_", "0123456789abcdef_x", "0123456789abcdef_1_2"} {
		if _, _, ok := parseEventID(bad); ok {
			t.Errorf("parseEventID(%q) accepted it", bad)
		}
	}
}
