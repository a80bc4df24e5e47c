package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
)

// listenerRefusal is a request the MCP listener refuses before any message
// of it reaches a session, and what its audit record must say.
type listenerRefusal struct {
	name   string
	status int
	stage  string
	rule   string
	// body is the POST's body when the listener read it (the record then
	// has its SHA-256), "" when it refused the request unread.
	body string
	// onSession: the request names the live session (the record's session
	// is then its id), else none or one never issued.
	onSession bool
	// send makes the request on the listener at url, in session (a live
	// one), and returns the answer.
	send func(t *testing.T, url, session string) *http.Response
}

const listToolsBody = `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`

// mcpRequest is a request to the listener with the headers a conforming
// client sends; edit changes it before it goes.
func mcpRequest(t *testing.T, method, url, body, session string, edit func(*http.Request)) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if edit != nil {
		edit(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// listenerRefusals are the refusals of the MCP listener that were answered
// without an audit record before: HTTP method, Content-Type, Accept,
// Last-Event-ID, protocol revision, unknown session, missing session id,
// a resumption of an unknown event.
func listenerRefusals() []listenerRefusal {
	return []listenerRefusal{
		{"PUT", 405, "listener", "http-method", "", false, func(t *testing.T, url, _ string) *http.Response {
			return mcpRequest(t, http.MethodPut, url, listToolsBody, "", nil)
		}},
		{"text/plain body", 415, "listener", "content-type", "", true, func(t *testing.T, url, session string) *http.Response {
			return mcpRequest(t, http.MethodPost, url, listToolsBody, session, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") })
		}},
		{"Accept without SSE", 400, "listener", "accept", "", true, func(t *testing.T, url, session string) *http.Response {
			return mcpRequest(t, http.MethodPost, url, listToolsBody, session, func(r *http.Request) { r.Header.Set("Accept", "application/json") })
		}},
		{"Last-Event-ID on POST", 400, "listener", "last-event-id", "", true, func(t *testing.T, url, session string) *http.Response {
			return mcpRequest(t, http.MethodPost, url, listToolsBody, session, func(r *http.Request) { r.Header.Set("Last-Event-ID", "x_1") })
		}},
		// A long value: the record's reason (cut at 1 KiB) quotes only the
		// start of it, so what identifies the request still fits.
		{"unknown revision", 400, "listener", "protocol-version", "", true, func(t *testing.T, url, session string) *http.Response {
			return mcpRequest(t, http.MethodPost, url, listToolsBody, session, func(r *http.Request) {
				r.Header.Set("Mcp-Protocol-Version", "2019-01-01"+strings.Repeat("x", 3000))
			})
		}},
		{"POST on an unknown session", 404, "listener", "unknown-session", listToolsBody, false, func(t *testing.T, url, _ string) *http.Response {
			return mcpRequest(t, http.MethodPost, url, listToolsBody, "0123456789abcdef0123456789abcdef", nil)
		}},
		{"GET without a session", 400, "listener", "session-required", "", false, func(t *testing.T, url, _ string) *http.Response {
			return mcpRequest(t, http.MethodGet, url, "", "", nil)
		}},
		{"DELETE of an unknown session", 404, "listener", "unknown-session", "", false, func(t *testing.T, url, _ string) *http.Response {
			return mcpRequest(t, http.MethodDelete, url, "", "fedcba9876543210fedcba9876543210", nil)
		}},
		{"resuming an unknown event", 400, "listener", "resume", "", true, func(t *testing.T, url, session string) *http.Response {
			return mcpRequest(t, http.MethodGet, url, "", session, func(r *http.Request) { r.Header.Set("Last-Event-ID", "00000000000000ff_3") })
		}},
	}
}

// checkListenerRecord checks that rec is the record of tc, refused with
// HTTP status tc.status, and says of the session what it should: issued
// (the live session's id in its session field) or not.
func checkListenerRecord(t *testing.T, tc listenerRefusal, rec audit.Record, issued string) {
	t.Helper()
	if rec.Decision != audit.Deny || rec.Stage != tc.stage || rec.Rule != tc.rule || rec.Upstream != "demo" ||
		rec.Direction != "client" || rec.Method != gateway.MethodRefused {
		t.Errorf("%s: audit record %+v, want a deny of a client message to demo by %s/%s", tc.name, rec, tc.stage, tc.rule)
	}
	if rec.Session != issued {
		t.Errorf("%s: audit record's session %q, want %q", tc.name, rec.Session, issued)
	}
	if !strings.Contains(rec.Reason, "http "+strconv.Itoa(tc.status)+" from 127.0.0.1:") {
		t.Errorf("%s: audit reason %q does not give the status %d and the client", tc.name, rec.Reason, tc.status)
	}
	if tc.body != "" {
		sum := sha256.Sum256([]byte(tc.body))
		if want := "raw " + strconv.Itoa(len(tc.body)) + " bytes sha256 " + hex.EncodeToString(sum[:]); !strings.Contains(rec.Reason, want) {
			t.Errorf("%s: audit reason %q does not identify the body (%q)", tc.name, rec.Reason, want)
		}
	} else if !strings.Contains(rec.Reason, "(not read whole: no hash)") {
		t.Errorf("%s: audit reason %q claims a hash of a body never read", tc.name, rec.Reason)
	}
}

// verifyChain checks the audit log at path from its first record.
func verifyChain(t *testing.T, path string) {
	t.Helper()
	b, err := audit.OpenBackend(audit.KindJSONL, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rep, err := audit.Verify(context.Background(), b, audit.Anchor{})
	if err != nil || rep.Problem != nil {
		t.Fatalf("audit chain: %v, %+v", err, rep.Problem)
	}
}

// TestListenerRefusalsAreAudited: every request the MCP listener refuses
// before a message of it reaches a session, for its method, its headers or
// its session, is answered as before (the same status) and leaves, before
// the answer, one audit record with the listener's rule, the status, the
// client and the body's SHA-256 when the body was read; the OCSF events of
// the refusals validate against the OCSF 1.8.0 schema, and the chain
// verifies.
func TestListenerRefusalsAreAudited(t *testing.T) {
	srv, path, sink, closeAll := servedAudited(t)
	defer closeAll()
	session := initSession(t, mcpPoster(t, srv.URL+"/mcp"))
	cases := listenerRefusals()
	for i, tc := range cases {
		resp := tc.send(t, srv.URL+"/mcp", session)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.status)
		}
		rec, n := lastRefusedRecord(t, path)
		if n != i+1 {
			t.Fatalf("%s: %d records of refusals in the audit log after the answer, want %d", tc.name, n, i+1)
		}
		issued := ""
		if tc.onSession {
			issued = session
		}
		checkListenerRecord(t, tc, rec, issued)
	}
	closeAll()
	for _, tc := range cases {
		checkRefusalTrail(t, sink, tc.name, tc.rule)
	}
	verifyChain(t, path)
}

// TestUnknownSessionIDIsSanitized: a session id the gateway never issued
// is the client's own string; its record keeps no more than 64 bytes of it,
// with anything but [0-9A-Za-z._-] masked, and never in the session field.
func TestUnknownSessionIDIsSanitized(t *testing.T) {
	g, path, _ := auditedGateway(t)
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	claimed := "../../etc/passwd <script>" + strings.Repeat("A", 4000)
	resp := mcpRequest(t, http.MethodPost, srv.URL+"/mcp", listToolsBody, claimed, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("HTTP %d, want 404", resp.StatusCode)
	}
	rec, n := lastRefusedRecord(t, path)
	if n != 1 || rec.Rule != "unknown-session" || rec.Session != "" {
		t.Fatalf("%d records; last %+v, want one by unknown-session with no session", n, rec)
	}
	want := "unknown session ..?..?etc?passwd??script?" + strings.Repeat("A", 64-len("../../etc/passwd <script>")) + "…"
	if !strings.HasSuffix(strings.TrimSuffix(rec.Reason, ")"), want) {
		t.Errorf("audit reason %q does not end with the sanitized id %q", rec.Reason, want)
	}
	if strings.Contains(rec.Reason, "<script>") || strings.Contains(rec.Reason, strings.Repeat("A", 65)) {
		t.Errorf("audit reason %q holds the client's string", rec.Reason)
	}
}

// TestSessionLimitRefusalIsAudited: a session over
// max_sessions_per_principal is refused 503 as before, and recorded with
// its rule, its code and the SHA-256 of the initialize it carried.
func TestSessionLimitRefusalIsAudited(t *testing.T) {
	g, path, _ := auditedGatewayWith(t, func(o *gateway.Options) { o.MaxSessionsPerPrincipal = 1 })
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	post := mcpPoster(t, srv.URL+"/mcp")
	initSession(t, post)
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, _ := post(init, "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("second session: HTTP %d, want 503", resp.StatusCode)
	}
	rec, n := lastRefusedRecord(t, path)
	if n != 1 {
		t.Fatalf("%d records of refusals, want 1", n)
	}
	checkListenerRecord(t, listenerRefusal{name: "session limit", status: 503, stage: "listener", rule: "principal-session-limit", body: init}, rec, "")
	if !strings.Contains(rec.Reason, "code -32036") || rec.RequestID != "0" {
		t.Errorf("audit record %+v does not give code -32036 and the request id 0", rec)
	}
	verifyChain(t, path)
}

// TestBodyTimeoutRefusalIsAudited: a POST whose body does not arrive within
// body_timeout is answered 408 as before, and recorded with its declared
// length and no hash (the body was never read whole).
func TestBodyTimeoutRefusalIsAudited(t *testing.T) {
	g, path, _ := auditedGatewayWith(t, func(o *gateway.Options) { o.BodyTimeout = 200 * time.Millisecond })
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 100 bytes declared, 10 sent: the rest never comes.
	io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("HTTP %d, want 408", resp.StatusCode)
	}
	rec, n := lastRefusedRecord(t, path)
	if n != 1 || rec.Rule != "body-timeout" || rec.Stage != "listener" ||
		!strings.Contains(rec.Reason, "raw 100 bytes (not read whole: no hash)") || !strings.Contains(rec.Reason, "http 408") {
		t.Errorf("%d records; last %+v, want a body-timeout refusal of 100 declared bytes, unhashed", n, rec)
	}
	verifyChain(t, path)
}

// logRecords reads every record of the audit log at path, as on disk.
func logRecords(t *testing.T, path string) []audit.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // the file's preallocated tail
	}
	var out []audit.Record
	for line := range bytes.Lines(bytes.TrimSpace(b)) { // none when the log is empty
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// TestAgentEndpointMethodRefusalsAreAudited: a request with the wrong HTTP
// method to an A2A agent, to its agent card, or to an AG-UI agent is
// refused 405 as before and leaves an audit record (listener/http-method)
// under the agent's name, before the answer.
func TestAgentEndpointMethodRefusalsAreAudited(t *testing.T) {
	up, _ := countingUpstream(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	booker, err := a2agw.New(a2agw.Options{Name: "booker", Upstream: "http://127.0.0.1:1/a2a",
		PublicURL: "http://127.0.0.1/a2a/booker", Record: gateway.A2ARecord(l)})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	agui, err := gateway.AGUIHandlers(nil, []gateway.AGUISpec{{Name: "chat", URL: "http://127.0.0.1:1/run"}}, nil,
		&gateway.Records{Audit: l}, nil)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Recorder: &gateway.Records{Audit: l},
		Closers: []io.Closer{l}, A2A: map[string]http.Handler{"booker": booker}, AGUI: agui})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	for i, tc := range []struct {
		name, method, path, upstream, recMethod string
	}{
		{"GET on the A2A endpoint", http.MethodGet, gateway.A2APath + "booker", "a2a:booker", ""},
		{"POST on the agent card", http.MethodPost, gateway.A2APath + "booker" + a2agw.CardPath, "a2a:booker", "agent-card"},
		{"GET on the AG-UI endpoint", http.MethodGet, gateway.AGUIPath + "chat", "agui:chat", "run_agent_input"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: HTTP %d, want 405", tc.name, resp.StatusCode)
		}
		recs := logRecords(t, path)
		if len(recs) != i+1 {
			t.Fatalf("%s: %d audit records after the answer, want %d", tc.name, len(recs), i+1)
		}
		rec := recs[i]
		if rec.Decision != audit.Deny || rec.Stage != "listener" || rec.Rule != "http-method" || rec.Upstream != tc.upstream ||
			rec.Method != tc.recMethod || !strings.Contains(rec.Reason, tc.method) {
			t.Errorf("%s: audit record %+v, want a deny of %s by listener/http-method naming %s", tc.name, rec, tc.upstream, tc.method)
		}
	}
	verifyChain(t, path)
}

// holdingRecorder holds the records of refusals at the wire until release
// is closed (or their deadline passes), counting them; other records pass.
type holdingRecorder struct {
	inner   gateway.Recorder
	release chan struct{}
	held    atomic.Int64
}

func (h *holdingRecorder) Record(ctx context.Context, d *gateway.Decision) error {
	if d.Method == gateway.MethodRefused {
		h.held.Add(1)
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.inner.Record(ctx, d)
}

// TestRefusalFloodSlowsOnlyTheFlooder: while the records of a flood of
// refused requests (POSTs naming a session never issued) are not yet
// written, none of those requests is answered, each waiting on its own
// goroutine, and another client's call on its session is answered all the
// same; once the records are written every refusal is answered and
// recorded, once each.
func TestRefusalFloodSlowsOnlyTheFlooder(t *testing.T) {
	up, _ := countingUpstream(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &holdingRecorder{inner: &gateway.Records{Audit: l}, release: make(chan struct{})}
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Recorder: rec, Closers: []io.Closer{l}})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	released := false
	defer func() {
		if !released {
			close(rec.release)
		}
		srv.Close()
		g.Close()
	}()
	post := mcpPoster(t, srv.URL+"/mcp")
	session := initSession(t, post)

	const flood = 32
	answered := make(chan int, flood)
	for i := range flood {
		go func() {
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(listToolsBody))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", "flood"+strconv.Itoa(i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answered <- 0
				return
			}
			resp.Body.Close()
			answered <- resp.StatusCode
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.held.Load() < flood {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d refusals reached the Recorder: the others were answered unrecorded, or not at all", rec.held.Load(), flood)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case s := <-answered:
		t.Fatalf("a refused request was answered (HTTP %d) before its record was written", s)
	default:
	}
	// Another client's call is answered while every flood record is still
	// held: the release below comes only after it. The client's timeout is
	// a liveness bound (no answer at all fails), not a measure of speed.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(listToolsBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("another client's tools/list got no answer while the flood's records were held: %v", err)
	}
	reply := readReply(t, resp)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(reply, []byte(`"tools"`)) {
		t.Fatalf("another client's tools/list during the flood: HTTP %d, %s", resp.StatusCode, reply)
	}
	close(rec.release)
	released = true
	for range flood {
		select {
		case s := <-answered:
			if s != http.StatusNotFound {
				t.Errorf("a refused request answered HTTP %d, want 404", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the refusals were not answered once their records were written")
		}
	}
	if _, n := lastRefusedRecord(t, path); n != flood {
		t.Errorf("%d records of refusals, want %d", n, flood)
	}
	verifyChain(t, path)
}

// TestDrainRefusalIsAudited: a new session asked for while the gateway
// drains is refused 503 (-32035 gateway/shutdown) as before, and recorded
// with the SHA-256-less declared length of its initialize.
func TestDrainRefusalIsAudited(t *testing.T) {
	g, path, _ := auditedGateway(t)
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	g.Drain(ctx) // nothing in flight: it returns at once, and the gateway stays draining
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, _ := mcpPoster(t, srv.URL+"/mcp")(init, "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a new session while draining: HTTP %d, want 503", resp.StatusCode)
	}
	rec, n := lastRefusedRecord(t, path)
	if n != 1 || rec.Stage != "gateway" || rec.Rule != "shutdown" || rec.Upstream != "demo" ||
		!strings.Contains(rec.Reason, "raw "+strconv.Itoa(len(init))+" bytes (not read whole: no hash)") || !strings.Contains(rec.Reason, "http 503") {
		t.Errorf("%d records; last %+v, want a gateway/shutdown refusal of demo, unread", n, rec)
	}
	verifyChain(t, path)
}
