package attack

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentwarden/warden/internal/oatf"
)

// TestCheckTargets: indicators whose target warden never records in the
// traffic their filter selects are reported, at the target's line and
// column, with the indicator's path; paths that the recorded messages (or
// what the document itself writes into them) can carry are not.
func TestCheckTargets(t *testing.T) {
	path := filepath.Join("testdata", "targets-check", "unmatchable.yaml")
	doc, diags := oatf.ValidateOptions{}.Load(path)
	if doc == nil {
		t.Fatalf("load: %v", diags)
	}
	got := map[string]oatf.Diagnostic{}
	for _, d := range CheckTargets(doc) {
		got[d.Path] = d
	}
	want := map[string]struct {
		line, col int
		says      string
	}{
		"attack.indicators[0].target": {33, 15, `in text_message_content events at "delta"`},
		"attack.indicators[2].target": {45, 15, `no mcp response that warden records has a top-level "arguments"`},
		"attack.indicators[5].target": {65, 15, `"message.parts[*].text"`},
	}
	for p, w := range want {
		d, ok := got[p]
		if !ok {
			t.Errorf("%s: not reported", p)
			continue
		}
		if d.Rule != RuleUnmatchableTarget || d.Severity != oatf.SeverityWarning || d.Pos.Line != w.line || d.Pos.Col != w.col ||
			d.Pos.File != path || !strings.Contains(d.Message, w.says) {
			t.Errorf("%s: got %s, want %s:%d:%d warning %s saying %q", p, d, path, w.line, w.col, RuleUnmatchableTarget, w.says)
		}
	}
	for p, d := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s reported, but its target can match: %s", p, d)
		}
	}
}

// TestCheckTargetsLibrary: the public library's ThoughtJack context-mode
// paths are reported, and each library document's remaining indicators
// are not (a sample that the catalogue knows the MCP and A2A traffic the
// library targets).
func TestCheckTargetsLibrary(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "oatf", "scenarios")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.yaml"))
	if len(files) == 0 {
		t.Skip("no scenario library at ../shared/oatf/scenarios")
	}
	byTarget := map[string]int{}
	for _, f := range files {
		doc, diags := oatf.ValidateOptions{Library: true}.Load(f)
		if doc == nil {
			t.Fatalf("%s: %v", f, oatf.Errors(diags))
		}
		inds := items(doc.Attack().Get("indicators"))
		for _, d := range CheckTargets(doc) {
			var i int
			if _, err := fmt.Sscanf(d.Path, "attack.indicators[%d].target", &i); err != nil {
				t.Fatalf("%s: path %q", f, d.Path)
			}
			byTarget[inds[i].Get("protocol").StringOr("")+" "+inds[i].Get("target").StringOr("")]++
		}
	}
	for target := range byTarget {
		switch target {
		case "ag_ui response.content", "mcp response.content", "ag_ui arguments",
			"a2a a2a.task.message", "a2a name", "a2a arguments", "a2a response.content":
		default:
			t.Errorf("library target %q reported as unmatchable (%d times)", target, byTarget[target])
		}
	}
	if byTarget["ag_ui response.content"] == 0 || byTarget["a2a a2a.task.message"] == 0 {
		t.Errorf("the library's context-mode paths are not reported: %v", byTarget)
	}
}
