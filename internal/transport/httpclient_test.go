package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentwarden/warden/internal/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const hcInitParams = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}`

// hcStatelessMeta is the per-request _meta of revision 2026-07-28.
const hcStatelessMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},` +
	`"io.modelcontextprotocol/clientCapabilities":{}}`

// hcRecorder wraps a handler and records every request's method and headers
// before serving it.
type hcRecorder struct {
	next http.Handler
	mu   sync.Mutex
	seen []hcSeen
}

type hcSeen struct {
	Method string
	Header http.Header
}

func (r *hcRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, hcSeen{req.Method, req.Header.Clone()})
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
}

func (r *hcRecorder) requests(method string) []hcSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hcSeen
	for _, s := range r.seen {
		if s.Method == method {
			out = append(out, s)
		}
	}
	return out
}

// newHCUpstream returns a go-sdk MCP server with an "echo" tool and an "ask"
// tool that sends the client an elicitation/create request during the call.
func newHCUpstream() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo:" + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		// Bounded, so that a failing test does not leave the handler (and
		// httptest.Server.Close) waiting for an answer forever.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "name?"})
		if err != nil {
			return nil, nil, err
		}
		answer, _ := res.Content["name"].(string)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action + ":" + answer}}}, nil, nil
	})
	return s
}

func serveHCSDK(t *testing.T, stateless bool) (*httptest.Server, *hcRecorder) {
	t.Helper()
	server := newHCUpstream()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Stateless: stateless})
	rec := &hcRecorder{next: h}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	return ts, rec
}

func serveHCFunc(t *testing.T, f http.HandlerFunc) (*httptest.Server, *hcRecorder) {
	t.Helper()
	rec := &hcRecorder{next: f}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	return ts, rec
}

func newHC(t *testing.T, url string, opts HTTPClientOptions) *HTTPClientConn {
	t.Helper()
	opts.URL = url
	c := NewHTTPClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func hcWrite(t *testing.T, c *HTTPClientConn, m *jsonrpc.Message) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, m); err != nil {
		t.Fatalf("Write %s: %v", m.Raw, err)
	}
}

func hcRead(t *testing.T, c *HTTPClientConn) *jsonrpc.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return m
}

// hcResponse reads until the response to id, skipping notifications, and
// checks that it travelled on id's stream.
func hcResponse(t *testing.T, c *HTTPClientConn, id jsonrpc.ID) *jsonrpc.Message {
	t.Helper()
	for {
		m := hcRead(t, c)
		if m.Kind == jsonrpc.KindNotification {
			continue
		}
		if m.Kind != jsonrpc.KindResponse || m.ID != id {
			t.Fatalf("waiting for response %v, got %s", id, m.Raw)
		}
		if m.Related != id {
			t.Errorf("response %v: Related = %v, want %v", id, m.Related, id)
		}
		return m
	}
}

// hcExpectNothing checks that no message is queued for a short while.
func hcExpectNothing(t *testing.T, c *HTTPClientConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if m, err := c.Read(ctx); err == nil {
		t.Fatalf("unexpected message %s", m.Raw)
	}
}

// hcToolText returns the text of the first content block of a tools/call result.
func hcToolText(t *testing.T, m *jsonrpc.Message) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result: %s", m.Raw)
	}
	if r.IsError {
		t.Fatalf("tool failed: %s", m.Raw)
	}
	return r.Content[0].Text
}

// hcErrorDetail checks that m is a synthesized error response and returns
// its code and rule.
func hcErrorDetail(t *testing.T, m *jsonrpc.Message) (int64, string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("not an error response: %s", m.Raw)
	}
	var d jsonrpc.Detail
	if err := json.Unmarshal(m.Error.Data, &d); err != nil {
		t.Fatalf("error data %s: %v", m.Error.Data, err)
	}
	if d.Stage != "upstream" {
		t.Errorf("stage = %q, want upstream", d.Stage)
	}
	return m.Error.Code, d.Rule
}

func hcCallEcho(id int64, text string, params string) *jsonrpc.Message {
	if params == "" {
		params = `{"name":"echo","arguments":{"text":` + strconv.Quote(text) + `}}`
	}
	return jsonrpc.NewRequest(jsonrpc.IntID(id), "tools/call", []byte(params))
}

func TestHTTPClientStateful(t *testing.T) {
	ts, rec := serveHCSDK(t, false)
	c := newHC(t, ts.URL, HTTPClientOptions{})

	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "initialize", []byte(hcInitParams)))
	init := hcResponse(t, c, jsonrpc.IntID(1))
	if v, _ := jsonrpc.Lookup(init.Result, "protocolVersion"); string(v) != `"2025-11-25"` {
		t.Fatalf("initialize result: %s", init.Raw)
	}
	hcWrite(t, c, jsonrpc.NewNotification("notifications/initialized", []byte(`{}`)))

	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(2), "tools/list", []byte(`{}`)))
	list := hcResponse(t, c, jsonrpc.IntID(2))
	if !bytes.Contains(list.Result, []byte(`"echo"`)) || !bytes.Contains(list.Result, []byte(`"ask"`)) {
		t.Fatalf("tools/list result: %s", list.Raw)
	}

	hcWrite(t, c, hcCallEcho(3, "hi", ""))
	if got := hcToolText(t, hcResponse(t, c, jsonrpc.IntID(3))); got != "echo:hi" {
		t.Fatalf("echo = %q", got)
	}

	// The server asks the client a question during the call, on the call's stream.
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(4), "tools/call", []byte(`{"name":"ask","arguments":{}}`)))
	ereq := hcRead(t, c)
	if ereq.Kind != jsonrpc.KindRequest || ereq.Method != "elicitation/create" {
		t.Fatalf("want elicitation/create, got %s", ereq.Raw)
	}
	if ereq.Related != jsonrpc.IntID(4) {
		t.Fatalf("elicitation request Related = %v, want 4", ereq.Related)
	}
	hcWrite(t, c, jsonrpc.NewResult(ereq.ID, []byte(`{"action":"accept","content":{"name":"ada"}}`)))
	if got := hcToolText(t, hcResponse(t, c, jsonrpc.IntID(4))); got != "accept:ada" {
		t.Fatalf("ask = %q", got)
	}

	// Every request after initialize carried the session and the negotiated revision.
	posts := rec.requests(http.MethodPost)
	if len(posts) != 6 {
		t.Fatalf("%d POSTs, want 6", len(posts))
	}
	if sid := posts[0].Header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("initialize carried session id %q", sid)
	}
	sid := posts[1].Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id after initialize")
	}
	for i, p := range posts[1:] {
		if got := p.Header.Get("Mcp-Session-Id"); got != sid {
			t.Errorf("POST %d: session id %q, want %q", i+1, got, sid)
		}
		if got := p.Header.Get("Mcp-Protocol-Version"); got != "2025-11-25" {
			t.Errorf("POST %d: protocol version %q", i+1, got)
		}
	}
	hcWaitFor(t, "standalone GET", func() bool { return len(rec.requests(http.MethodGet)) > 0 })
	if got := rec.requests(http.MethodGet)[0].Header.Get("Mcp-Session-Id"); got != sid {
		t.Errorf("standalone GET session id %q, want %q", got, sid)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	dels := rec.requests(http.MethodDelete)
	if len(dels) != 1 || dels[0].Header.Get("Mcp-Session-Id") != sid {
		t.Fatalf("DELETEs after Close: %v", dels)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if err := c.Write(context.Background(), hcCallEcho(5, "x", "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func hcWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hcStatelessCall builds a 2026-07-28 request with its _meta and the headers
// the MCP client would have sent to warden.
func hcStatelessCall(id int64, method, name, params string) *jsonrpc.Message {
	m := jsonrpc.NewRequest(jsonrpc.IntID(id), method, []byte(params))
	m.Header = map[string][]string{
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {method},
	}
	if name != "" {
		m.Header["Mcp-Name"] = []string{name}
	}
	return m
}

func TestHTTPClientStateless(t *testing.T) {
	ts, rec := serveHCSDK(t, true)
	c := newHC(t, ts.URL, HTTPClientOptions{})

	hcWrite(t, c, hcStatelessCall(1, "tools/list", "", `{"_meta":`+hcStatelessMeta+`}`))
	if list := hcResponse(t, c, jsonrpc.IntID(1)); !bytes.Contains(list.Result, []byte(`"echo"`)) {
		t.Fatalf("tools/list: %s", list.Raw)
	}

	// Concurrent calls each get their own answer on their own stream.
	var wg sync.WaitGroup
	for i := int64(10); i < 20; i++ {
		wg.Go(func() {
			p := `{"name":"echo","arguments":{"text":"n` + strconv.FormatInt(i, 10) + `"},"_meta":` + hcStatelessMeta + `}`
			if err := c.Write(context.Background(), hcStatelessCall(i, "tools/call", "echo", p)); err != nil {
				t.Errorf("Write %d: %v", i, err)
			}
		})
	}
	got := map[jsonrpc.ID]string{}
	for range 10 {
		m := hcRead(t, c)
		if m.Related != m.ID {
			t.Errorf("response %v: Related = %v", m.ID, m.Related)
		}
		got[m.ID] = hcToolText(t, m)
	}
	wg.Wait()
	for i := int64(10); i < 20; i++ {
		if want := "echo:n" + strconv.FormatInt(i, 10); got[jsonrpc.IntID(i)] != want {
			t.Errorf("call %d = %q, want %q", i, got[jsonrpc.IntID(i)], want)
		}
	}

	// A message without headers (from an MCP client on stdio) gets its
	// headers from its body: the revision from _meta, method and name.
	hcWrite(t, c, hcCallEcho(31, "", `{"name":"echo","arguments":{"text":"bare"},"_meta":`+hcStatelessMeta+`}`))
	if got := hcToolText(t, hcResponse(t, c, jsonrpc.IntID(31))); got != "echo:bare" {
		t.Fatalf("headerless call = %q", got)
	}

	// 2026-07-28 answers an unknown method with HTTP 404 and a JSON-RPC
	// error body: that error is relayed, not replaced by a synthesized one.
	hcWrite(t, c, hcStatelessCall(30, "no/such", "", `{"_meta":`+hcStatelessMeta+`}`))
	if m := hcResponse(t, c, jsonrpc.IntID(30)); m.Error == nil || m.Error.Code != jsonrpc.CodeMethodNotFound {
		t.Fatalf("unknown method: %s", m.Raw)
	}

	for _, p := range rec.requests(http.MethodPost) {
		if sid := p.Header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("stateless POST carried session id %q", sid)
		}
		if v := p.Header.Get("Mcp-Protocol-Version"); v != "2026-07-28" {
			t.Errorf("POST protocol version %q", v)
		}
	}
	c.Close()
	if n := len(rec.requests(http.MethodGet)) + len(rec.requests(http.MethodDelete)); n != 0 {
		t.Errorf("stateless conn sent %d GET/DELETE requests", n)
	}
}

func TestHTTPClientHeaders(t *testing.T) {
	ts, rec := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	})
	c := newHC(t, ts.URL, HTTPClientOptions{Header: http.Header{
		"X-Api-Key":      {"configured-key"},
		"Mcp-Session-Id": {"from-config"},
	}})
	m := jsonrpc.NewRequest(jsonrpc.IntID(1), "tools/call", []byte(`{"name":"t"}`))
	m.Header = map[string][]string{
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"t"},
		"Mcp-Param-Region":     {"eu"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Session-Id":       {"client-session-with-warden"},
		"Authorization":        {"Bearer client-token"},
	}
	hcWrite(t, c, m)
	hcResponse(t, c, jsonrpc.IntID(1))

	h := rec.requests(http.MethodPost)[0].Header
	for k, want := range map[string]string{
		"X-Api-Key":            "configured-key",
		"Mcp-Method":           "tools/call",
		"Mcp-Name":             "t",
		"Mcp-Param-Region":     "eu",
		"Mcp-Protocol-Version": "2026-07-28",
		"Content-Type":         "application/json",
		"Accept":               "application/json, text/event-stream",
		"Mcp-Session-Id":       "",
		"Authorization":        "",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("upstream saw %s: %q, want %q", k, got, want)
		}
	}
}

// hcLogBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type hcLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *hcLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *hcLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func hcSSEHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

func hcSendEvent(w http.ResponseWriter, e Event) {
	WriteEvent(w, e)
	w.(http.Flusher).Flush()
}

func TestHTTPClientInvalidUpstreamData(t *testing.T) {
	t.Run("sse", func(t *testing.T) {
		ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			hcSSEHeaders(w)
			hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{`)})
			// A duplicate key that lenient parsers would read either way.
			hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{"ok":false},"result":{"ok":true}}`)})
			hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{"ok":true}}`)})
		})
		var logs hcLogBuffer
		c := newHC(t, ts.URL, HTTPClientOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "ping", nil))
		if m := hcResponse(t, c, jsonrpc.IntID(1)); string(m.Result) != `{"ok":true}` {
			t.Fatalf("got %s", m.Raw)
		}
		hcExpectNothing(t, c)
		for _, rule := range []string{jsonrpc.RuleSyntax, jsonrpc.RuleDuplicateKey} {
			if l := logs.String(); !strings.Contains(l, "rule="+rule) {
				t.Errorf("dropped message not logged with rule %s: %s", rule, l)
			}
		}
	})
	t.Run("json batch", func(t *testing.T) {
		ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `[{"jsonrpc":"2.0","method":"notifications/progress","params":{}},{"jsonrpc":"2.0","id":1,"result":{}}]`)
		})
		c := newHC(t, ts.URL, HTTPClientOptions{})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "ping", nil))
		if n := hcRead(t, c); n.Method != "notifications/progress" || n.Related != jsonrpc.IntID(1) {
			t.Fatalf("got %s (Related %v)", n.Raw, n.Related)
		}
		hcResponse(t, c, jsonrpc.IntID(1))
	})
	t.Run("json body", func(t *testing.T) {
		ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":`)
		})
		c := newHC(t, ts.URL, HTTPClientOptions{})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "ping", nil))
		m := hcResponse(t, c, jsonrpc.IntID(1))
		if code, rule := hcErrorDetail(t, m); code != jsonrpc.CodeUpstreamInvalid || rule != "invalid-response" {
			t.Fatalf("code %d rule %q: %s", code, rule, m.Raw)
		}
		hcExpectNothing(t, c)
	})
	t.Run("too large", func(t *testing.T) {
		ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			hcSSEHeaders(w)
			hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 200) + `"}`)})
		})
		c := newHC(t, ts.URL, HTTPClientOptions{Limits: jsonrpc.Limits{MaxBytes: 100}})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "ping", nil))
		if code, _ := hcErrorDetail(t, hcResponse(t, c, jsonrpc.IntID(1))); code != jsonrpc.CodeUpstreamInvalid {
			t.Fatalf("code %d, want CodeUpstreamInvalid", code)
		}
	})
}

func TestHTTPClientUpstreamFailure(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	status500, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	noResponse, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		hcSSEHeaders(w)
		hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`)})
	})
	for _, tc := range []struct {
		name, url, rule string
	}{
		{"down", down.URL + "/mcp?key=secret", "connection"},
		{"500", status500.URL, "http-status"},
		{"stream ends without response", noResponse.URL, "stream-ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newHC(t, tc.url, HTTPClientOptions{Name: "up1"})
			hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.StringID("a"), "tools/list", nil))
			m := hcResponse(t, c, jsonrpc.StringID("a"))
			code, rule := hcErrorDetail(t, m)
			if code != jsonrpc.CodeUpstreamUnavailable || rule != tc.rule {
				t.Errorf("code %d rule %q, want %d %q", code, rule, jsonrpc.CodeUpstreamUnavailable, tc.rule)
			}
			if !strings.HasPrefix(m.Error.Message, "upstream up1: ") || strings.Contains(m.Error.Message, "secret") {
				t.Errorf("message %q", m.Error.Message)
			}
			if tc.rule != "stream-ended" {
				if err := c.Write(context.Background(), jsonrpc.NewNotification("notifications/initialized", nil)); err == nil {
					t.Error("notification to a failing upstream: Write returned nil")
				}
			}
		})
	}
}

func TestHTTPClientResumption(t *testing.T) {
	progress := []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`)
	t.Run("resumed", func(t *testing.T) {
		ts, rec := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			hcSSEHeaders(w)
			if r.Method == http.MethodPost {
				io.WriteString(w, "retry: 10\n\n")
				hcSendEvent(w, Event{ID: "e1", Data: progress})
				return // drop the stream before the response
			}
			if r.Header.Get("Last-Event-Id") == "e1" {
				hcSendEvent(w, Event{ID: "e2", Data: []byte(`{"jsonrpc":"2.0","id":7,"result":{"done":true}}`)})
			}
		})
		c := newHC(t, ts.URL, HTTPClientOptions{})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(7), "tools/call", []byte(`{"name":"slow"}`)))
		if n := hcRead(t, c); n.Method != "notifications/progress" || n.Related != jsonrpc.IntID(7) {
			t.Fatalf("want progress related to 7, got %s (Related %v)", n.Raw, n.Related)
		}
		if m := hcResponse(t, c, jsonrpc.IntID(7)); string(m.Result) != `{"done":true}` {
			t.Fatalf("got %s", m.Raw)
		}
		gets := rec.requests(http.MethodGet)
		if len(gets) != 1 || gets[0].Header.Get("Last-Event-Id") != "e1" || gets[0].Header.Get("Accept") != "text/event-stream" {
			t.Fatalf("GETs: %v", gets)
		}
	})
	t.Run("cannot resume", func(t *testing.T) {
		ts, rec := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			hcSSEHeaders(w)
			io.WriteString(w, "retry: 10\n\n")
			hcSendEvent(w, Event{ID: "e1", Data: progress})
		})
		c := newHC(t, ts.URL, HTTPClientOptions{})
		hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(7), "tools/call", []byte(`{"name":"slow"}`)))
		m := hcResponse(t, c, jsonrpc.IntID(7))
		if _, rule := hcErrorDetail(t, m); rule != "stream-ended" {
			t.Fatalf("rule %q", rule)
		}
		if n := len(rec.requests(http.MethodGet)); n != httpMaxResumes {
			t.Errorf("%d resume attempts, want %d", n, httpMaxResumes)
		}
	})
}

func TestHTTPClientStandaloneStream(t *testing.T) {
	ts, rec := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			if !bytes.Contains(body, []byte(`"initialize"`)) {
				w.WriteHeader(http.StatusAccepted)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s1")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`)
		case http.MethodGet:
			hcSSEHeaders(w)
			hcSendEvent(w, Event{ID: "g1", Data: []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)})
			<-r.Context().Done()
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	c := newHC(t, ts.URL, HTTPClientOptions{})
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "initialize", []byte(hcInitParams)))
	hcResponse(t, c, jsonrpc.IntID(1))
	hcWrite(t, c, jsonrpc.NewNotification("notifications/initialized", nil))
	n := hcRead(t, c)
	if n.Method != "notifications/tools/list_changed" || n.Related.IsValid() {
		t.Fatalf("want list_changed with no Related, got %s (Related %v)", n.Raw, n.Related)
	}
	g := rec.requests(http.MethodGet)[0].Header
	if g.Get("Mcp-Session-Id") != "s1" || g.Get("Mcp-Protocol-Version") != "2025-11-25" || g.Get("Last-Event-Id") != "" {
		t.Errorf("standalone GET headers: %v", g)
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the standalone stream")
	}
	if d := rec.requests(http.MethodDelete); len(d) != 1 || d[0].Header.Get("Mcp-Session-Id") != "s1" {
		t.Errorf("DELETEs: %v", d)
	}
}

// A slow reader holds the stream back without losing or reordering messages,
// and Close releases a stream blocked on the full queue.
func TestHTTPClientBackpressure(t *testing.T) {
	const n = 3 * httpQueueLen
	release := make(chan struct{})
	ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		hcSSEHeaders(w)
		for i := range n {
			hcSendEvent(w, Event{Data: fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}`, i)})
		}
		if strings.Contains(r.URL.RawQuery, "hang") {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		hcSendEvent(w, Event{Data: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)})
	})
	defer close(release)

	c := newHC(t, ts.URL, HTTPClientOptions{})
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(1), "tools/call", nil))
	hcWaitFor(t, "the queue to fill", func() bool { return len(c.in) == cap(c.in) })
	// Kept: a negative check. Nothing may be buffered beyond the full
	// queue; a window is the only way to see that nothing more arrives.
	time.Sleep(50 * time.Millisecond) // the stream goroutine is now blocked, not buffering elsewhere
	if len(c.in) != cap(c.in) {
		t.Errorf("queue holds %d, want it full at %d", len(c.in), cap(c.in))
	}
	for i := range n {
		m := hcRead(t, c)
		if want := fmt.Sprintf(`"progress":%d}`, i); !bytes.Contains(m.Params, []byte(want)) {
			t.Fatalf("message %d: %s", i, m.Raw)
		}
	}
	hcResponse(t, c, jsonrpc.IntID(1))

	c2 := newHC(t, ts.URL+"?hang", HTTPClientOptions{})
	hcWrite(t, c2, jsonrpc.NewRequest(jsonrpc.IntID(1), "tools/call", nil))
	hcWaitFor(t, "the second queue to fill", func() bool { return len(c2.in) == cap(c2.in) })
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { c2.Close() })
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked behind a full queue")
	}
	if _, err := c2.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
}

// Write gives up when its context ends before the headers arrive, and nothing
// is delivered for that request.
func TestHTTPClientWriteContext(t *testing.T) {
	release := make(chan struct{})
	ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := newHC(t, ts.URL, HTTPClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	// A notification waits for the upstream's 202, so ctx bounds that wait.
	if err := c.Write(ctx, jsonrpc.NewNotification("notifications/initialized", nil)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write = %v, want DeadlineExceeded", err)
	}
	hcExpectNothing(t, c)
}

// TestHTTPClientSlowCallDoesNotBlockWrites: an upstream may hold its
// response headers until a long tool call ends. Write must return once the
// request is sent, so that other messages (a ping, a cancellation) can go
// out meanwhile, and the slow answer still arrives later.
func TestHTTPClientSlowCallDoesNotBlockWrites(t *testing.T) {
	release := make(chan struct{})
	ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if m.Method == "tools/call" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jsonrpc.NewResult(m.ID, []byte(`{}`)).Raw)
	})
	c := newHC(t, ts.URL, HTTPClientOptions{})
	slow := jsonrpc.NewRequest(jsonrpc.IntID(1), "tools/call", []byte(`{"name":"slow"}`))
	done := make(chan error, 1)
	go func() { done <- c.Write(context.Background(), slow) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Write of the slow call: %v", err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("Write of a call blocked until the upstream answered it")
	}
	hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(2), "ping", nil))
	if got := hcRead(t, c); got.ID != jsonrpc.IntID(2) {
		t.Fatalf("first answer is %s, want the ping's", got.Raw)
	}
	close(release)
	if got := hcRead(t, c); got.ID != jsonrpc.IntID(1) {
		t.Fatalf("second answer is %s, want the slow call's", got.Raw)
	}
}

func TestHTTPClientCloseUnblocksRead(t *testing.T) {
	// Nothing is sent, so no socket is opened: in a synctest bubble,
	// synctest.Wait returns once Read is blocked.
	synctest.Test(t, func(t *testing.T) {
		c := NewHTTPClient(HTTPClientOptions{URL: "http://127.0.0.1:1/"})
		errc := make(chan error, 1)
		go func() {
			_, err := c.Read(context.Background())
			errc <- err
		}()
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("Read returned before Close: %v", err)
		default:
		}
		c.Close()
		synctest.Wait()
		select {
		case err := <-errc:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("Read = %v, want ErrClosed", err)
			}
		default:
			t.Fatal("Close did not unblock Read")
		}
	})
}

// hcCountingConn counts the writes made on a connection.
type hcCountingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c hcCountingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Each request goes out in one write, and a POST stream whose end comes a
// moment after its response leaves its connection for the next request
// rather than making the next request dial.
func TestHTTPClientKeepAlive(t *testing.T) {
	var conns atomic.Int64
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		WriteEvent(w, Event{Data: jsonrpc.NewResult(m.ID, []byte(`{}`)).Raw})
		http.NewResponseController(w).Flush()
		time.Sleep(5 * time.Millisecond) // kept: the upstream's own behaviour, the end of the stream comes later
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)

	var writes atomic.Int64
	client := UpstreamHTTPClient()
	dial := client.Transport.(upstreamTransport).DialContext
	client.Transport.(upstreamTransport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return hcCountingConn{c, &writes}, nil
	}
	c := newHC(t, ts.URL, HTTPClientOptions{Client: client})
	const calls = 5
	for i := range int64(calls) {
		hcWrite(t, c, hcCallEcho(i+1, "x", ""))
		hcResponse(t, c, jsonrpc.IntID(i+1))
		// Kept: the client returns the connection to its pool when it
		// reads the stream's end, which nothing outside net/http shows.
		time.Sleep(20 * time.Millisecond) // past the end of the stream
	}
	if n := writes.Load(); n != calls {
		t.Errorf("%d writes for %d requests, want one each", n, calls)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for %d sequential requests, want 1", n, calls)
	}
}

// hcOrderTransport records the order in which requests reach the network
// and holds the first one until release is closed.
type hcOrderTransport struct {
	mu      sync.Mutex
	order   []string
	release chan struct{}
}

func (o *hcOrderTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	m, _ := jsonrpc.Decode(body, jsonrpc.Limits{})
	o.mu.Lock()
	o.order = append(o.order, m.Method)
	first := len(o.order) == 1
	o.mu.Unlock()
	if first {
		<-o.release
	}
	resp := &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Body: http.NoBody, Request: req}
	if m.IsCall() {
		resp.StatusCode = http.StatusOK
		resp.Header.Set("Content-Type", "application/json")
		resp.Body = io.NopCloser(bytes.NewReader(jsonrpc.NewResult(m.ID, []byte(`{}`)).Raw))
	}
	return resp, nil
}

func (o *hcOrderTransport) seen() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.order)
}

// A call is sent in the background, and Write returns at once; a message
// written after it still reaches the upstream after it.
func TestHTTPClientWritesInOrder(t *testing.T) {
	rt := &hcOrderTransport{release: make(chan struct{})}
	c := newHC(t, "http://upstream.invalid/mcp", HTTPClientOptions{Client: &http.Client{Transport: rt}})
	hcWrite(t, c, hcCallEcho(1, "slow", "")) // held by the transport
	done := make(chan error, 1)
	go func() {
		done <- c.Write(context.Background(), jsonrpc.NewNotification("notifications/cancelled", []byte(`{"requestId":1}`)))
	}()
	// Kept: a negative check. While the call is held, the notification
	// must not be sent; a window is the only way to see that it is not.
	time.Sleep(50 * time.Millisecond)
	if got := rt.seen(); !slices.Equal(got, []string{"tools/call"}) {
		t.Fatalf("requests sent while the call was held: %v", got)
	}
	close(rt.release)
	if err := <-done; err != nil {
		t.Fatalf("Write of the notification: %v", err)
	}
	if got := rt.seen(); !slices.Equal(got, []string{"tools/call", "notifications/cancelled"}) {
		t.Fatalf("order %v", got)
	}
	hcResponse(t, c, jsonrpc.IntID(1))
}

// An upstream that answers a notification with a stream it never ends, or
// with an error whose body it withholds, does not hold the Write: MCP's
// answer there is 202 with no body, so warden closes the stream unread,
// and waits for an error's text only so long. The session's next call
// still goes through.
func TestHTTPClientOneWayAnswerNeverEnds(t *testing.T) {
	defer func(d time.Duration) { httpErrorBodyWait = d }(httpErrorBodyWait)
	httpErrorBodyWait = 100 * time.Millisecond
	for _, tc := range []struct {
		name    string
		status  int
		ctype   string
		wantErr bool
	}{
		{"200 event stream", http.StatusOK, "text/event-stream", false},
		{"400 body withheld", http.StatusBadRequest, "application/json", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			abandoned := make(chan struct{}, 1)
			ts, _ := serveHCFunc(t, func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				m, err := jsonrpc.Decode(body, jsonrpc.Limits{})
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				if m.IsCall() {
					w.Header().Set("Content-Type", "application/json")
					w.Write(jsonrpc.NewResult(m.ID, []byte(`{}`)).Raw)
					return
				}
				w.Header().Set("Content-Type", tc.ctype)
				w.Header().Set("Content-Length", "100") // promised, never sent
				w.WriteHeader(tc.status)
				http.NewResponseController(w).Flush()
				<-r.Context().Done() // held until the client lets go
				abandoned <- struct{}{}
			})
			c := newHC(t, ts.URL, HTTPClientOptions{})
			done := make(chan error, 1)
			go func() {
				done <- c.Write(context.Background(), jsonrpc.NewNotification("notifications/cancelled", []byte(`{"requestId":1}`)))
			}()
			select {
			case err := <-done:
				if (err != nil) != tc.wantErr {
					t.Fatalf("Write = %v, want an error: %v", err, tc.wantErr)
				}
			case <-time.After(30 * time.Second): // liveness: no answer at all fails
				t.Fatal("Write of a notification is held by an answer the upstream never ends")
			}
			select {
			case <-abandoned:
			case <-time.After(30 * time.Second):
				t.Fatal("the upstream's endless answer is still being read")
			}
			hcWrite(t, c, jsonrpc.NewRequest(jsonrpc.IntID(7), "ping", nil))
			if got := hcRead(t, c); got.ID != jsonrpc.IntID(7) {
				t.Fatalf("the next call's answer is %s, want the ping's", got.Raw)
			}
		})
	}
}
