package transport

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

const limitsInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// relayingListener is an HTTPServer on 127.0.0.1 whose OnSession plays a
// relay that answers every request and returns once the session ends, as the
// gateway's does, so that a session's end gives its room back. running counts
// the OnSession calls in progress.
func relayingListener(t *testing.T, opts HTTPServerOptions) (l *hsListener, running *atomic.Int32) {
	t.Helper()
	running = new(atomic.Int32)
	l = &hsListener{sessions: make(chan hsSession, 64), done: make(chan struct{})}
	opts.OnSession = func(ctx context.Context, conn Conn, info SessionInfo) {
		running.Add(1)
		defer running.Add(-1)
		defer conn.Close()
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if m.IsCall() {
				_ = conn.Write(ctx, jsonrpc.NewResult(m.ID,
					[]byte(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)))
			}
		}
	}
	l.srv = NewHTTPServer(opts)
	l.ts = httptest.NewServer(l.srv)
	t.Cleanup(func() {
		l.srv.Close()
		l.ts.Close()
	})
	return l, running
}

// open initializes a session with the headers hdr and returns its id.
func openLimited(t *testing.T, l *hsListener, hdr map[string]string) string {
	t.Helper()
	resp := l.post(t, "", limitsInitialize, hdr)
	hsStatus(t, resp, http.StatusOK)
	defer resp.Body.Close()
	hsEvents(t, resp.Body, 1)
	return resp.Header.Get("Mcp-Session-Id")
}

// reopenLimited initializes a session once a limit that refused one has room
// again: the room comes back when the ended session's OnSession returns,
// just after the DELETE that ended it was answered.
func reopenLimited(t *testing.T, l *hsListener, hdr map[string]string) string {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		resp := l.post(t, "", limitsInitialize, hdr)
		if resp.StatusCode != http.StatusServiceUnavailable {
			hsStatus(t, resp, http.StatusOK)
			defer resp.Body.Close()
			hsEvents(t, resp.Body, 1)
			return resp.Header.Get("Mcp-Session-Id")
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("no room for a session after one ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func deleteSession(t *testing.T, l *hsListener, sid string, hdr map[string]string) {
	t.Helper()
	resp := l.request(t, context.Background(), http.MethodDelete, sid, "", hdr)
	hsStatus(t, resp, http.StatusNoContent)
	resp.Body.Close()
}

// assertBusy checks a refusal for a limit: 503, Retry-After, and a JSON-RPC
// error with CodeBusy, rule and the request's id.
func assertBusy(t *testing.T, resp *http.Response, rule, id string) {
	t.Helper()
	hsStatus(t, resp, http.StatusServiceUnavailable)
	if ra := resp.Header.Get("Retry-After"); ra != "5" {
		t.Errorf("Retry-After %q, want \"5\"", ra)
	}
	gotID, code, gotRule := hsRPCError(t, resp)
	if code != CodeBusy || gotRule != rule || gotID != id {
		t.Fatalf("refusal id %s code %d rule %q, want id %s code %d rule %q", gotID, code, gotRule, id, CodeBusy, rule)
	}
}

func TestHTTPServerSessionLimit(t *testing.T) {
	l, running := relayingListener(t, HTTPServerOptions{Sessions: NewSessionLimits(3, 100)})
	var sids []string
	for range 3 {
		sids = append(sids, openLimited(t, l, nil))
	}

	// The fourth session is refused before it starts anything.
	assertBusy(t, l.post(t, "", limitsInitialize, nil), RuleSessionLimit, "0")
	// A request without a session would be a stateless session: refused too.
	assertBusy(t, l.post(t, "", `{"jsonrpc":"2.0","id":5,"method":"ping"}`, nil), RuleSessionLimit, "5")
	if n := running.Load(); n != 3 {
		t.Fatalf("%d sessions running, want 3: a refused one was started", n)
	}
	// The sessions held go on working.
	resp := l.post(t, sids[1], `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil)
	hsStatus(t, resp, http.StatusOK)
	hsEvents(t, resp.Body, 1)
	resp.Body.Close()

	deleteSession(t, l, sids[0], nil)
	reopenLimited(t, l, nil)
	assertBusy(t, l.post(t, "", limitsInitialize, nil), RuleSessionLimit, "0")
}

func TestHTTPServerSessionLimitPerPrincipal(t *testing.T) {
	t.Run("authenticated", func(t *testing.T) {
		l, running := relayingListener(t, HTTPServerOptions{
			Sessions: NewSessionLimits(10, 2),
			Authenticate: func(r *http.Request) (string, *AuthRefusal) {
				return r.Header.Get("X-Client"), nil
			},
		})
		alice := map[string]string{"X-Client": "alice"}
		bob := map[string]string{"X-Client": "bob"}
		first := openLimited(t, l, alice)
		openLimited(t, l, alice)
		assertBusy(t, l.post(t, "", limitsInitialize, alice), RulePrincipalSessionLimit, "0")
		// Another principal is not held back by alice's sessions.
		openLimited(t, l, bob)
		openLimited(t, l, bob)
		assertBusy(t, l.post(t, "", limitsInitialize, bob), RulePrincipalSessionLimit, "0")
		if n := running.Load(); n != 4 {
			t.Fatalf("%d sessions running, want 4", n)
		}
		deleteSession(t, l, first, alice)
		reopenLimited(t, l, alice)
	})
	t.Run("per address without authentication", func(t *testing.T) {
		l, _ := relayingListener(t, HTTPServerOptions{Sessions: NewSessionLimits(10, 2)})
		openLimited(t, l, nil)
		openLimited(t, l, nil)
		assertBusy(t, l.post(t, "", limitsInitialize, nil), RulePrincipalSessionLimit, "0")
	})
}

// Listeners that share a SessionLimits share its bound: one per upstream,
// one bound for the gateway.
func TestHTTPServerSessionLimitShared(t *testing.T) {
	shared := NewSessionLimits(2, 100)
	a, _ := relayingListener(t, HTTPServerOptions{Sessions: shared})
	b, _ := relayingListener(t, HTTPServerOptions{Sessions: shared})
	openLimited(t, a, nil)
	openLimited(t, b, nil)
	assertBusy(t, a.post(t, "", limitsInitialize, nil), RuleSessionLimit, "0")
	assertBusy(t, b.post(t, "", limitsInitialize, nil), RuleSessionLimit, "0")
	if n := shared.Open(); n != 2 {
		t.Fatalf("Open() = %d, want 2", n)
	}
}

// Admit refuses a session before OnSession (the gateway's child cap), and
// what it admitted is released only once OnSession has returned.
func TestHTTPServerAdmit(t *testing.T) {
	var admitted, releases atomic.Int32
	var running *atomic.Int32
	releasedWhileRunning := make(chan int32, 8)
	l, r := relayingListener(t, HTTPServerOptions{
		Admit: func(SessionInfo) (func(), *Busy) {
			if admitted.Add(1) > 1 {
				admitted.Add(-1)
				return nil, &Busy{Rule: RuleChildLimit, Message: "no room"}
			}
			var calls atomic.Int32 // of this admission's release
			return func() {
				if calls.Add(1) > 1 {
					panic("an admitted session was released twice")
				}
				releases.Add(1)
				select { // a release called again must not block here
				case releasedWhileRunning <- running.Load():
				default:
				}
				admitted.Add(-1)
			}, nil
		},
	})
	running = r
	sid := openLimited(t, l, nil)
	assertBusy(t, l.post(t, "", limitsInitialize, nil), RuleChildLimit, "0")
	if n := running.Load(); n != 1 {
		t.Fatalf("%d sessions running, want 1", n)
	}
	deleteSession(t, l, sid, nil)
	select {
	case n := <-releasedWhileRunning:
		if n != 0 {
			t.Fatalf("released while %d OnSession calls were running", n)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the admitted session was never released")
	}
	if n := releases.Load(); n != 1 {
		t.Fatalf("%d releases of one admitted session, want 1", n)
	}
	reopenLimited(t, l, nil)
}

// A body that trickles in is cut off after the body timeout: 408 with a
// JSON-RPC error, and the connection closed.
func TestHTTPServerBodyTimeout(t *testing.T) {
	for _, tc := range []struct{ name, framing string }{
		{"content-length", "Content-Length: 200\r\n\r\n{\"jsonrpc\""},
		{"chunked", "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"jso\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newHSListener(t, HTTPServerOptions{BodyTimeout: 200 * time.Millisecond})
			conn, err := net.Dial("tcp", l.ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(waitTimeout)) // the failure guard
			_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\n"+tc.framing)
			if err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			hsStatus(t, resp, http.StatusRequestTimeout)
			if _, code, rule := hsRPCError(t, resp); code != jsonrpc.CodeInvalidRequest || rule != RuleBodyTimeout {
				t.Fatalf("code %d rule %q, want %d %q", code, rule, jsonrpc.CodeInvalidRequest, RuleBodyTimeout)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Fatalf("connection still open after the refusal: %v", err)
			}
			l.noSession(t)
		})
	}
}

// The body timeout bounds reading requests, not answering them: a GET stream
// and a call's answer stream both outlast it.
func TestHTTPServerBodyTimeoutSparesStreams(t *testing.T) {
	const timeout = 100 * time.Millisecond
	l := newHSListener(t, HTTPServerOptions{BodyTimeout: timeout})
	sid, s := l.initialize(t, "2025-11-25")
	get := l.request(t, context.Background(), http.MethodGet, sid, "", nil)
	hsStatus(t, get, http.StatusOK)
	defer get.Body.Close()
	standalone := newHSSSE(get.Body)
	post := l.post(t, sid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`, nil)
	hsStatus(t, post, http.StatusOK)
	defer post.Body.Close()
	call := mustRead(t, s.conn)

	// Kept: the body timeout runs on the real clock of a real listener,
	// which no bubble reaches; both streams wait well past it.
	time.Sleep(5 * timeout)

	hsWrite(t, s.conn, hsMsg(t, hsNotification))
	if ev := standalone.next(t); !strings.Contains(string(ev.Data), "notifications/message") {
		t.Fatalf("GET stream event %s", ev.Data)
	}
	hsWrite(t, s.conn, jsonrpc.NewResult(call.ID, []byte(`{"content":[]}`)))
	if evs := hsEvents(t, post.Body, 1); !strings.Contains(string(evs[0].Data), `"content"`) {
		t.Fatalf("answer event %s", evs[0].Data)
	}
}
