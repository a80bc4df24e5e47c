package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
)

// refusals collects what an OnRefused hook is told.
type refusals struct {
	mu  sync.Mutex
	got []Refusal
}

func (rs *refusals) hook(_ context.Context, r Refusal) {
	rs.mu.Lock()
	rs.got = append(rs.got, r)
	rs.mu.Unlock()
}

func (rs *refusals) all() []Refusal {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]Refusal(nil), rs.got...)
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestStreamTellsOnRefused: each invalid line is told to OnRefused before it
// is answered, with its rule, its id, its length without the line ending and
// its SHA-256; a line over the limit with its whole length and no hash.
func TestStreamTellsOnRefused(t *testing.T) {
	const limit = 256
	rs := &refusals{}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := NewStream(inR, outW, inR, StreamOptions{Limits: jsonrpc.Limits{MaxBytes: limit}, ReplyInvalid: true,
		OnRefused: rs.hook, Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	replies := make(chan string, 4)
	go func() {
		buf := make([]byte, 4096)
		var acc []byte
		for {
			n, err := outR.Read(buf)
			acc = append(acc, buf[:n]...)
			for {
				i := bytes.IndexByte(acc, '\n')
				if i < 0 {
					break
				}
				replies <- string(acc[:i])
				acc = acc[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	dup := `{"jsonrpc":"2.0","id":"a","method":"ping","params":{"k":1,"k":2}}`
	long := `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"` + strings.Repeat("y", 3*limit) + `"}}`
	for _, line := range []string{dup + "\r\n", long + "\r\n"} {
		if _, err := io.WriteString(inW, line); err != nil {
			t.Fatal(err)
		}
		select {
		case <-replies:
		case <-time.After(5 * time.Second):
			t.Fatal("no answer to an invalid line")
		}
	}
	got := rs.all()
	if len(got) != 2 {
		t.Fatalf("OnRefused told of %d lines, want 2", len(got))
	}
	if r := got[0]; r.Transport != "stdio" || r.Detail().Rule != jsonrpc.RuleDuplicateKey || r.ID.Raw() != `"a"` ||
		r.Length != int64(len(dup)) || r.SHA256 != hexSHA(dup) {
		t.Errorf("duplicate key: told %+v (rule %q), want rule duplicate-key, id \"a\", %d bytes, sha256 %s", r, r.Detail().Rule, len(dup), hexSHA(dup))
	}
	if r := got[1]; r.Detail().Rule != jsonrpc.RuleSize || r.ID.Raw() != "7" || r.Length != int64(len(long)) || r.SHA256 != "" {
		t.Errorf("long line: told %+v (rule %q), want rule size, id 7, %d bytes, no hash", r, r.Detail().Rule, len(long))
	}
}

// TestHTTPServerTellsOnRefused: an invalid body and a body over the limit
// (declared, and chunked) are told to OnRefused with the status they are
// answered with.
func TestHTTPServerTellsOnRefused(t *testing.T) {
	rs := &refusals{}
	h := NewHTTPServer(HTTPServerOptions{Limits: jsonrpc.Limits{MaxBytes: 128}, OnRefused: rs.hook,
		OnSession: func(_ context.Context, c Conn, _ SessionInfo) { c.Close() }})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body io.Reader, length int64) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	bad := `{"jsonrpc":"2.0","id":3,"Method":"ping"}`
	big := strings.Repeat(" ", 200)
	post(strings.NewReader(bad), int64(len(bad)))
	post(strings.NewReader(big), int64(len(big)))
	post(io.MultiReader(strings.NewReader(big)), -1) // chunked: no declared length
	got := rs.all()
	if len(got) != 3 {
		t.Fatalf("OnRefused told of %d POSTs, want 3", len(got))
	}
	if r := got[0]; r.Transport != "http" || r.Status != 400 || r.Detail().Rule != jsonrpc.RuleMemberCase || r.ID.Raw() != "3" ||
		r.Length != int64(len(bad)) || r.SHA256 != hexSHA(bad) || !strings.HasPrefix(r.RemoteAddr, "127.0.0.1:") {
		t.Errorf("member case: told %+v", r)
	}
	if r := got[1]; r.Status != 413 || r.Detail().Rule != "size" || r.Length != int64(len(big)) || r.SHA256 != "" {
		t.Errorf("declared oversize: told %+v", r)
	}
	if r := got[2]; r.Status != 413 || r.Detail().Rule != "size" || r.Length != -1 || r.SHA256 != "" {
		t.Errorf("chunked oversize: told %+v", r)
	}
}

// TestHTTPServerTellsOnRefusedAuth: a request authentication refuses is
// told, unread, with its status and the auth stage's rule.
func TestHTTPServerTellsOnRefusedAuth(t *testing.T) {
	rs := &refusals{}
	h := NewHTTPServer(HTTPServerOptions{OnRefused: rs.hook,
		Authenticate: func(*http.Request) (string, *AuthRefusal) {
			return "", &AuthRefusal{Status: 401, Rule: "token-missing", Message: "no bearer token"}
		},
		OnSession: func(_ context.Context, c Conn, _ SessionInfo) { c.Close() }})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := rs.all()
	if len(got) != 1 || got[0].Status != 401 || got[0].Detail().Stage != "auth" || got[0].Detail().Rule != "token-missing" ||
		got[0].Length != int64(len(body)) || got[0].SHA256 != "" || resp.StatusCode != 401 {
		t.Errorf("told %+v for an HTTP %d, want one 401 by auth/token-missing, %d bytes unread", got, resp.StatusCode, len(body))
	}
}

// TestHTTPServerTellsOnRefusedInSession: the refusals of requests on a live
// session, which decode but never reach it, are told too, with the
// session's id (the listener issued it), the principal, and the body's
// SHA-256 for a POST: a second standalone GET (409), a request id already
// pending (400 duplicate-id), a POST by another principal (403).
func TestHTTPServerTellsOnRefusedInSession(t *testing.T) {
	rs := &refusals{}
	l := newHSListener(t, HTTPServerOptions{OnRefused: rs.hook,
		Authenticate: func(r *http.Request) (string, *AuthRefusal) { return r.Header.Get("X-Principal"), nil }})
	alice := map[string]string{"X-Principal": "alice"}
	resp := l.post(t, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, alice)
	sid := resp.Header.Get("Mcp-Session-Id")
	s := l.session(t)
	m := mustRead(t, s.conn)
	hsWrite(t, s.conn, jsonrpc.NewResult(m.ID, []byte(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`)))
	hsEvents(t, resp.Body, 1)
	resp.Body.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := l.request(t, ctx, http.MethodGet, sid, "", alice) // holds the standalone stream
	defer get.Body.Close()
	hsStatus(t, l.request(t, context.Background(), http.MethodGet, sid, "", alice), http.StatusConflict)

	call := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
	req := l.newRequest(t, ctx, http.MethodPost, sid, call, alice)
	go func() {
		if resp, err := l.ts.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	mustRead(t, s.conn) // call 7 is pending
	hsStatus(t, l.post(t, sid, call, alice), http.StatusBadRequest)
	hsStatus(t, l.post(t, sid, call, map[string]string{"X-Principal": "bob"}), http.StatusForbidden)

	got := rs.all()
	if len(got) != 3 {
		t.Fatalf("OnRefused told of %d requests, want 3: %+v", len(got), got)
	}
	want := []struct {
		status    int
		stage     string
		rule      string
		principal string
		body      string
	}{
		{409, "listener", RuleStreamConflict, "alice", ""},
		{400, "listener", RuleDuplicateID, "alice", call},
		{403, "auth", RuleSessionOwner, "bob", call},
	}
	for i, w := range want {
		r, d := got[i], got[i].Detail()
		sum := ""
		if w.body != "" {
			sum = hexSHA(w.body)
		}
		if r.Status != w.status || d.Stage != w.stage || d.Rule != w.rule || r.Principal != w.principal ||
			r.Session != sid || r.ClaimedSession != "" || r.SHA256 != sum {
			t.Errorf("refusal %d: told %+v (%s/%s), want %d %s/%s by %s in session %s, sha256 %q",
				i, r, d.Stage, d.Rule, w.status, w.stage, w.rule, w.principal, sid, sum)
		}
	}
}

// TestSanitizeSessionID: at most 64 bytes of a client's session id, with
// anything outside [0-9A-Za-z._-] masked and a cut marked.
func TestSanitizeSessionID(t *testing.T) {
	for in, want := range map[string]string{
		"0123456789abcdef0123456789abcdef": "0123456789abcdef0123456789abcdef",
		"a b\t<c>é":                        "a?b??c???",
		strings.Repeat("x", 65):            strings.Repeat("x", 64) + "…",
		"":                                 "",
	} {
		if got := SanitizeSessionID(in); got != want {
			t.Errorf("SanitizeSessionID(%q) = %q, want %q", in, got, want)
		}
	}
}
