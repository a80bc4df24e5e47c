package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// initializeBody is an initialize request at revision 2025-11-25.
const initializeBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// answerInitialize plays the relay: it reads the initialize request of s,
// shows the client no session if sessionless (as the relay does for an
// upstream that gave none), and answers.
func answerInitialize(t *testing.T, s hsSession, sessionless bool) {
	t.Helper()
	m := mustRead(t, s.conn)
	if sessionless {
		s.conn.(SessionlessView).ShowSessionless()
	}
	hsWrite(t, s.conn, jsonrpc.NewResult(m.ID, []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)))
}

// With HoldInitialize, the answer to initialize waits for the upstream's:
// an upstream that keeps no session gives the client no session id, no
// event ids to resume from, and the session ends with that answer.
func TestHTTPServerShowsSessionlessUpstream(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{HoldInitialize: true, OpenWait: time.Nanosecond})
	answered := l.postAsync(t, initializeBody, nil)
	s := l.session(t)
	// Kept: OpenWait runs on the real clock of a real listener; 20 ms is
	// far beyond it, and the stream must still wait for the answer.
	time.Sleep(20 * time.Millisecond)
	answerInitialize(t, s, true)
	resp := answered()
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize of a sessionless upstream: %s, Mcp-Session-Id %q; want 200 and none", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	if !strings.Contains(string(body), `"serverInfo"`) || strings.Contains(string(body), "id: ") {
		t.Errorf("initialize answer without a session must carry the result and no event ids:\n%s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := s.conn.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("the session outlived its initialize answer: Read = %v, want io.EOF", err)
	}
}

// The same listener gives a session id when the upstream keeps a session.
func TestHTTPServerHeldInitializeKeepsSession(t *testing.T) {
	l := newHSListener(t, HTTPServerOptions{HoldInitialize: true})
	answered := l.postAsync(t, initializeBody, nil)
	s := l.session(t)
	answerInitialize(t, s, false)
	resp := answered()
	defer resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if len(sid) != 32 || sid != s.info.ID {
		t.Fatalf("initialize of a stateful upstream: Mcp-Session-Id %q, want the session's %q", sid, s.info.ID)
	}
	// Too late to hide an id the client has: ShowSessionless does nothing.
	s.conn.(SessionlessView).ShowSessionless()
	get := l.request(t, context.Background(), http.MethodGet, sid, "", map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Errorf("GET on the session after a late ShowSessionless: %s, want 200", get.Status)
	}
}

// A GET or DELETE without a session id is answered as a stateless server
// answers it (405, Allow: POST) once the upstream is known to keep no
// session; 400 otherwise.
func TestHTTPServerSessionlessGETAndDELETE(t *testing.T) {
	for _, known := range []bool{true, false} {
		l := newHSListener(t, HTTPServerOptions{Sessionless: func() bool { return known }})
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			resp := l.request(t, context.Background(), method, "", "", map[string]string{"Mcp-Protocol-Version": "2025-11-25"})
			resp.Body.Close()
			want, allow := http.StatusBadRequest, ""
			if known {
				want, allow = http.StatusMethodNotAllowed, http.MethodPost
			}
			if resp.StatusCode != want || resp.Header.Get("Allow") != allow {
				t.Errorf("sessionless upstream known: %t: %s without a session id: %s, Allow %q; want %d, %q",
					known, method, resp.Status, resp.Header.Get("Allow"), want, allow)
			}
		}
	}
}
