package gateway

import (
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentwarden/warden/internal/approval"
	"github.com/agentwarden/warden/internal/telemetry"
)

// newHeldSpansFixture: transfer_funds needs a token, calls without one are
// held in q, and every message becomes a span in the returned recorder.
// The upstream "pay" is reached over streamable HTTP, the client over
// stdio.
func newHeldSpansFixture(t *testing.T, timeout time.Duration) (*approval.Queue, *harness, *tracetest.SpanRecorder) {
	t.Helper()
	f := newZT(t, nil)
	q := approval.New(timeout)
	f.stage.Approvals, f.stage.Signer, f.stage.AdminApproval = q, f.ring, true
	sr := tracetest.NewSpanRecorder()
	rec := telemetry.NewRecorder(telemetry.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))})
	h := newHarness(t, RelayOptions{Upstream: "pay", Pipeline: NewPipeline(f.stage),
		Recorder: &Records{Spans: rec, Transport: telemetry.TransportStdio,
			Transports: map[string]string{"pay": telemetry.TransportStreamableHTTP}}})
	return q, h, sr
}

// invokeSpan returns the one ended mcp.tool.invoke span.
func invokeSpan(t *testing.T, sr *tracetest.SpanRecorder) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.Name() == "mcp.tool.invoke transfer_funds" {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d mcp.tool.invoke spans ended, want 1", len(found))
	}
	return found[0]
}

type approvalEvent struct {
	status, approver string
	at               time.Time
}

func approvalEventsOf(s sdktrace.ReadOnlySpan) []approvalEvent {
	var out []approvalEvent
	for _, e := range s.Events() {
		if e.Name != telemetry.EventToolApproval {
			continue
		}
		var ev approvalEvent
		for _, kv := range e.Attributes {
			switch kv.Key {
			case telemetry.AttrApprovalStatus:
				ev.status = kv.Value.AsString()
			case telemetry.AttrApprovalApprover:
				ev.approver = kv.Value.AsString()
			}
		}
		ev.at = e.Time
		out = append(out, ev)
	}
	return out
}

// An approved call's span starts when the call arrived, so it covers the
// time the call was held, and tells when it was held and when and by whom
// it was approved; its server transport is the upstream's leg.
func TestHeldCallSpanCoversTheWaitAndItsApproval(t *testing.T) {
	q, h, sr := newHeldSpansFixture(t, time.Minute)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	p := waitPending(t, q)
	pending := time.Now() // the call is held by now
	const held = 300 * time.Millisecond
	time.Sleep(held)
	decided := time.Now()
	if err := q.Decide(p.ID, true, "bob@example.com", "looks right"); err != nil {
		t.Fatal(err)
	}
	h.recv(h.upstream)
	h.send(h.upstream, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"sent"}]}}`)
	h.recv(h.client)

	s := invokeSpan(t, sr)
	if s.StartTime().After(pending) {
		t.Errorf("the span starts %s after the call was already held: it does not cover the hold", s.StartTime().Sub(pending))
	}
	if d := s.EndTime().Sub(s.StartTime()); d < held {
		t.Errorf("the span lasts %s, less than the %s the call was held", d, held)
	}
	ev := approvalEventsOf(s)
	if len(ev) != 2 || ev[0].status != "requested" || ev[1].status != "approved" || ev[1].approver != "bob@example.com" {
		t.Fatalf("approval events %+v, want requested, then approved by bob@example.com", ev)
	}
	if ev[0].at.Before(s.StartTime()) || ev[0].at.After(pending) || ev[1].at.Before(decided) || ev[1].at.After(s.EndTime()) {
		t.Errorf("requested at %s and approved at %s; the call was held by %s and approved at %s, its span ran %s to %s",
			ev[0].at, ev[1].at, pending, decided, s.StartTime(), s.EndTime())
	}
	attrs := spanAttrs(s)
	if got := attrs[telemetry.AttrServerTransport]; got != telemetry.TransportStreamableHTTP {
		t.Errorf("%s = %q, want the upstream's leg %q (the client's is stdio)", telemetry.AttrServerTransport, got, telemetry.TransportStreamableHTTP)
	}
}

// A denied call's span says it was requested, then denied, and by whom;
// a call nobody decided on in time is denied by warden. Either refusal
// carries the code the client got as rpc.response.status_code.
func TestHeldCallSpanOfADenial(t *testing.T) {
	q, h, sr := newHeldSpansFixture(t, time.Minute)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	p := waitPending(t, q)
	if err := q.Decide(p.ID, false, "bob@example.com", "wrong recipient"); err != nil {
		t.Fatal(err)
	}
	code, _ := detailOf(t, h.recv(h.client))
	s := invokeSpan(t, sr)
	ev := approvalEventsOf(s)
	if len(ev) != 2 || ev[0].status != "requested" || ev[1].status != "denied" || ev[1].approver != "bob@example.com" {
		t.Fatalf("approval events %+v, want requested, then denied by bob@example.com", ev)
	}
	if got, want := spanAttrs(s)["rpc.response.status_code"], strconv.FormatInt(code, 10); got != want {
		t.Errorf("rpc.response.status_code = %q, want %q, the code the client got", got, want)
	}

	_, h, sr = newHeldSpansFixture(t, 100*time.Millisecond)
	h.send(h.client, call("1", "transfer_funds", transferArgs, ""))
	if _, d := detailOf(t, h.recv(h.client)); d.Rule != "approval-timeout" {
		t.Fatalf("want a timeout, got %+v", d)
	}
	ev = approvalEventsOf(invokeSpan(t, sr))
	if len(ev) != 2 || ev[0].status != "requested" || ev[1].status != "denied" || ev[1].approver != "warden" {
		t.Fatalf("approval events %+v, want requested, then denied by warden", ev)
	}
}
