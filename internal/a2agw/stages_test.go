package a2agw

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagesInDocs: the diagram of docs/a2a.md shows a POST passing the
// strict decoder, then every stage Stages returns, in the relay's order, so
// the page (and the demo, which prints Stages) cannot fall behind when a
// stage is added or moved.
func TestStagesInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "a2a.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(doc)) {
		if strings.Contains(l, "POST JSON-RPC") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatal(`docs/a2a.md has no diagram line with "POST JSON-RPC"`)
	}
	var shown []string
	for _, f := range strings.Split(line, "►")[1:] {
		shown = append(shown, strings.TrimSpace(f))
	}
	want := append([]string{StageWire}, Stages()...)
	at := -1
	for _, s := range want {
		i := indexFrom(shown, s, at+1)
		if i < 0 {
			t.Errorf("docs/a2a.md's diagram %q does not show stage %q after the stages before it", strings.TrimSpace(line), s)
			continue
		}
		at = i
	}
}

func indexFrom(xs []string, s string, from int) int {
	for i := from; i < len(xs); i++ {
		if xs[i] == s {
			return i
		}
	}
	return -1
}
