package attack

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentwarden/warden/internal/oatf"
	"github.com/agentwarden/warden/internal/transport"
)

// fixtureCase is one case of a fixture file, in the OATF conformance suite's
// layout.
type fixtureCase struct {
	name, id        string
	input, expected *oatf.Value
}

func readFixtures(t *testing.T, name string) []fixtureCase {
	t.Helper()
	path := filepath.Join("testdata", "agui", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, diags := oatf.DecodeYAML(path, data)
	if oatf.HasErrors(diags) {
		t.Fatalf("%s: %v", path, diags)
	}
	var out []fixtureCase
	for _, c := range items(v) {
		out = append(out, fixtureCase{c.Get("name").StringOr(""), c.Get("id").StringOr(""), c.Get("input"), c.Get("expected")})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return out
}

// subset reports whether every key of want equals got's; a "messageId" or
// "id" absent from want must be a non-empty string in got.
func subset(want, got *oatf.Value, generated string) error {
	for _, m := range pairs(want) {
		if g := got.Get(m.Key); !oatf.Equal(m.Value, g) {
			return fmt.Errorf("%s = %s, want %s", m.Key, oatf.CompactJSON(g), oatf.CompactJSON(m.Value))
		}
	}
	if !want.Has(generated) && got.Get(generated).StringOr("") == "" {
		return fmt.Errorf("%s missing or empty in %s", generated, oatf.CompactJSON(got))
	}
	return nil
}

const fixtureDoc = `oatf: "0.1"
attack:
  id: FIX-001
  execution:
    mode: ag_ui_client
    state:
      run_agent_input:
        threadId: t
        runId: r
        messages:
          - {id: m1, role: user, content: "go"}
  indicators:
    - protocol: ag_ui
      target: type
      pattern: {contains: "NEVER"}
`

// replayAgent streams the fixture's events for the first RunAgentInput and
// an empty run for each follow-up, whose bodies it keeps.
type replayAgent struct {
	events    []*oatf.Value
	lines     bool
	mu        sync.Mutex
	posts     int
	followUps []*oatf.Value
}

func (ra *replayAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	v, err := DecodeJSON(body)
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	ra.mu.Lock()
	ra.posts++
	first := ra.posts == 1
	if !first {
		ra.followUps = append(ra.followUps, v)
	}
	ra.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	events := ra.events
	if !first {
		events = []*oatf.Value{oatf.FromAny(map[string]any{"type": "RUN_STARTED"}), oatf.FromAny(map[string]any{"type": "RUN_FINISHED"})}
	}
	for _, e := range events {
		ev := transport.Event{Data: []byte(oatf.CompactJSON(e))}
		if ra.lines {
			ev.Name = e.Get("type").StringOr("")
		}
		transport.WriteEvent(w, ev)
	}
}

// TestAGUIToolResponsesFixtures runs testdata/agui/tool-responses.yaml
// through the whole ag_ui_client runtime: POST, SSE, dispatch, follow-up.
func TestAGUIToolResponsesFixtures(t *testing.T) {
	for _, c := range readFixtures(t, "tool-responses.yaml") {
		t.Run(c.id, func(t *testing.T) {
			doc, diags := oatf.Parse("fixture.yaml", []byte(fixtureDoc))
			if doc == nil {
				t.Fatal(diags)
			}
			doc, diags = oatf.ValidateOptions{}.LoadDocument(doc, diags)
			if doc == nil {
				t.Fatal(diags)
			}
			state := doc.Attack().Get("execution").Get("actors").Items[0].Get("phases").Items[0].Get("state")
			if tr := c.input.Get("tool_responses"); tr != nil {
				state.Set("tool_responses", tr)
			}
			agent := &replayAgent{events: items(c.input.Get("events"))}
			srv := httptest.NewServer(agent)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := Run(ctx, doc, Options{AGUIURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			var results []*oatf.Value
			for _, e := range res.Trace {
				// The client's results are requests; an agent's own
				// TOOL_CALL_RESULT is a response event.
				if e.Method == "tool_call_result" && e.Direction == Request {
					results = append(results, e.Content)
				}
			}
			want := items(c.expected.Get("tool_results"))
			if len(results) != len(want) {
				t.Fatalf("%s: %d tool results, want %d (%v)", c.name, len(results), len(want), results)
			}
			for i := range want {
				if err := subset(want[i], results[i], "messageId"); err != nil {
					t.Errorf("%s: result %d: %v", c.name, i, err)
				}
			}
			if tm := c.expected.Get("tool_messages"); tm != nil {
				if len(agent.followUps) == 0 {
					t.Fatalf("%s: no follow-up RunAgentInput", c.name)
				}
				f := agent.followUps[0]
				if f.Get("threadId").StringOr("") != "t" || f.Get("runId").StringOr("") == "r" {
					t.Errorf("%s: follow-up threadId %v runId %v, want the same thread and a new run", c.name, f.Get("threadId"), f.Get("runId"))
				}
				var tools []*oatf.Value
				for _, m := range items(f.Get("messages")) {
					if m.Get("role").StringOr("") == "tool" {
						tools = append(tools, m)
					}
				}
				if len(tools) != len(tm.Items) {
					t.Fatalf("%s: follow-up has %d tool messages, want %d: %s", c.name, len(tools), len(tm.Items), oatf.CompactJSON(f))
				}
				for i, w := range tm.Items {
					if err := subset(w, tools[i], "id"); err != nil {
						t.Errorf("%s: tool message %d: %v", c.name, i, err)
					}
				}
			}
		})
	}
}

// TestAGUIEnrichmentFixtures runs testdata/agui/enrichment.yaml: events
// are named and enriched by the stream parser, then fed to evaluate_trigger.
func TestAGUIEnrichmentFixtures(t *testing.T) {
	for _, c := range readFixtures(t, "enrichment.yaml") {
		t.Run(c.id, func(t *testing.T) {
			trig, err := oatf.TriggerFromValue(c.input.Get("trigger"))
			if err != nil {
				t.Fatal(err)
			}
			lines := c.input.Get("event_lines") != nil && c.input.Get("event_lines").Bool
			p := newStreamParser()
			var st oatf.TriggerState
			result := "not_advanced"
			seen := map[string][]*oatf.Value{}
			for _, e := range items(c.input.Get("events")) {
				ev := transport.Event{Data: []byte(oatf.CompactJSON(e))}
				if lines {
					ev.Name = e.Get("type").StringOr("")
					ev.Data = []byte(oatf.CompactJSON(withoutType(e)))
				}
				name, content, err := p.parse(ev)
				if err != nil {
					t.Fatal(err)
				}
				seen[name] = append(seen[name], content)
				r := oatf.EvaluateTrigger(trig, &oatf.ProtocolEvent{Type: name, Content: content}, 0, st)
				st = r.State
				if r.Advanced {
					result = "advanced"
				}
			}
			if want := c.expected.Get("result").StringOr(""); result != want {
				t.Errorf("%s: %s, want %s", c.name, result, want)
			}
			if want := c.expected.Get("state").Get("event_count").Int; int64(st.EventCount) != want {
				t.Errorf("%s: event_count %d, want %d", c.name, st.EventCount, want)
			}
			for _, m := range pairs(c.expected.Get("enriched")) {
				got := seen[m.Key]
				if len(got) != len(m.Value.Items) {
					t.Fatalf("%s: %d %s events, want %d", c.name, len(got), m.Key, len(m.Value.Items))
				}
				for i, w := range m.Value.Items {
					if !oatf.Equal(w, got[i]) {
						t.Errorf("%s: %s[%d] = %s, want %s", c.name, m.Key, i, oatf.CompactJSON(got[i]), oatf.CompactJSON(w))
					}
				}
			}
		})
	}
}

// withoutType drops "type", so that only the event: line names the event.
func withoutType(v *oatf.Value) *oatf.Value {
	c := v.Clone()
	c.Delete("type")
	return c
}

// TestTraceFilterFixtures runs testdata/agui/trace-filter.yaml.
func TestTraceFilterFixtures(t *testing.T) {
	ev := oatf.NewEvaluator(oatf.EvalOptions{})
	for _, c := range readFixtures(t, "trace-filter.yaml") {
		t.Run(c.id, func(t *testing.T) {
			var trace []Entry
			for i, e := range items(c.input.Get("trace")) {
				trace = append(trace, Entry{Seq: int64(i + 1), Actor: e.Get("actor").StringOr(""),
					Protocol: e.Get("protocol").StringOr(""), Direction: e.Get("direction").StringOr(""),
					Method: e.Get("method").StringOr(""), Content: e.Get("content")})
			}
			r := evaluateOne(context.Background(), c.input.Get("indicator"), trace, ev)
			if want := c.expected.Get("result").StringOr(""); r.Result != want {
				t.Errorf("%s: %s, want %s", c.name, r.Result, want)
			}
			if want := c.expected.Get("seq"); want != nil && r.Seq != want.Int {
				t.Errorf("%s: matched seq %d, want %d", c.name, r.Seq, want.Int)
			}
		})
	}
}
