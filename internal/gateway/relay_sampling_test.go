package gateway

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/jsonrpc"
	"github.com/agentwarden/warden/internal/telemetry"
)

// upstreamTrace is the upstream's span that asks for sampling (the tool
// handler that wants a completion), as it sends it in params._meta.
const upstreamTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// samplingRequest is what the upstream sends: a model hint, a token budget
// and its trace context, next to a _meta member of its own.
const samplingRequest = `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"Summarise the file"}}],"modelPreferences":{"hints":[{"name":"claude-3-5-sonnet"}]},"maxTokens":100,"_meta":{"progressToken":7,"traceparent":"` + upstreamTrace + `"}}}`

// newSamplingFixture relays a session for upstream "pay" with spans in
// both conventions, and the audit log when l is set.
func newSamplingFixture(t *testing.T, l *audit.Log, propagate bool) (*harness, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	rs := &Records{Audit: l, Spans: telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))}),
		Propagate: propagate, Transport: telemetry.TransportStdio}
	return newHarness(t, RelayOptions{Upstream: "pay", Principal: "alice", Recorder: rs}), sr
}

// metaTraceparent returns params._meta.traceparent of m.
func metaTraceparent(t *testing.T, m *jsonrpc.Message) string {
	t.Helper()
	raw, ok := jsonrpc.Lookup(m.Params, "_meta", "traceparent")
	if !ok {
		t.Fatalf("%s carries no _meta.traceparent", m.Raw)
	}
	s, _ := jsonrpc.String(raw)
	return s
}

// waitSpans waits until sr has ended n spans, and returns them.
func waitSpans(t *testing.T, sr *tracetest.SpanRecorder, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ended := sr.Ended()
		if len(ended) >= n || time.Now().After(deadline) {
			if len(ended) != n {
				t.Fatalf("%d spans ended, want %d: %v", len(ended), n, spanNames(ended))
			}
			return ended
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return names
}

// A sampling request from the upstream is a span of its own, the seed's
// mcp.sampling.request (SERVER): a child of the upstream's span, named to
// the client as the parent of whatever the client does for it, and ended
// by the client's answer with the model usage it reports.
func TestSamplingSpanClosedByTheClientsAnswer(t *testing.T) {
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	h, sr := newSamplingFixture(t, l, true)

	// MCP's CreateMessageResult has no usage field: a client reports it in
	// the result's _meta, or in a usage member of its own.
	answers := []string{
		`{"role":"assistant","content":{"type":"text","text":"It is short."},"model":"claude-3-5-sonnet-20241022","stopReason":"endTurn","_meta":{"usage":{"inputTokens":12,"outputTokens":34}}}`,
		`{"role":"assistant","content":{"type":"text","text":"It is short."},"model":"claude-3-5-sonnet-20241022","stopReason":"endTurn","usage":{"inputTokens":12,"outputTokens":34}}`,
	}
	for i, result := range answers {
		h.send(h.upstream, samplingRequest)
		got := h.recv(h.client)
		tp := metaTraceparent(t, got)
		if !strings.HasPrefix(tp, "00-0af7651916cd43dd8448eb211c80319c-") || tp == upstreamTrace {
			t.Fatalf("the client got traceparent %q, want warden's span in the upstream's trace", tp)
		}
		if pt, _ := jsonrpc.Lookup(got.Params, "_meta", "progressToken"); string(pt) != "7" {
			t.Errorf("_meta.progressToken became %s on the way", pt)
		}
		if m, _ := jsonrpc.Lookup(got.Params, "messages"); string(m) != `[{"role":"user","content":{"type":"text","text":"Summarise the file"}}]` {
			t.Errorf("messages changed on the way: %s", m)
		}
		if n := len(sr.Ended()); n != i {
			t.Fatalf("%d spans ended before the client answered, want %d", n, i)
		}

		answer := `{"jsonrpc":"2.0","id":"s1","result":` + result + `}`
		h.send(h.client, answer)
		if up := h.recv(h.upstream); string(up.Raw) != answer {
			t.Fatalf("the upstream got %s, want the client's answer as it was", up.Raw)
		}
		sp := waitSpans(t, sr, i+1)[i]
		if sp.Name() != "mcp.sampling.request pay" || sp.SpanKind() != trace.SpanKindServer {
			t.Fatalf("span %q (%v), want mcp.sampling.request pay (SERVER)", sp.Name(), sp.SpanKind())
		}
		if p := sp.Parent(); p.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || p.SpanID().String() != "b7ad6b7169203331" {
			t.Errorf("parent %s/%s, want the upstream's span", p.TraceID(), p.SpanID())
		}
		if id := sp.SpanContext().SpanID().String(); !strings.Contains(tp, "-"+id+"-") {
			t.Errorf("the client's parent %s is not warden's span %s", tp, id)
		}
		want := map[string]string{
			"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "34",
			"aitf.mcp.server.name": "pay", "aitf.mcp.sampling.model": "claude-3-5-sonnet", "aitf.mcp.sampling.max_tokens": "100",
			"mcp.method.name": "sampling/createMessage", "jsonrpc.request.id": "s1",
			"warden.decision": "allow", "warden.upstream": "pay",
		}
		if got := pick(spanAttrs(sp), want); !maps.Equal(got, want) {
			t.Errorf("answer %d: attributes %v, want %v", i, got, want)
		}
		if sp.Status().Code == codes.Error {
			t.Errorf("answer %d: status %v, want no error", i, sp.Status())
		}
	}

	// roots/list, without params, is a span too; with no trace context
	// from the upstream, warden's span starts the trace the client joins.
	h.send(h.upstream, `{"jsonrpc":"2.0","id":9,"method":"roots/list"}`)
	tp := metaTraceparent(t, h.recv(h.client))
	h.send(h.client, `{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}`)
	h.recv(h.upstream)
	sp := waitSpans(t, sr, 3)[2]
	if sp.Name() != "roots/list" || sp.SpanKind() != trace.SpanKindClient || sp.Parent().IsValid() {
		t.Fatalf("span %q (%v, parent %v), want roots/list (CLIENT) at the root", sp.Name(), sp.SpanKind(), sp.Parent().SpanID())
	}
	if want := "00-" + sp.SpanContext().TraceID().String() + "-" + sp.SpanContext().SpanID().String() + "-01"; tp != want {
		t.Errorf("the client got traceparent %q, want warden's span %q", tp, want)
	}

	// Each request and each answer is on record, as before.
	rep, err := l.Verify(context.Background())
	if err != nil || rep.Problem != nil {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	if rs := (&recordFixture{log: l}).records(t); len(rs) != 6 {
		t.Fatalf("%d audit records, want 6 (three requests, three answers)", len(rs))
	}
}

// A sampling request the client never answers ends with the session: its
// span ends once, with an error. Without propagation the request reaches
// the client as the upstream sent it.
func TestSamplingSpanEndsWithTheSession(t *testing.T) {
	for _, end := range []struct {
		name  string
		close func(h *harness)
	}{
		{"client leaves", func(h *harness) { h.client.Close() }},
		{"upstream exits", func(h *harness) { h.upstream.Close() }},
	} {
		t.Run(end.name, func(t *testing.T) {
			h, sr := newSamplingFixture(t, nil, false)
			h.send(h.upstream, samplingRequest)
			if got := h.recv(h.client); string(got.Raw) != samplingRequest {
				t.Fatalf("the client got %s, want the upstream's bytes", got.Raw)
			}
			end.close(h)
			select {
			case <-h.stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("the relay did not stop")
			}
			sp := waitSpans(t, sr, 1)[0]
			if sp.Name() != "mcp.sampling.request pay" || sp.Parent().SpanID().String() != "b7ad6b7169203331" {
				t.Fatalf("span %q, parent %s; want mcp.sampling.request pay under the upstream's span", sp.Name(), sp.Parent().SpanID())
			}
			st := sp.Status()
			if st.Code != codes.Error || !strings.Contains(st.Description, "session ended before the client answered") {
				t.Errorf("status %+v, want an error: the session ended", st)
			}
			attrs := spanAttrs(sp)
			if attrs["warden.decision"] != "error" || attrs["error.type"] != "-32035" {
				t.Errorf("warden.decision %q, error.type %q; want error, -32035 (session closed)", attrs["warden.decision"], attrs["error.type"])
			}
			if _, ok := attrs["gen_ai.usage.input_tokens"]; ok {
				t.Error("an unanswered request reports usage")
			}
		})
	}
}

// An upstream that asks again with the id of a question still unanswered
// ends the first question's span with an error; the answer ends the second.
func TestSamplingSpanOfAReusedID(t *testing.T) {
	h, sr := newSamplingFixture(t, nil, true)
	h.send(h.upstream, samplingRequest)
	first := metaTraceparent(t, h.recv(h.client))
	h.send(h.upstream, samplingRequest)
	second := metaTraceparent(t, h.recv(h.client))
	sp := waitSpans(t, sr, 1)[0]
	if sp.Status().Code != codes.Error || !strings.Contains(first, "-"+sp.SpanContext().SpanID().String()+"-") {
		t.Fatalf("span %s (%+v), want the first question's, ended with an error", sp.SpanContext().SpanID(), sp.Status())
	}
	h.send(h.client, `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}`)
	h.recv(h.upstream)
	sp = waitSpans(t, sr, 2)[1]
	if sp.Status().Code == codes.Error || !strings.Contains(second, "-"+sp.SpanContext().SpanID().String()+"-") {
		t.Fatalf("span %s (%+v), want the second question's, answered", sp.SpanContext().SpanID(), sp.Status())
	}
}

// No record, no answer: when the audit record of the client's answer
// cannot be written, the answer stays in warden and the sampling span ends
// denied by the audit stage.
func TestSamplingAnswerWithoutRecordIsWithheld(t *testing.T) {
	l, err := audit.Open(context.Background(), audit.KindSQLite, filepath.Join(t.TempDir(), "audit.db"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, sr := newSamplingFixture(t, l, true)
	h.send(h.upstream, samplingRequest)
	h.recv(h.client)
	l.Close()
	h.send(h.client, `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}`)
	sp := waitSpans(t, sr, 1)[0]
	attrs := spanAttrs(sp)
	if sp.Name() != "mcp.sampling.request pay" || sp.Status().Code != codes.Error || attrs["warden.decision"] != "deny" || attrs["warden.stage"] != "audit" {
		t.Fatalf("span %q %+v %v, want the sampling span denied by the audit stage", sp.Name(), sp.Status(), attrs)
	}
	h.nothing(h.upstream, "an answer whose record could not be written")
}
