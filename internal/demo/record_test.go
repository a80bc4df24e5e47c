package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/demo"
)

// TestDemoRecordShowsWhatWasWritten checks the Record part against the
// files the gateway's exporters wrote and the audit log, read here on
// their own: the spans by name, the security processor's findings among
// the OCSF events, and no telemetry dropped, which the audit log bears
// out: every MCP request the log holds has its span.
func TestDemoRecordShowsWhatWasWritten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var spans, events []byte
	var records string
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Options{Out: &out, Files: func(f demo.Files) {
		spans, events = readFile(t, f.Spans), readFile(t, f.OCSF)
		records = warden(t, "audit", "export", f.Audit)
	}})
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("demo: %v %v\n%s", err, res.Failures, out.String())
	}
	account := out.String()

	// Spans, by their name's first word (the AITF span type).
	byName := map[string]int{}
	seqs := map[float64]bool{}
	for _, line := range lines(spans) {
		var sp map[string]any
		if err := json.Unmarshal(line, &sp); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		name, _ := sp["Name"].(string)
		byName[strings.Fields(name)[0]]++
		attrs, _ := sp["Attributes"].([]any)
		for _, a := range attrs {
			kv, _ := a.(map[string]any)
			if kv["Key"] == "warden.audit.seq" {
				v, _ := kv["Value"].(map[string]any)
				seq, _ := v["Value"].(float64)
				seqs[seq] = true
			}
		}
	}
	if byName["mcp.tool.invoke"] < res.Relayed/2 {
		t.Errorf("%d mcp.tool.invoke spans for %d relayed steps: %v", byName["mcp.tool.invoke"], res.Relayed, byName)
	}
	spanLine := lineWith(account, "    spans    ")
	if want := fmt.Sprintf("    spans    %d,", len(lines(spans))); !strings.HasPrefix(spanLine, want) {
		t.Errorf("the spans line %q does not begin %q", spanLine, want)
	}
	for name, n := range byName {
		if !strings.Contains(spanLine, fmt.Sprintf(" %s %d", name, n)) {
			t.Errorf("the spans line %q lacks %s %d", spanLine, name, n)
		}
	}
	for _, want := range []string{"mcp.tool.invoke", "(tools/call)", "mcp.tool.discover", "(tools/list)"} {
		if !strings.Contains(spanLine, want) {
			t.Errorf("the spans line %q lacks %q", spanLine, want)
		}
	}

	// Nothing dropped: every MCP request of a client on record has a span
	// (a dropped operation loses its span and its OCSF events).
	requests := 0
	for _, line := range strings.Split(strings.TrimSpace(records), "\n") {
		var r struct {
			Seq       float64
			Direction string
			Upstream  string
			Method    string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		// A client's response (to warden's elicitation) is no request: one
		// that comes after the operator decided is refused as unsolicited.
		if r.Direction != "client" || r.Method == "" || strings.HasPrefix(r.Upstream, "a2a:") {
			continue
		}
		requests++
		if !seqs[r.Seq] {
			t.Errorf("audit record %v (%s) has no span: %s", r.Seq, r.Upstream, line)
		}
	}
	if requests < res.Relayed {
		t.Errorf("%d client requests on record for %d relayed steps", requests, res.Relayed)
	}
	if !strings.Contains(account, "    dropped  0 spans, 0 OCSF events (warden_telemetry_dropped_total on /metrics)") || res.Dropped != 0 {
		t.Errorf("dropped telemetry: %d; the account:\n%s", res.Dropped, account)
	}

	// The security processor's findings: the traversal refused, the
	// injection found in an answer, each as its Detection Finding says.
	found := map[string]string{}
	for _, line := range lines(events) {
		var ev struct {
			ClassUID    int    `json:"class_uid"`
			Disposition string `json:"disposition"`
			FindingInfo struct {
				Analytic struct {
					Name string `json:"name"`
				} `json:"analytic"`
			} `json:"finding_info"`
			Unmapped map[string]any `json:"unmapped"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if rule, ok := strings.CutPrefix(ev.FindingInfo.Analytic.Name, "security: "); ok && ev.ClassUID == 2004 {
			found[rule] = fmt.Sprintf("%s (audit record %v)", ev.Disposition, ev.Unmapped["warden.audit.seq"])
		}
	}
	for _, rule := range []string{"file_access/traversal", "prompt_injection/override"} {
		if found[rule] == "" {
			t.Errorf("no Detection Finding of rule %s: %v", rule, found)
			continue
		}
		// The line of the call: its rules, then what the event says of it.
		if line := lineOf(account, rule, "(audit record "); !strings.HasSuffix(line, ": "+found[rule]) {
			t.Errorf("the account shows %s as %q, its Detection Finding as %s", rule, line, found[rule])
		}
	}
	if !strings.Contains(account, "file_access/traversal: Blocked (audit record ") {
		t.Errorf("the account does not show the traversal blocked:\n%s", account)
	}
}

// lineOf is the first line of out that contains s and also, trimmed.
func lineOf(out, s, also string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) && strings.Contains(l, also) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
