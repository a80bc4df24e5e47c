package ocsf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/audit"
)

// The event types without their MarshalJSON: encoding/json encodes these by
// reflection, as it encoded the events before AppendJSON.
type (
	reflectActivity APIActivity
	reflectFinding  DetectionFinding
	reflectToolExec ToolExecution
)

// reflectJSON is ev as encoding/json encodes it by reflection, HTML
// escaping off, as JSONLWriter wrote events.
func reflectJSON(t *testing.T, ev Event) []byte {
	t.Helper()
	var v any
	switch e := ev.(type) {
	case *APIActivity:
		v = (*reflectActivity)(e)
	case *DetectionFinding:
		v = (*reflectFinding)(e)
	case *ToolExecution:
		v = (*reflectToolExec)(e)
	default:
		t.Fatalf("unknown event type %T", ev)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// awkward is text that every escaping rule of encoding/json applies to:
// quotes, backslashes, control characters, HTML, invalid UTF-8, U+2028,
// DEL and non-ASCII.
const awkward = "a\"b\\c\x00\x01\b\f\n\r\t\x1f<>&\x7f\xff\xfe é 日本 \u2028\u2029 🙂"

// everyEvent returns every kind of event for every kind of call, in both
// profiles and both schema versions, with findings, attestations and
// content that needs escaping.
func everyEvent() map[string]Event {
	evs := map[string]Event{}
	calls := everyCall()
	odd := toolCall()
	odd.Method, odd.Tool, odd.Session, odd.Actor, odd.Client = awkward, awkward, awkward, awkward, awkward
	odd.RequestID = `"` + strings.ReplaceAll(awkward, `"`, `\"`) + `"`
	odd.Arguments = json.RawMessage("{ \"path\" :\n\t\"<x> & \\u2028\" , \"n\": [1, 2.50, -3e-7,true, null] }")
	odd.Result = json.RawMessage(" \"plain string result\" ")
	odd.ErrorCode, odd.ErrorMessage = -32602, awkward
	odd.Denial = &Denial{Stage: awkward, Rule: awkward, Invariant: awkward, Reason: awkward}
	odd.Approval, odd.Approver = "denied", awkward
	odd.UpstreamURL, odd.ResourceURI, odd.Prompt = "http://h/p?<&>", awkward, awkward
	odd.JTI, odd.AuditHash = awkward, awkward
	calls["awkward content"] = odd
	for _, d := range []time.Duration{0, time.Nanosecond, 999 * time.Nanosecond, 1234567 * time.Nanosecond, 90 * time.Hour, 1<<63 - 1} {
		c := toolCall()
		c.End = c.Start.Add(d)
		calls["duration "+d.String()] = c
	}
	for name, c := range calls {
		for _, b := range []Builder{
			{Product: Product{Name: "warden", VendorName: "agentwarden", Version: "0.1.0"}},
			{Profile: ProfileAITF, Product: Product{Name: awkward}, Version: SchemaVersionIntegrity},
		} {
			p := string(b.Profile) + "/" + name
			for i, e := range b.Events(c) {
				evs[p+"/event"+string(rune('0'+i))] = e
			}
			evs[p+"/finding"] = b.Finding(c, Finding{Title: awkward, Description: awkward, Rule: awkward, Severity: SeverityHigh,
				Controls: []Control{{OWASPLLM, "LLM02"}, {MITREATLAS, "AML.T0051"}, {NISTAIRMF, "GOVERN-1.2"}}, RiskScore: 80})
			evs[p+"/finding blocked"] = b.Finding(c, Finding{UID: "u", Title: "t", Rule: "r", Blocked: true})
		}
	}
	// Attested events: the record_integrity profile of an exported audit log.
	var ch Chain
	ch.UID = awkward
	for seq := uint64(1); seq <= 3; seq++ {
		r := audit.Record{Seq: seq, Time: t0, Hash: "h" + string(rune('0'+seq)), PrevHash: "h" + string(rune('0'+seq-1)),
			Method: "tools/call", Decision: audit.Allow, Direction: "client"}
		for i, e := range (Builder{Version: SchemaVersionIntegrity}).Events(AuditCall(&r)) {
			ch.Attest(e, &r)
			evs["attested/"+string(rune('0'+seq))+"/"+string(rune('0'+i))] = e
		}
	}
	// Unmapped values of kinds the builders do not make go through
	// encoding/json.
	other := Builder{}.APIActivity(toolCall())
	other.Unmapped.Extra = map[string]any{
		"x.float": 1.5, "x.map": map[string]any{"b": []int{1}, "a": "<&>"}, "x.bytes": []byte("hi"), "x.nil": nil,
		awkward: json.RawMessage(nil), "a.first": "before every field", "mcp.n": 3, "zz.last": true,
		"gen_ai.tool.name": "replaces the field", "warden.audit.seq": int64(-1),
	}
	other.AIModel = &AIModel{AIProvider: "p", Name: awkward}
	evs["unmapped of other kinds"] = other
	return evs
}

// TestAppendJSONIsEncodingJSON: the hand-written encoder writes, for every
// kind of event, the bytes encoding/json wrote by reflection.
func TestAppendJSONIsEncodingJSON(t *testing.T) {
	for name, ev := range everyEvent() {
		want := reflectJSON(t, ev)
		got, err := AppendJSON(nil, ev)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
		// What json.Marshal makes of the event (through MarshalJSON) is
		// the same JSON, HTML escaped.
		m, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var html bytes.Buffer
		json.HTMLEscape(&html, want)
		if !bytes.Equal(m, html.Bytes()) {
			t.Errorf("%s: json.Marshal:\n got %s\nwant %s", name, m, html.Bytes())
		}
	}
}

// TestAppendJSONRefusesWhatIsNotJSON: a raw value that is not JSON and a
// duration that is no number are errors, as they are for encoding/json.
func TestAppendJSONRefusesWhatIsNotJSON(t *testing.T) {
	c := toolCall()
	c.Arguments = json.RawMessage(`{"a":`)
	if _, err := AppendJSON(nil, Builder{}.APIActivity(c)); err == nil {
		t.Error("truncated arguments encoded without an error")
	}
	te := Builder{Profile: ProfileAITF}.ToolExecution(toolCall())
	te.DurationMS = -1e400 * 0
	te.DurationMS = te.DurationMS / te.DurationMS // NaN
	if _, err := AppendJSON(nil, te); err == nil {
		t.Error("a NaN duration encoded without an error")
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	c := toolCall()
	c.Denial = &Denial{Stage: "tool-policy", Rule: "deny", Reason: "listed"}
	evs := Builder{}.Events(c)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			for _, e := range evs {
				buf, _ = AppendJSON(buf[:0], e)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for b.Loop() {
			buf.Reset()
			enc.Encode((*reflectActivity)(evs[0].(*APIActivity)))
			enc.Encode((*reflectFinding)(evs[1].(*DetectionFinding)))
		}
	})
}

// TestCachedTagsAreThoseOfTheFields: the compliance tags built once per
// seed span and fields are those of the fields each call carried, not of
// another call's fields.
func TestCachedTagsAreThoseOfTheFields(t *testing.T) {
	fields := [][]string{nil, {"aitf.mcp.tool.name"}, {"aitf.mcp.tool.name", "aitf.mcp.tool.input"},
		{"aitf.mcp.tool.input"}, {"aitf.mcp.tool.approval_required"}, {"aitf.mcp.tool.name", "aitf.mcp.tool.approval_required"}}
	seen := map[string]bool{}
	for round := range 2 {
		for _, span := range []string{SpanToolInvoke, SpanResourceRead, SpanServerConnect} {
			for _, fs := range fields {
				c := &Call{SeedSpan: span, SeedFields: fs}
				want := ComplianceTags(Controls(span, fs...))
				if got := callTags(c); !reflect.DeepEqual(got, want) {
					t.Errorf("round %d, %s %v: tags %v, want %v", round, span, fs, got, want)
				}
				seen[fmt.Sprint(want)] = true
			}
		}
	}
	if len(seen) < 4 {
		t.Errorf("only %d distinct tag sets: the cases do not tell fields apart", len(seen))
	}
}
