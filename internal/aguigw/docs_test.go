package aguigw

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsListEveryRule keeps docs/agui.md in step with the code: every
// rule the package refuses with is documented.
func TestDocsListEveryRule(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "agui.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range []string{"gateway.go", "input.go", "events.go", "inspect.go", "stream.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, re := range []*regexp.Regexp{
			regexp.MustCompile(`Rule: "([a-z-]+)"`),
			regexp.MustCompile(`errEvent\{"([a-z-]+)"`),
		} {
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				names = append(names, m[1])
			}
		}
	}
	if len(names) < 15 {
		t.Fatalf("found only %d rule names in the code: the patterns are stale", len(names))
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "`"+n+"`") {
			t.Errorf("docs/agui.md does not document %q", n)
		}
	}
}
