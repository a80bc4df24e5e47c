package telemetry

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// approvalEvents returns the status, approver and time of each
// mcp.tool.approval event of the span of op, in order.
func approvalEventsOf(t *testing.T, op *Operation) [][3]string {
	t.Helper()
	var out [][3]string
	for _, e := range record(t, Options{}, op).Events() {
		if e.Name != EventToolApproval {
			continue
		}
		a := attrMap(e.Attributes)
		out = append(out, [3]string{a[AttrApprovalStatus].AsString(), a[AttrApprovalApprover].AsString(), e.Time.UTC().Format(time.TimeOnly)})
	}
	return out
}

// A held call's span tells when it was held (requested) and when and by
// whom it was decided, a denial included.
func TestApprovalEventsRequestedThenDecided(t *testing.T) {
	for _, tc := range []struct{ status, approver string }{{"approved", "bob@example.com"}, {"denied", "bob@example.com"}} {
		op := &Operation{Method: "tools/call", Tool: "transfer_funds", Upstream: "pay",
			Approval: tc.status, Approver: tc.approver,
			Start: start, Held: start.Add(time.Second), Decided: start.Add(5 * time.Second), End: start.Add(6 * time.Second)}
		got := approvalEventsOf(t, op)
		want := [][3]string{{"requested", "", "09:00:01"}, {tc.status, tc.approver, "09:00:05"}}
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: approval events %v, want %v", tc.status, got, want)
		}
	}
	// Still held: requested only.
	got := approvalEventsOf(t, &Operation{Method: "tools/call", Tool: "t", Approval: "requested", Start: start})
	if len(got) != 1 || got[0][0] != "requested" {
		t.Errorf("a held call's events: %v, want requested only", got)
	}
}

// warden's own refusal carries the JSON-RPC code it answered with, as
// rpc.response.status_code and error.type.
func TestRefusalHasItsResponseStatusCode(t *testing.T) {
	for _, tc := range []struct {
		code int64
		want string
	}{{0, "-32001"}, {-32602, "-32602"}} {
		op := &Operation{Method: "tools/call", Tool: "get_env", Start: start,
			Denial: &Denial{Stage: "policy", Rule: "deny-list", Reason: "no", Code: tc.code}}
		attrs := attrMap(record(t, Options{}, op).Attributes())
		if got := attrs["rpc.response.status_code"].AsString(); got != tc.want {
			t.Errorf("code %d: rpc.response.status_code = %q, want %q", tc.code, got, tc.want)
		}
		if got := attrs["error.type"].AsString(); got != tc.want {
			t.Errorf("code %d: error.type = %q, want %q", tc.code, got, tc.want)
		}
	}
}

// Operation.Events reach the span under either convention, at their time.
func TestOperationEventsReachTheSpan(t *testing.T) {
	for _, conv := range []Convention{ConventionAITF, ConventionOTel} {
		op := &Operation{Method: "tools/call", Tool: "t", Start: start, Events: []Event{
			{Name: "aitf.security.threat_detected", Attributes: []attribute.KeyValue{attribute.String("k", "1")}},
			{Name: "aitf.security.threat_detected", Attributes: []attribute.KeyValue{attribute.String("k", "2")}, Time: start.Add(time.Second)},
		}}
		var got []string
		for _, e := range record(t, Options{Conventions: []Convention{conv}}, op).Events() {
			if e.Name == "aitf.security.threat_detected" {
				got = append(got, attrMap(e.Attributes)["k"].AsString()+"@"+e.Time.UTC().Format(time.TimeOnly))
			}
		}
		if len(got) != 2 || got[0] != "1@09:00:00" || got[1] != "2@09:00:01" {
			t.Errorf("%s: events %v, want 1@09:00:00 2@09:00:01", conv, got)
		}
	}
}
