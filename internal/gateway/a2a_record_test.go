package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentwarden/warden/internal/a2agw"
	"github.com/agentwarden/warden/internal/audit"
	"github.com/agentwarden/warden/internal/gateway"
)

// An answer warden let through but changed (a ListTasks filtered to the
// caller's own tasks) keeps warden's reason in its audit record, so an
// auditor reads how many entries were withheld; a plain answer has none.
func TestA2ARecordKeepsTheReasonOfAnAnswerWardenChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(context.Background(), audit.KindJSONL, path, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := gateway.A2ARecord(l)
	const reason = "ListTasks: 4 of the agent's entries withheld (not this client's)"
	for _, e := range []a2agw.Event{
		{Principal: "alice", Upstream: "booker", Method: "ListTasks", Direction: "answer", Decision: "allow", Reason: reason, Withheld: 4},
		{Principal: "alice", Upstream: "booker", Method: "GetTask", Direction: "answer", Decision: "allow"},
	} {
		if err := rec(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	var got []audit.Record
	for line := range bytes.Lines(bytes.TrimSpace(b)) {
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("audit line %.200q: %v", line, err)
		}
		got = append(got, r)
	}
	if len(got) != 2 {
		t.Fatalf("%d records, want 2", len(got))
	}
	if got[0].Decision != audit.Allow || got[0].Reason != reason {
		t.Errorf("filtered ListTasks: decision %q, reason %q; want allow with %q", got[0].Decision, got[0].Reason, reason)
	}
	if got[1].Reason != "" {
		t.Errorf("an unchanged answer's record has reason %q, want none", got[1].Reason)
	}
}
