package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// insteadFixture relays a session for upstream "pay" with an audit log (at
// the returned path), spans and metrics, and the given request timeout.
func insteadFixture(t *testing.T, timeout time.Duration) (*harness, *audit.Log, string, *tracetest.SpanRecorder, *Metrics) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := audit.Open(context.Background(), audit.KindSQLite, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	sr := tracetest.NewSpanRecorder()
	m := &Metrics{}
	rs := &Records{Audit: l, Metrics: m, Transport: telemetry.TransportStdio,
		Spans: telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})}
	h := newHarness(t, RelayOptions{Upstream: "pay", Principal: "alice", Recorder: rs, RequestTimeout: timeout})
	return h, l, path, sr, m
}

// storedRecords closes l and reads back every record at path, after
// checking the chain.
func storedRecords(t *testing.T, l *audit.Log, path string) []audit.Record {
	t.Helper()
	l.Close()
	b, err := audit.OpenBackend(audit.KindSQLite, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if rep, err := audit.Verify(ctx, b, audit.Anchor{}); err != nil || !rep.OK() {
		t.Fatalf("the audit chain does not verify: %+v %v", rep, err)
	}
	var recs []audit.Record
	if _, err := b.Scan(ctx, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

const insteadCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"transfer","arguments":{"amount":5}}}`

// checkInstead checks the error answer warden gave in the upstream's
// place: its code, stage and rule, and that it names its own audit record.
func checkInstead(t *testing.T, got *jsonrpc.Message, code int64, rule, auditID string) {
	t.Helper()
	if got.Kind != jsonrpc.KindResponse || got.ID.Raw() != "7" || got.Error == nil || got.Error.Code != code {
		t.Fatalf("the client got %s, want error %d for id 7", got.Raw, code)
	}
	for _, kv := range [][2]string{{"stage", "upstream"}, {"rule", rule}, {"audit_id", auditID}} {
		raw, _ := jsonrpc.Lookup(got.Error.Data, kv[0])
		if s, _ := jsonrpc.String(raw); s != kv[1] {
			t.Errorf("error data %s = %s, want %q", kv[0], raw, kv[1])
		}
	}
}

// checkInsteadRecord checks the audit record of warden's answer: it
// follows the request's, names the call it ends (tool, actor, parameters
// hash) and says why it is warden's.
func checkInsteadRecord(t *testing.T, recs []audit.Record, rule string) {
	t.Helper()
	if len(recs) != 2 {
		t.Fatalf("%d audit records, want the request's and warden's answer's: %+v", len(recs), recs)
	}
	req, ans := recs[0], recs[1]
	if req.Direction != "client" || req.Decision != audit.Allow || req.ParamsHash == "" {
		t.Fatalf("first record %+v, want the allowed request with its parameters hash", req)
	}
	if ans.Direction != "warden" || ans.Decision != audit.Error || ans.Stage != "upstream" || ans.Rule != rule ||
		ans.Method != "tools/call" || ans.RequestID != "7" || ans.Tool != "transfer" || ans.Actor != "alice" ||
		ans.ParamsHash != req.ParamsHash {
		t.Fatalf("answer record %+v, want warden's error for tools/call 7 (transfer, alice, %s), stage upstream, rule %s",
			ans, req.ParamsHash, rule)
	}
	if !strings.Contains(ans.Reason, `upstream "pay"`) || req.Reason != "" {
		t.Errorf("reasons %q and %q, want the answer's to say what happened to upstream \"pay\", the request's none", req.Reason, ans.Reason)
	}
}

// checkEndedSpan checks that n spans ended, the call's among them, in
// error, with code.
func checkEndedSpan(t *testing.T, sr *tracetest.SpanRecorder, n int, code string) {
	t.Helper()
	var sp sdktrace.ReadOnlySpan
	for _, s := range waitSpans(t, sr, n) {
		if s.Name() == "mcp.tool.invoke transfer" {
			sp = s
		}
	}
	if sp == nil {
		t.Fatalf("no span of the tools/call ended")
	}
	if sp.Status().Code != codes.Error {
		t.Errorf("span status %v, want Error", sp.Status())
	}
	var et string
	for _, kv := range sp.Attributes() {
		if kv.Key == "error.type" {
			et = kv.Value.AsString()
		}
	}
	if et != code {
		t.Errorf("span error.type %q, want %q", et, code)
	}
}

// A call the upstream never answers ends on record: warden's timeout
// answer has an audit record of its own, the client's error names it, the
// call's span ends in error, and the call's duration is measured.
func TestTimeoutAnswerIsRecorded(t *testing.T) {
	h, l, path, sr, m := insteadFixture(t, 100*time.Millisecond)
	h.send(h.client, insteadCall)
	h.recv(h.upstream) // forwarded; it never answers
	checkInstead(t, h.recv(h.client), jsonrpc.CodeTimeout, "timeout", "2")
	if c := h.recv(h.upstream); c.Method != "notifications/cancelled" {
		t.Fatalf("the upstream got %s, want notifications/cancelled", c.Raw)
	}
	checkEndedSpan(t, sr, 1, "-32034")
	if d := m.durations[[2]string{"tools/call", "pay"}]; d == nil || d.count != 1 || d.sum < 0.05 {
		t.Errorf("duration histogram %+v, want the one call, lasting about the timeout", d)
	}
	checkInsteadRecord(t, storedRecords(t, l, path), "timeout")
}

// So does a call pending when the upstream ends the session.
func TestUpstreamEndAnswerIsRecorded(t *testing.T) {
	h, l, path, sr, _ := insteadFixture(t, 0)
	h.send(h.client, insteadCall)
	h.recv(h.upstream)
	h.upstream.Close()
	checkInstead(t, h.recv(h.client), jsonrpc.CodeUpstreamUnavailable, "ended", "2")
	checkEndedSpan(t, sr, 1, "-32032")
	<-h.stopped
	checkInsteadRecord(t, storedRecords(t, l, path), "ended")
}

// A call the client cancels gets no answer, so no answer's record, but its
// span ends, in error, as cancelled; the upstream's late answer is dropped.
func TestCancelledCallSpanEnds(t *testing.T) {
	h, l, path, sr, _ := insteadFixture(t, 0)
	h.send(h.client, insteadCall)
	h.recv(h.upstream)
	if n := len(sr.Ended()); n != 0 {
		t.Fatalf("%d spans ended before the cancellation", n)
	}
	h.send(h.client, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user gave up"}}`)
	if c := h.recv(h.upstream); c.Method != "notifications/cancelled" {
		t.Fatalf("the upstream got %s, want the cancellation", c.Raw)
	}
	checkEndedSpan(t, sr, 2, "-32800")
	h.send(h.upstream, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`)
	h.nothing(h.client, "an answer to a cancelled request")
	recs := storedRecords(t, l, path)
	var dirs []string
	for _, r := range recs {
		dirs = append(dirs, r.Direction+" "+string(r.Decision)+" "+r.Rule)
	}
	if len(recs) != 3 || recs[1].Method != "notifications/cancelled" || recs[2].Rule != "unsolicited-response" ||
		!strings.Contains(recs[2].Reason, "no longer waits for") {
		t.Fatalf("records %q, want the call, its cancellation and the dropped late answer", dirs)
	}
}
