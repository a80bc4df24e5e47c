package aguigw

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentwarden/warden/internal/deny"
)

// TestDocsListEveryRule: every rule constant the package refuses with is in
// deny.Catalog as an AG-UI rule, whose own test checks it against
// docs/agui.md.
func TestDocsListEveryRule(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "deny", "rules.go"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]deny.Rule{}
	for _, m := range regexp.MustCompile(`(Rule\w+)\s+Rule = "([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		values[m[1]] = deny.Rule(m[2])
	}
	cataloged := map[deny.Rule]bool{}
	for _, e := range deny.Catalog {
		if e.Protocol == deny.AGUI {
			cataloged[e.Rule] = true
		}
	}
	var names []string
	for _, file := range []string{"gateway.go", "input.go", "events.go", "inspect.go", "stream.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`deny\.(Rule\w+)`).FindAllStringSubmatch(string(src), -1) {
			names = append(names, m[1])
		}
	}
	if len(names) < 15 {
		t.Fatalf("found only %d rule names in the code: the patterns are stale", len(names))
	}
	for _, n := range names {
		v, ok := values[n]
		if !ok {
			t.Errorf("deny.%s: not a rule constant of internal/deny", n)
			continue
		}
		if !cataloged[v] {
			t.Errorf("deny.%s (%q) is refused with, but deny.Catalog has no AG-UI entry for it", n, v)
		}
	}
}
