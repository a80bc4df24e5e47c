package telemetry

import (
	"encoding/json"
	"slices"
	"testing"
)

// activityTags returns the compliance tags of op's API Activity event.
func activityTags(t *testing.T, op *Operation) map[string][]string {
	t.Helper()
	var evs eventList
	record(t, Options{OCSFSink: &evs}, op)
	if len(evs) == 0 {
		t.Fatal("no OCSF event")
	}
	raw, err := json.Marshal(evs[0])
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Unmapped struct {
			Compliance map[string][]string `json:"compliance"`
		} `json:"unmapped"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Unmapped.Compliance
}

// A call nobody was asked to approve is not tagged with the EU AI Act's
// human oversight (Art.14), though its span says approval_required=false;
// a held call is.
func TestHumanOversightTagOnlyWhereApprovalWasInvolved(t *testing.T) {
	op := &Operation{Method: "tools/call", Tool: "echo", RequestID: "1", Upstream: "demo", Start: start,
		Result: []byte(`{"content":[{"type":"text","text":"hi"}]}`)}
	if tags := activityTags(t, op); slices.Contains(tags["eu_ai_act"], "Art.14") {
		t.Errorf("a call without approval is tagged %v", tags)
	}
	op.Approval, op.Approver = "approved", "bob@example.com"
	if tags := activityTags(t, op); !slices.Contains(tags["eu_ai_act"], "Art.14") {
		t.Errorf("an approved call is tagged %v, want Art.14 among them", tags)
	}
}
