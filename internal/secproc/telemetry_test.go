package secproc

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentwarden/warden/internal/ocsf"
)

func TestSpanAttributesAndOCSF(t *testing.T) {
	p := testProcessor(t, Config{})
	got := p.Inspect(context.Background(), call("ping", `{"host":"1.1.1.1; id"}`))
	if len(got) != 1 {
		t.Fatalf("findings = %+v", got)
	}
	f := got[0]
	attrs := map[string]any{}
	for _, kv := range f.EventAttributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	want := map[string]any{
		AttrThreatType: "command_injection", AttrOWASPCategory: "LLM05", AttrRiskLevel: "high",
		AttrBlocked: true, AttrCategory: "command_injection", AttrRule: "command_injection/command-chaining",
		AttrAction: "deny", AttrPath: "arguments.host", AttrDetectionMethod: "pattern",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %v; want %v", k, attrs[k], v)
		}
	}
	var details map[string]any
	if err := json.Unmarshal([]byte(attrs[AttrDetails].(string)), &details); err != nil || details["rule"] != f.Rule {
		t.Errorf("details = %v (%v)", attrs[AttrDetails], err)
	}
	span := map[string]any{}
	for _, kv := range SpanAttributes(got) {
		span[string(kv.Key)] = kv.Value.AsInterface()
	}
	if span[AttrThreatDetected] != true || span[AttrFindingCount] != int64(1) || span[AttrAction] != "deny" {
		t.Errorf("span attributes = %v", span)
	}
	if SpanAttributes(nil) != nil {
		t.Error("no findings must give no span attributes")
	}
	of := f.OCSFFinding("")
	if !of.Blocked || of.Severity != int(High) || len(of.Controls) != 2 || of.Controls[0] != (ocsf.Control{Framework: ocsf.OWASPLLM, ID: "LLM05"}) {
		t.Errorf("OCSF finding = %+v", of)
	}
}

// TestConcurrentInspect runs inspections that share session state from
// many goroutines; run with -race.
func TestConcurrentInspect(t *testing.T) {
	p := testProcessor(t, Config{Sessions: SessionLimits{Max: 8}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				sess := string(rune('a' + (i+j)%12))
				ev := call("read_file", `{"path":"/x/.env"}`)
				ev.Session = sess
				p.Inspect(context.Background(), ev)
				// Another goroutine may have evicted the session (max 8 of
				// 12), so only the bound is asserted below.
				ev = call("send_message", `{"text":"hi"}`)
				ev.Session = sess
				p.Inspect(context.Background(), ev)
			}
		}()
	}
	wg.Wait()
	if n := p.sessions.len(); n > 8 {
		t.Errorf("session table holds %d; max 8", n)
	}
}
