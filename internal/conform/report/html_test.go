package report

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/conform/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// outline is the page's structure without its text: one line per element
// that carries an id, per table row (its cell count and links), and per
// counterexample section. Colours and wording may change; this may not
// without a reviewed golden diff.
func outline(t *testing.T, page []byte) (string, map[string]bool, []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	dec.AutoClose = nil
	dec.Entity = xml.HTMLEntity
	var b strings.Builder
	ids := map[string]bool{}
	var links []string
	var stack []string
	cells, rowLinks := 0, 0
	table := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the page is not well-formed: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			stack = append(stack, e.Name.Local)
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			if id := attr["id"]; id != "" {
				ids[id] = true
				if !strings.HasPrefix(id, "cx-") {
					fmt.Fprintf(&b, "%s#%s\n", e.Name.Local, id)
				}
				if e.Name.Local == "table" {
					table = id
				}
			}
			if e.Name.Local == "section" {
				fmt.Fprintf(&b, "section.cx\n")
			}
			if e.Name.Local == "tr" {
				cells, rowLinks = 0, 0
			}
			if e.Name.Local == "td" || e.Name.Local == "th" {
				cells++
			}
			if e.Name.Local == "a" {
				links = append(links, attr["href"])
				rowLinks++
			}
			for _, banned := range []string{"script", "link", "img", "iframe"} {
				if e.Name.Local == banned {
					t.Errorf("the page has a <%s> element: it must be self-contained, without script", banned)
				}
			}
			if src := attr["src"]; src != "" {
				t.Errorf("external asset %q", src)
			}
		case xml.EndElement:
			if e.Name.Local == "tr" && table != "" {
				fmt.Fprintf(&b, "  %s tr: %d cells, %d links\n", table, cells, rowLinks)
			}
			stack = stack[:len(stack)-1]
		}
	}
	return b.String(), ids, links
}

func TestHTMLStructure(t *testing.T) {
	res := run(t)
	impl := &replay.Report{Target: "mock-a2a", Protocol: "A2A", Profile: "1.0", Mode: "mock", Results: []replay.Result{
		{Model: "a2a", Property: "P1_identity", Outcome: replay.Reproduced, Evidence: "answered unauthenticated"},
		{Model: "a2a", Property: "WF_wire", Outcome: replay.Blocked, Evidence: "refused"},
	}}
	behind := &replay.Report{Target: "mock-mcp+warden", Protocol: "MCP", Mode: "mock", BehindWarden: true, Results: []replay.Result{
		{Model: "mcp", Property: "SL_lifecycle", Outcome: replay.Blocked, Evidence: "refused"},
		{Model: "mcp", Property: "P1_identity", Outcome: replay.Blocked, Evidence: "refused"},
	}}
	res.Against(impl, behind)
	var page bytes.Buffer
	if err := res.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	got, ids, links := outline(t, page.Bytes())
	for _, l := range links {
		switch {
		case strings.HasPrefix(l, "#"):
			if !ids[l[1:]] {
				t.Errorf("link %s points at no anchor on the page", l)
			}
		case strings.HasPrefix(l, "traces/") && strings.HasSuffix(l, ".itf.json"):
		default:
			t.Errorf("link %q leaves the page and its traces", l)
		}
	}
	cells, _ := res.Matrix()
	for _, c := range cells {
		if c.Counterexample != "" && !ids[anchor(c.Counterexample)] {
			t.Errorf("%s/%s: no counterexample section", c.Protocol, c.Principle)
		}
	}
	path := filepath.Join("testdata", "matrix.html.outline")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != string(want) {
		t.Errorf("page structure differs from %s (run go test -update and review):\n%s", path, got)
	}
	if !strings.Contains(page.String(), "answered unauthenticated") || !strings.Contains(page.String(), "IMPL-FAIL") {
		t.Errorf("the implementation column is missing from the page")
	}
}

func TestTriageReplayTable(t *testing.T) {
	cases := []struct {
		result, label string
		outcome       replay.Outcome
		want          string
	}{
		{"violated", SpecFail, replay.Reproduced, BothFail},
		{"violated", SpecFail, replay.Blocked, SpecFail},
		{"violated", SpecFail, replay.Unrealisable, ModelFail},
		{"violated", AmbiguityFail, replay.Reproduced, AmbiguityFail},
		{"violated", AmbiguityFail, replay.Blocked, AmbiguityFail},
		{"holds", Pass, replay.Reproduced, ImplFail},
		{"holds", Pass, replay.Blocked, Pass},
		{"holds", Pass, replay.Unrealisable, Pass},
		// A silent or crashed target confirms nothing: the model's label stays.
		{"violated", SpecFail, replay.Inconclusive, SpecFail},
		{"holds", Pass, replay.Inconclusive, Pass},
	}
	for _, c := range cases {
		if got := TriageReplay(c.result, c.label, c.outcome); got != c.want {
			t.Errorf("%s/%s + %s = %s, want %s", c.result, c.label, c.outcome, got, c.want)
		}
	}
	// In the matrix: A2A × P1 holds in the model and the implementation
	// serves an unauthenticated request: IMPL-FAIL. MCP × P1 depends on no
	// ambiguous clause (SPEC-FAIL), and without a replay of the plain
	// implementation it stays so; behind warden the guarded model holds, so a reproduction there is an
	// IMPL-FAIL of warden.
	res := run(t)
	res.Against(&replay.Report{Target: "x", Protocol: "A2A", Mode: "live", Results: []replay.Result{
		{Model: "a2a", Property: "P1_identity", Outcome: replay.Reproduced}}},
		&replay.Report{Target: "y+warden", Protocol: "MCP", Mode: "live", Results: []replay.Result{
			{Model: "mcp", Property: "P1_identity", Outcome: replay.Reproduced}}})
	cells, err := res.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range cells {
		switch {
		case c.Protocol == "A2A" && c.Principle == "P1":
			seen++
			if c.Triage != ImplFail || c.ModelTriage != Pass || c.Replay != "live" {
				t.Errorf("A2A × P1: %+v, want IMPL-FAIL", c)
			}
		case c.Protocol == "MCP" && c.Principle == "P1":
			seen++
			if c.Triage != SpecFail || c.Implementation != nil {
				t.Errorf("MCP × P1: %+v", c)
			}
			if c.BehindWarden == nil || c.BehindWarden.Triage != ImplFail {
				t.Errorf("MCP × P1 behind warden, reproduced although the guarded model holds: %+v, want IMPL-FAIL", c.BehindWarden)
			}
		case c.Implementation != nil || c.BehindWarden != nil:
			t.Errorf("%s × %s got a replay column it has no result for", c.Protocol, c.Principle)
		}
	}
	if seen != 2 {
		t.Errorf("saw %d of the 2 cells", seen)
	}
}
