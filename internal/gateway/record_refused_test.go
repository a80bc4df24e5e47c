package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/ocsf"
	"github.com/agentwarden/warden/internal/ocsf/ocsfschema/ocsfschematest"
	"github.com/agentwarden/warden/internal/telemetry"
	"github.com/agentwarden/warden/internal/transport"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// wireRefusals are the messages refused at the wire whose refusal must be
// audited: each is refused before it is decoded, so no stage sees it.
func wireRefusals() []badInput {
	var out []badInput
	for _, tc := range badInputs() {
		switch tc.rule {
		case "duplicate-key", "member-case", "depth", "size":
			out = append(out, tc)
		}
	}
	return append(out,
		badInput{"malformed JSON", `{"jsonrpc":"2.0","id":21,"method":"tools/call",`, -32700, "syntax"},
		badInput{"request sent as a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"get_env"}}`, -32600, "request-as-notification"})
}

// ocsfEvents collects the OCSF events the gateway's telemetry emits.
type ocsfEvents struct {
	mu  sync.Mutex
	raw [][]byte

	validated bool // checkRefusalTrail has checked raw against the schema
}

func (s *ocsfEvents) Emit(e ocsf.Event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	s.raw = append(s.raw, b)
	s.mu.Unlock()
}

// naming returns how many events mention every one of subs.
func (s *ocsfEvents) naming(subs ...string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
next:
	for _, b := range s.raw {
		for _, sub := range subs {
			if !bytes.Contains(b, []byte(sub)) {
				continue next
			}
		}
		n++
	}
	return n
}

// auditedGateway is the counting demo upstream behind a gateway whose
// Recorder keeps a JSONL audit log at the returned path and emits OCSF
// events to the returned sink.
func auditedGateway(t *testing.T) (*gateway.Gateway, string, *ocsfEvents) {
	t.Helper()
	return auditedGatewayWith(t, nil)
}

// auditedGatewayWith is auditedGateway with its Options changed by edit
// (if not nil) before the gateway is made.
func auditedGatewayWith(t *testing.T, edit func(*gateway.Options)) (*gateway.Gateway, string, *ocsfEvents) {
	t.Helper()
	up, _ := countingUpstream(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sink := &ocsfEvents{}
	rs := &gateway.Records{Audit: l,
		Spans: telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(),
			OCSFSink: sink, Product: ocsf.Product{Name: "warden", VendorName: "agentwarden"}}),
		Transport: telemetry.TransportStreamableHTTP}
	opts := gateway.Options{Upstreams: []gateway.Upstream{up}, Limits: jsonrpc.Limits{MaxBytes: smallLimit},
		Recorder: rs, Closers: []io.Closer{l}}
	if edit != nil {
		edit(&opts)
	}
	g, err := gateway.New(opts)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	return g, path, sink
}

// lastRefusedRecord reads the audit log as it is on disk and returns its
// last record of a message refused at the wire.
func lastRefusedRecord(t *testing.T, path string) (audit.Record, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i] // the file's preallocated tail
	}
	var last audit.Record
	n := 0
	for line := range bytes.Lines(bytes.TrimSpace(b)) { // none when the log is empty
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		if r.Method == gateway.MethodRefused {
			last, n = r, n+1
		}
	}
	return last, n
}

// checkRefusedRecord checks that rec records the refusal of raw by rule,
// identifying the bytes by their length and SHA-256 (hashed, unless
// unread).
func checkRefusedRecord(t *testing.T, tc badInput, rec audit.Record, raw string, hashed bool, session string) {
	t.Helper()
	if rec.Decision != audit.Deny || rec.Rule != tc.rule || rec.Upstream != "demo" || rec.Direction != "client" || rec.Session != session {
		t.Errorf("%s: audit record %+v, want a deny by rule %q of a client message to demo in session %q", tc.name, rec, tc.rule, session)
	}
	sum := sha256.Sum256([]byte(raw))
	want := "raw " + strconv.Itoa(len(raw)) + " bytes sha256 " + hex.EncodeToString(sum[:])
	if !hashed {
		want = "raw " + strconv.Itoa(len(raw)) + " bytes (not read whole: no hash)"
	}
	if !strings.Contains(rec.Reason, want) {
		t.Errorf("%s: audit reason %q does not identify the bytes sent (%q)", tc.name, rec.Reason, want)
	}
	if strings.Contains(rec.Reason, raw) {
		t.Errorf("%s: audit reason holds the raw bytes", tc.name)
	}
}

// TestWireRefusalsOverHTTPAreAudited: each message the HTTP listener refuses
// before decoding it gets the same error as before and leaves, before that
// error is answered, an audit record naming its rule and the SHA-256 of the
// bytes sent, and an OCSF event; the chain verifies afterwards.
func TestWireRefusalsOverHTTPAreAudited(t *testing.T) {
	srv, path, sink, closeAll := servedAudited(t)
	defer closeAll()
	post := mcpPoster(t, srv.URL+"/mcp")
	session := initSession(t, post)
	cases := wireRefusals()
	for i, tc := range cases {
		resp, reply := post(tc.body, session)
		checkRefusal(t, tc, reply)
		if tc.rule == "size" && resp.StatusCode != http.StatusRequestEntityTooLarge ||
			tc.rule != "size" && resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP status %d", tc.name, resp.StatusCode)
		}
		// The record is on disk once the answer is in.
		rec, n := lastRefusedRecord(t, path)
		if n != i+1 {
			t.Fatalf("%s: %d records of wire refusals in the audit log after the answer, want %d", tc.name, n, i+1)
		}
		checkRefusedRecord(t, tc, rec, tc.body, tc.rule != "size", session)
		if !strings.Contains(rec.Reason, "from 127.0.0.1:") {
			t.Errorf("%s: audit reason %q does not name the client's address", tc.name, rec.Reason)
		}
	}
	closeAll() // flushes telemetry, closes the audit log
	for _, tc := range cases {
		checkRefusalTrail(t, sink, tc.name, tc.rule)
	}
	verifyChain(t, path)
}

// servedAudited serves auditedGateway's gateway over HTTP on loopback;
// closeAll (safe to call again) stops the server and closes the gateway,
// which flushes its telemetry and closes its audit log.
func servedAudited(t *testing.T) (*httptest.Server, string, *ocsfEvents, func()) {
	g, path, sink := auditedGateway(t)
	srv := httptest.NewServer(g.Handler())
	closed := false
	return srv, path, sink, func() {
		if !closed {
			closed = true
			srv.Close()
			g.Close()
		}
	}
}

// checkRefusalTrail checks, once the gateway is closed, that every OCSF
// event sink holds is valid OCSF 1.8.0 (validated once per test), and
// that one of them is the refusal named by rule.
func checkRefusalTrail(t *testing.T, sink *ocsfEvents, name, rule string) {
	t.Helper()
	if !sink.validated {
		sink.validated = true
		schema := ocsfschematest.Schema(t, ocsfschematest.V180)
		for _, raw := range sink.raw {
			ocsfschematest.Check(t, schema, raw)
		}
	}
	if sink.naming(gateway.MethodRefused, `"`+rule+`"`) == 0 {
		t.Errorf("%s: no OCSF event of the refusal by rule %q", name, rule)
	}
}

// TestWireRefusalsOverStdioAreAudited: a line `warden gateway --stdio`
// cannot decode is answered as before and audited as the HTTP listener's
// refusals are, before the answer is written.
func TestWireRefusalsOverStdioAreAudited(t *testing.T) {
	g, path, _ := auditedGateway(t)
	clientIn, gwIn := io.Pipe()
	gwOut, clientOut := io.Pipe()
	conn := transport.NewStream(clientIn, clientOut, clientIn, transport.StreamOptions{
		Limits: jsonrpc.Limits{MaxBytes: smallLimit}, ReplyInvalid: true, Name: "client", OnRefused: g.OnRefused("demo")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { g.ServeConn(ctx, conn, "demo", "", false); close(done) }()
	defer func() { cancel(); gwIn.Close(); <-done; g.Close() }()

	lines := bufio.NewReader(gwOut)
	next := func() []byte {
		ch := make(chan []byte, 1)
		go func() { b, _ := lines.ReadBytes('\n'); ch <- b }()
		select {
		case b := <-ch:
			return bytes.TrimSpace(b)
		case <-time.After(5 * time.Second):
			t.Fatal("no reply from the gateway")
			return nil
		}
	}
	io.WriteString(gwIn, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	next()
	for i, tc := range wireRefusals() {
		io.WriteString(gwIn, tc.body+"\r\n") // the line ending is not part of the message
		checkRefusal(t, tc, next())
		rec, n := lastRefusedRecord(t, path)
		if n != i+1 {
			t.Fatalf("%s: %d records of wire refusals in the audit log after the answer, want %d", tc.name, n, i+1)
		}
		checkRefusedRecord(t, tc, rec, tc.body, tc.rule != "size", "")
	}
}

// failingRecorder is a Recorder whose records can never be written.
type failingRecorder struct{ calls atomic.Int64 }

func (f *failingRecorder) Record(context.Context, *gateway.Decision) error {
	f.calls.Add(1)
	return errors.New("disk full")
}

// TestWireRefusalAnsweredWhenAuditFails: when the record of a wire refusal
// cannot be written, the client still gets the same refusal (the message is
// refused either way; nothing of it goes on), and the failure is logged.
func TestWireRefusalAnsweredWhenAuditFails(t *testing.T) {
	up, seen := countingUpstream(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	rec := &failingRecorder{}
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Recorder: rec,
		Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	tc := badInput{"duplicate key", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"get_env"}}`, -32700, "duplicate-key"}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(tc.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HTTP status %d, want 400", resp.StatusCode)
	}
	checkRefusal(t, tc, readReply(t, resp))
	if rec.calls.Load() != 1 || seen.Load() != 0 {
		t.Errorf("%d record attempts and %d messages upstream, want 1 and 0", rec.calls.Load(), seen.Load())
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "disk full") {
		t.Errorf("the failed record is not logged as an error:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestRebindingRefusalIsAudited: a POST from a web page (DNS rebinding:
// Host evil.example) is refused 403 as before and recorded, unread, with
// its declared length.
func TestRebindingRefusalIsAudited(t *testing.T) {
	g, path, _ := auditedGateway(t)
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	req.Host = "evil.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	reply := readReply(t, resp)
	resp.Body.Close()
	tc := badInput{"DNS rebinding", body, -32600, "host"}
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("HTTP status %d, want 403", resp.StatusCode)
	}
	checkRefusal(t, tc, reply)
	rec, n := lastRefusedRecord(t, path)
	if n != 1 {
		t.Fatalf("%d records of wire refusals, want 1", n)
	}
	checkRefusedRecord(t, tc, rec, body, false, "")
	if rec.Stage != "listener" {
		t.Errorf("stage %q, want listener", rec.Stage)
	}
}

// TestA2ARebindingRefusalIsAudited: the same Host check in front of an A2A
// agent's endpoint records its refusals too, under the agent's name.
func TestA2ARebindingRefusalIsAudited(t *testing.T) {
	up, _ := countingUpstream(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var reached atomic.Int64
	agent := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached.Add(1) })
	g, err := gateway.New(gateway.Options{Upstreams: []gateway.Upstream{up}, Recorder: &gateway.Records{Audit: l},
		Closers: []io.Closer{l}, A2A: map[string]http.Handler{"booker": agent}})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer func() { srv.Close(); g.Close() }()
	body := `{"jsonrpc":"2.0","id":1,"method":"message/send"}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+gateway.A2APath+"booker", strings.NewReader(body))
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || reached.Load() != 0 {
		t.Fatalf("HTTP %d and %d requests reached the agent, want 403 and none", resp.StatusCode, reached.Load())
	}
	rec, n := lastRefusedRecord(t, path)
	if n != 1 || rec.Upstream != "booker" || rec.Stage != "listener" || rec.Rule != "origin" || rec.Decision != audit.Deny ||
		!strings.Contains(rec.Reason, "raw "+strconv.Itoa(len(body))+" bytes (not read whole: no hash)") {
		t.Errorf("%d records; last %+v, want a deny of booker by listener/origin", n, rec)
	}
}
