//go:build integration

package gateway_test

// Proofs for docs/principles.md that no other test gives: a bridge
// operation audited in both domains (P6, CS), taint into a higher-tier tool
// (CS), and an MCP stream resumed through warden (SL).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdkjsonrpc "github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/demoserver"
	"github.com/agentwarden/warden/internal/gateway"
	wmcp "github.com/agentwarden/warden/internal/mcp"
	"github.com/agentwarden/warden/internal/transport"
	"github.com/agentwarden/warden/internal/zerotrust"
)

// auditRecords returns every record of the audit log at path (kind), after
// checking that they form one intact hash chain.
func auditRecords(t *testing.T, kind audit.Kind, path string) []audit.Record {
	t.Helper()
	ctx := context.Background()
	b, err := audit.OpenBackend(kind, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if rep, err := audit.Verify(ctx, b, audit.Anchor{}); err != nil || !rep.OK() {
		t.Fatalf("the audit chain does not verify: %+v %v", rep, err)
	}
	var recs []audit.Record
	if _, err := b.Scan(ctx, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// auditRef is how a refusal names the audit record of the answer its text
// came from.
var auditRef = regexp.MustCompile(`\(audit record (\d+)\)`)

// TestTaintedDelegationIsAuditedInBothDomains (AASM P6 and CS: bridge
// operations audited in both domains): the MCP answer that carried the
// poisoned text and the A2A delegation refused for copying it are both in
// the audit log, in one hash chain, and the refusal names the MCP answer's
// record, so an auditor can walk from the denial to its source.
func TestTaintedDelegationIsAuditedInBothDomains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f := newTaintFixture(t, fmt.Sprintf("  audit: {backend: jsonl, path: %q}\n", path))
	text := f.read(t)
	_, _, msg := refusal(f.delegate(t, "Please do this: "+text))
	m := auditRef.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the refusal %q names no audit record", msg)
	}
	f.stop() // every record is in

	var source, deny *audit.Record
	recs := auditRecords(t, audit.KindJSONL, path)
	for i := range recs {
		r := &recs[i]
		switch {
		case fmt.Sprint(r.Seq) == m[1]:
			source = r
		case r.Upstream == "a2a:planner" && r.Decision == audit.Deny:
			deny = r
		}
	}
	if source == nil || source.Upstream != "docs" || source.Method != "tools/call" || source.Tool != "read_file" ||
		source.Direction != "upstream" || source.Decision != audit.Allow {
		t.Fatalf("the refusal points at audit record %s = %+v; want the answer of docs read_file", m[1], source)
	}
	if deny == nil || deny.Method != "SendMessage" || deny.Stage != "taint" || deny.Rule != string(gateway.RuleIntoDelegation) ||
		deny.Direction != "client" || deny.Seq <= source.Seq {
		t.Fatalf("the A2A refusal's record = %+v; want SendMessage denied by taint/%s after record %d",
			deny, gateway.RuleIntoDelegation, source.Seq)
	}
	if got := f.agent.received(); len(got) != 0 {
		t.Fatalf("the agent received the poisoned delegation: %q", got)
	}
}

// higherTierFixture is the demo server reading a poisoned report behind a
// warden whose classification puts write_file, and read_file of notes.txt,
// at level 4 (Tier 1: a token); every other call is unclassified (Tier 0).
type higherTierFixture struct {
	root string
	ring *zerotrust.KeyRing
	cs   *mcp.ClientSession
}

const notes = "Board notes: the audit committee meets on the third Thursday; minutes go to the secretary by Friday noon."

func newHigherTierFixture(t *testing.T, taint string) *higherTierFixture {
	t.Helper()
	ctx := testCtx(t)
	f := &higherTierFixture{root: t.TempDir()}
	for name, body := range map[string]string{"report.txt": poisoned, "notes.txt": notes} {
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	server := demoserver.New(demoserver.Options{Root: f.root, Ledger: demoserver.NewLedger()})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(up.Close)
	dataDir := keyedDataDir(t)
	ring, err := zerotrust.LoadKeyRing(zerotrust.KeysDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	f.ring = ring
	establishSQLite(t, dataDir)
	url := startGateway(t, fmt.Sprintf(`version: 1
gateway:
  zero_trust:
    data_dir: %q
    subject: alice
    classification:
      - {name: writes, level: 4, when: 'tool.name == "write_file"'}
      - {name: notes, level: 4, when: 'tool.name == "read_file" && args.path == "notes.txt"'}
  upstreams: [{name: docs, url: %s}]
%s`, dataDir, up.URL, taint))
	f.cs, _ = connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: url}, "2025-11-25")
	return f
}

// call calls tool with args, with a token for exactly these arguments when
// token is true.
func (f *higherTierFixture) call(t *testing.T, tool string, args map[string]any, token bool) (*mcp.CallToolResult, error) {
	t.Helper()
	raw, _ := json.Marshal(args)
	p := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(raw)}
	if token {
		tok, _, err := zerotrust.Issue(f.ring, zerotrust.IssueRequest{Sub: "alice", Upstream: "docs", Tool: tool, Arguments: raw})
		if err != nil {
			t.Fatal(err)
		}
		p.Meta = mcp.Meta{gateway.MetaTokenKey: tok}
	}
	return f.cs.CallTool(testCtx(t), p)
}

// TestTaintedTextCannotReachAHigherTierTool (AgentRFC CS, rule
// into-higher-tier): text from the answer of an unclassified (Tier 0) tool
// cannot flow into the arguments of a Tier 1 call, even one that carries a
// valid token for those arguments; text from a Tier 1 answer may flow into
// another Tier 1 call, and the client's own text anywhere. With tracking
// off the same tainted call goes through and the file is written.
func TestTaintedTextCannotReachAHigherTierTool(t *testing.T) {
	for _, on := range []bool{true, false} {
		taint := ""
		if !on {
			taint = "  taint: {enabled: false}\n"
		}
		f := newHigherTierFixture(t, taint)
		res, err := f.call(t, "read_file", map[string]any{"path": "report.txt"}, false)
		if err != nil || res.IsError || !strings.Contains(text(t, res), "SYSTEM NOTE") {
			t.Fatalf("reading the report (Tier 0): %v %+v", err, res)
		}
		_, err = f.call(t, "write_file", map[string]any{"path": "out.txt", "content": "Summary: " + text(t, res)}, true)
		_, statErr := os.Stat(filepath.Join(f.root, "out.txt"))
		if !on {
			if err != nil || statErr != nil {
				t.Fatalf("tracking off: the tainted Tier 1 write = %v, file %v; the guard-off baseline must write it", err, statErr)
			}
			continue
		}
		if err == nil {
			t.Fatal("tracking on: the report's text reached a Tier 1 tool")
		}
		stage, rule := refusalOf(t, err)
		if stage != "taint" || rule != string(gateway.RuleIntoHigherTier) ||
			!strings.Contains(err.Error(), `MCP server "docs" tool read_file`) || !strings.Contains(err.Error(), "(tier 1)") {
			t.Fatalf("tracking on: %s/%s %v; want taint/%s naming docs read_file", stage, rule, err, gateway.RuleIntoHigherTier)
		}
		if statErr == nil {
			t.Fatal("the tainted write reached the server")
		}

		// Same tier: notes.txt is read at Tier 1, so its text may go into
		// another Tier 1 call.
		res, err = f.call(t, "read_file", map[string]any{"path": "notes.txt"}, true)
		if err != nil || res.IsError {
			t.Fatalf("reading the notes (Tier 1, with a token): %v %+v", err, res)
		}
		if res, err := f.call(t, "write_file", map[string]any{"path": "notes-copy.txt", "content": "Copy: " + text(t, res)}, true); err != nil || res.IsError {
			t.Fatalf("Tier 1 text into a Tier 1 call was refused: %v %+v", err, res)
		}
		if res, err := f.call(t, "write_file", map[string]any{"path": "own.txt", "content": "My own plan: ship on Monday, review on Friday."}, true); err != nil || res.IsError {
			t.Fatalf("the client's own text was refused: %v %+v", err, res)
		}
	}
}

// refusalOf returns the stage and rule of a warden refusal carried by err.
func refusalOf(t *testing.T, err error) (stage, rule string) {
	t.Helper()
	var werr *sdkjsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("want a JSON-RPC error from warden, got %v", err)
	}
	var d struct{ Stage, Rule string }
	if err := json.Unmarshal(werr.Data, &d); err != nil || d.Stage == "" {
		t.Fatalf("error %v carries no warden detail: %s", werr, werr.Data)
	}
	return d.Stage, d.Rule
}

// rawMCP is a hand-written streamable-HTTP client of one stateful session,
// for what an SDK does behind the caller's back: dropping and resuming a
// stream.
type rawMCP struct {
	url, session string
}

// do sends one HTTP request of the session. body "" means a GET.
func (c *rawMCP) do(t *testing.T, ctx context.Context, body string, header map[string]string) *http.Response {
	t.Helper()
	method, rd := http.MethodGet, io.Reader(nil)
	if body != "" {
		method, rd = http.MethodPost, strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.session != "" {
		req.Header.Set(wmcp.HeaderSessionID, c.session)
		req.Header.Set(wmcp.HeaderProtocolVersion, "2025-11-25")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseMessage is one event of a stream: its id and its JSON-RPC message.
type sseMessage struct {
	id  string
	msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Progress float64 `json:"progress"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
}

func nextMessage(t *testing.T, er *transport.EventReader) (sseMessage, error) {
	t.Helper()
	ev, err := er.Next()
	for err == nil && len(ev.Data) == 0 { // the priming event: an id, empty data
		ev, err = er.Next()
	}
	if err != nil {
		return sseMessage{}, err
	}
	m := sseMessage{id: ev.ID}
	if err := json.Unmarshal(ev.Data, &m.msg); err != nil {
		t.Fatalf("event %q: %v", ev.Data, err)
	}
	return m, nil
}

// TestSSEStreamResumesThroughTheGateway (AgentRFC SL, suspend and resume):
// a client's connection drops in the middle of a tool call's SSE stream;
// the call goes on upstream, and a GET with Last-Event-ID gets every event
// the client missed (the rest of the progress and the result) exactly once
// and in order, then the stream ends. An unknown event id is refused.
func TestSSEStreamResumesThroughTheGateway(t *testing.T) {
	up, _ := demoUpstream(t, false)
	c := &rawMCP{url: startGateway(t, fmt.Sprintf("version: 1\ngateway:\n  upstreams: [{name: demo, url: %s}]\n", up))}
	ctx := testCtx(t)

	resp := c.do(t, ctx, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if c.session = resp.Header.Get(wmcp.HeaderSessionID); resp.StatusCode != http.StatusOK || c.session == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, c.session)
	}
	resp = c.do(t, ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: HTTP %d", resp.StatusCode)
	}

	const steps = 6
	callCtx, drop := context.WithCancel(ctx)
	defer drop()
	resp = c.do(t, callCtx, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow_count",`+
		`"arguments":{"count":%d,"delay_ms":100},"_meta":{"progressToken":"p"}}}`, steps), nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("tools/call: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	first, err := nextMessage(t, transport.NewEventReader(resp.Body, 1<<20))
	if err != nil || first.msg.Method != "notifications/progress" || first.msg.Params.Progress != 1 || first.id == "" {
		t.Fatalf("first event: %+v %v; want progress 1 with an event id", first, err)
	}
	drop() // the connection breaks after step 1
	resp.Body.Close()
	// The other steps (and, on a quick machine, the result) happen while
	// the client is away.
	time.Sleep(700 * time.Millisecond)

	// A GET that replays nothing would hang on an open stream: bound it.
	getCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	get := c.do(t, getCtx, "", map[string]string{wmcp.HeaderLastEventID: first.id})
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(get.Body)
		t.Fatalf("resuming after %s: HTTP %d %s", first.id, get.StatusCode, b)
	}
	er := transport.NewEventReader(get.Body, 1<<20)
	var progress []float64
	results := 0
	for {
		m, err := nextMessage(t, er)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("resumed stream: %v (after progress %v)", err, progress)
		}
		switch {
		case m.msg.Method == "notifications/progress":
			progress = append(progress, m.msg.Params.Progress)
		case string(m.msg.ID) == "2" && m.msg.Result != nil && strings.Contains(string(m.msg.Result), fmt.Sprintf("counted %d", steps)):
			results++
		default:
			t.Fatalf("unexpected event on the resumed stream: %+v", m.msg)
		}
	}
	if want := []float64{2, 3, 4, 5, 6}; fmt.Sprint(progress) != fmt.Sprint(want) || results != 1 {
		t.Fatalf("resumed stream: progress %v and %d results; want progress %v and the result, each once", progress, results, want)
	}

	bad := c.do(t, ctx, "", map[string]string{wmcp.HeaderLastEventID: "feedfeedfeedfeed_1"})
	bad.Body.Close()
	if bad.StatusCode != http.StatusBadRequest {
		t.Fatalf("resuming after an unknown event: HTTP %d, want 400", bad.StatusCode)
	}
}
